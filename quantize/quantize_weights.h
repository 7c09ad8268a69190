// Weight quantization of a whole model: plans every eligible weight with
// the recipe's rules (quant_rules.h), gathers the calibration statistics
// the chosen algorithms need by running the model on the interpreter, and
// replaces each weight by its quantized tensor plus scale / zero-point
// tensors (ir::QuantLayout), which the shard writer stores as the spec's
// int8_per_channel / int4_groupwise layouts.
//
// Algorithms (quantize/numerics/ holds the numerics):
//  - rtn, rtn-mse: round to nearest, optionally with a per-group clip
//    search; no data.
//  - imatrix: the clip search weighted by the per-input-column mean x^2 of
//    the layer's calibration inputs (llama.cpp's importance matrix).
//  - gptq: per linear, H = 2 X^T X / n from calibration. Sequential: for
//    HF decoders, layer L's inputs are captured with layers < L already
//    quantized (their weights replaced by the dequantized values); for
//    ONNX graphs one capture serves every layer.
//  - awq (HF decoders): per decoder layer, activation-aware scales for
//    {q,k,v} (folded into input_layernorm), {gate,up} (folded into
//    post_attention_layernorm), down (folded into up_proj's rows) and o
//    (folded into v_proj's rows, only without GQA) — exact rewrites — then
//    RTN of the scaled weights.
// Embedding tables have no input statistics: they use rtn-mse.
//
// Memory: the quantized model holds the packed tensors (about bits/32 of
// the f32 size); the f32 source stays mapped. GPTQ holds one K*K Hessian
// per linear of the layer being quantized.
#ifndef SLIMPACK_QUANTIZE_QUANTIZE_WEIGHTS_H_
#define SLIMPACK_QUANTIZE_QUANTIZE_WEIGHTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/progress.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "quantize/awq_fold.h"
#include "quantize/hessian_source.h"
#include "quantize/quant_rules.h"
#include "quantize/size_planner.h"

namespace slimpack::quantize {

struct QuantizeRequest {
  QuantConfig config;
  // Calibration files/directories (calibration/dataset.h rules).
  std::vector<std::string> calib_paths;
  int threads = 1;
  // Verbose progress lines (one per tensor and per calibration capture).
  std::function<void(const std::string&)> log;
  // Long stages: calibration runs, GPTQ layer groups (support/progress.h).
  support::ProgressSink progress;
  // GPTQ keeps the values between decoder layers (the residual stream) of
  // every calibration run so each layer runs from them; past this many
  // bytes it drops them and runs each later layer from the model inputs
  // (same numbers, more time). 128 windows x 2048 tokens x 4096 features
  // in f32 is 4 GiB.
  uint64_t gptq_cache_bytes = uint64_t{1} << 30;
  // Leave weights quantized by RTN, rtn-mse, imatrix or AWQ's final RTN to
  // be quantized when the shard writer writes them (quantize/
  // deferred_weights.h): the model gets TensorData::Deferred placeholders,
  // QuantizeResult::deferred makes their bytes, FinishDeferred fills their
  // records' errors afterwards. Only for a model that goes straight to the
  // writer with the producer set (converter::Convert). GPTQ from `hessians`
  // defers too; the GPTQ walk's results and float casts are stored as usual.
  bool defer_rtn = false;
  // Precomputed importance (mean x^2 per input column) by weight name, e.g.
  // from an imatrix file (`convert --imatrix`): --algo imatrix uses it
  // instead of calibration runs, so no weight is read before it is
  // quantized. A weight imatrix needs without an entry, or an entry of
  // another length than the weight's input columns, is refused naming
  // `importance_file`.
  std::map<std::string, std::vector<float>> importance;
  std::string importance_file;
  // Precomputed Hessians (`convert --hessians`): --algo gptq quantizes each
  // weight from its entry, on its own (deferred like RTN with defer_rtn),
  // instead of the layer-by-layer calibration walk. A weight GPTQ quantizes
  // without an entry, or with an entry of another size, is refused naming
  // the file.
  std::shared_ptr<const HessianSource> hessians;
  // Precomputed AWQ inputs (`convert --awq-inputs`, converter/
  // awq_input_stats.h): --algo awq searches and folds its scales from them
  // instead of calibration runs, with the same result. A group whose input
  // has no entry, or one of another width, is refused naming `awq_inputs_file`.
  std::shared_ptr<const AwqInputs> awq_inputs;
  std::string awq_inputs_file;
  // One part of a split conversion: the tensors it writes. AWQ searches only
  // the groups touching one of them (AwqFoldOptions::written). Unset: all.
  std::optional<std::set<std::string>> part_tensors;
};

// What happened to one tensor; recorded in the manifest and printed by -v.
struct TensorRecord {
  std::string tensor;
  std::string op;
  std::string scheme;     // WeightScheme::Name()
  std::string algorithm;  // "" for keep / float casts
  int rule = -1;          // deciding recipe rule, -1: the default
  uint64_t bytes_before = 0, bytes_after = 0;  // incl. scales / zero points
  double relative_l2 = 0;  // of the stored weight vs the f32 weight it stores
  double sqnr_db = 0;
  std::string note;
  // The -v line: "quantize: NAME [op] scheme algorithm: A -> B bytes, rel L2 E".
  std::string Line() const;
};

struct QuantizeResult {
  std::vector<TensorRecord> tensors;
  uint64_t bytes_before = 0, bytes_after = 0;  // over the planned tensors
  int64_t calib_runs = 0;
  std::optional<SizePlan> plan;  // when a size target was set
  // Set by QuantizeRequest::defer_rtn when any weight was deferred; the
  // records of deferred weights have relative_l2 and sqnr_db 0 until
  // FinishDeferred, and after it unless the request had a log (the error of
  // a weight quantized while writing is measured only to be printed).
  std::shared_ptr<class DeferredWeights> deferred;
  // {"tensors": [...], "bytes_before", "bytes_after"}: deterministic.
  nlohmann::json ToJson() const;
};

// Quantizes `model` in place. Errors: FailedPrecondition when an algorithm
// needs calibration and `calib_paths` is empty (naming the algorithm and the
// flag); errors of the dataset, the interpreter and the quantizers, named
// with the tensor. On error `model` may be partly quantized: callers write
// nothing in that case.
absl::StatusOr<QuantizeResult> QuantizeWeights(ir::Model& model,
                                               const QuantizeRequest& request);

// After the writer is done: fills the deferred weights' errors into
// `result` and sends their per-tensor lines to `log` (if set), in plan
// order, as QuantizeWeights does for the others. Internal if a deferred
// weight was never produced, unless `all_written` is false (one part of a
// split conversion writes some shards only): those are skipped.
absl::Status FinishDeferred(QuantizeResult& result,
                            const std::function<void(const std::string&)>& log,
                            bool all_written = true);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_QUANTIZE_WEIGHTS_H_
