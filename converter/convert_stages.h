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
  std::vector<std::string> calib;  // calibration files / directories
  int threads = 1;
  bool verbose = false;
  // One line per call (no newline): stage summaries always, per-node and
  // per-layer detail when `verbose`. Null: silent.
  std::function<void(const std::string&)> log;
  // Where --print-ir-after* writes the IR (null: nowhere).
  std::ostream* ir_out = nullptr;
  // Counts of the long stages (calibration runs, GPTQ layers); null: none.
  support::ProgressSink progress;
};

struct StageResult {
  nlohmann::json records = nlohmann::json::array();  // producer.passes
  std::vector<std::string> passes_run;               // for the recipe
};

// Errors name the stage ("pass fuse-gelu", "quantize") and pass through
// the stage's own message.
absl::StatusOr<StageResult> RunConvertStages(ir::Model& model, const StageOptions& options);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_STAGES_H_
