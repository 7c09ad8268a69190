// The model-changing stages of `slimpack convert` between import and write,
// in this order: structured pruning (prune/), graph passes (passes/pipeline.h),
// sparsity (prune/sparsify.h), static W8A8 or weight-only quantization
// (quantize/). Each stage adds a record to the manifest's producer.passes
// (options and statistics, never timings). Nothing here prints: lines go to
// the caller's log sink.
#ifndef SLIMPACK_CONVERTER_CONVERT_STAGES_H_
#define SLIMPACK_CONVERTER_CONVERT_STAGES_H_

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "prune/decoder/prune_structured.h"
#include "quantize/quant_rules.h"
#include "prune/sparsify.h"
#include "support/progress.h"

namespace slimpack::converter {

struct StageOptions {
  // Pass names; unset: the default pipeline for the input kind.
  std::optional<std::vector<std::string>> passes;
  bool verify_each = false;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;
  // Structured pruning (ratio 0: off); runs first, before passes and
  // quantization. Its calib_paths/threads are taken from `calib`/`threads`.
  prune::PruneOptions prune;
  // Weight sparsity (active when `sparsify` is set); runs after pruning and
  // the graph passes, before quantization. calib_paths/threads come from
  // `calib`/`threads`.
  std::optional<sparsify::SparsifyOptions> sparsify;
  quantize::QuantConfig quant;
  // --allow-requantize: a decoder checkpoint's quantized weights are decoded
  // to f32 (requantize.h) before --quant, --prune or --sparsity instead of
  // refused.
  bool allow_requantize = false;
  std::vector<std::string> calib;  // calibration files / directories
  // --imatrix: an importance-matrix file (llama.cpp's .dat layout, keyed by
  // GGUF names for HF decoders, by weight names otherwise) for --algo
  // imatrix instead of calibration runs.
  std::string imatrix;
  // --hessians: GPTQ statistics (converter/hessian_stats.h) for --algo gptq
  // instead of calibration runs.
  std::string hessians;
  // --awq-inputs: AWQ's captured inputs (converter/awq_input_stats.h) for
  // --algo awq instead of calibration runs.
  std::string awq_inputs;
  // One part of a split conversion: the tensors it writes (convert.cc
  // plans them); AWQ searches only the groups touching them. Unset: all.
  std::optional<std::set<std::string>> part_tensors;
  int threads = 1;
  bool verbose = false;
  // One line per call (no newline): stage summaries always, per-node and
  // per-layer detail when `verbose`. Null: silent.
  std::function<void(const std::string&)> log;
  // Where --print-ir-after* writes the IR (null: nowhere).
  std::ostream* ir_out = nullptr;
  // Counts of the long stages (calibration runs, GPTQ layers); null: none.
  support::ProgressSink progress;
  // RTN-family weights are quantized when the shard writer writes them
  // (quantize::QuantizeRequest::defer_rtn); the model must then go to the
  // writer with StageResult::produce, then finish_deferred. The artifact path
  // sets it; the ONNX export, which needs the bytes in the model, does not.
  bool defer_weight_quant = false;
};

struct StageResult {
  nlohmann::json records = nlohmann::json::array();  // producer.passes
  std::vector<std::string> passes_run;               // for the recipe
  // Set when weights were deferred: the bytes of a deferred tensor (for
  // shard_writer::TensorEncoder::produce), and, once all are written, the
  // check that each was and the deferred weights' -v lines with their
  // errors (`records` holds no errors, so it is final as it is).
  std::function<absl::StatusOr<ir::TensorData>(const ir::Tensor&)> produce;
  // The same bytes handed over in order (TensorEncoder::produce_streamed):
  // a weight's packed blocks as they are quantized.
  std::function<absl::Status(const ir::Tensor&,
                             const std::function<absl::Status(const uint8_t*, uint64_t)>&)>
      produce_streamed;
  // A deferred tensor made ahead of its writer (TensorEncoder::produce_ahead).
  std::function<void(const ir::Tensor&)> produce_ahead;
  // Set when sparsified weights were deferred (no quantizer after the
  // sparsity): the zeros each holds (TensorEncoder::sparse_zeros).
  std::function<std::optional<uint64_t>(const ir::Tensor&)> sparse_zeros;
  // `all_written`: false for one part of a split conversion.
  std::function<absl::Status(bool all_written)> finish_deferred;
};

// Errors name the stage ("pass fuse-gelu", "quantize") and pass through
// the stage's own message.
absl::StatusOr<StageResult> RunConvertStages(ir::Model& model, const StageOptions& options);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_STAGES_H_
