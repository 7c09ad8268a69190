// GPTQ's calibration walk, shared by the artifact quantizer
// (quantize_weights.cc) and the GGUF export (converter/gguf_gptq.h): the
// linears to quantize go in groups, one per HF decoder layer (an ONNX graph
// is one group), and each group's X^T X is captured on inputs computed with
// every earlier group already quantized, from values cached between groups
// (quantize/layer_cut.h, layer_cache.h) rather than from the model inputs.
// How a linear is quantized is the caller's; it hands back the dequantized
// weight that later groups see.
#ifndef SLIMPACK_QUANTIZE_GPTQ_LAYERS_H_
#define SLIMPACK_QUANTIZE_GPTQ_LAYERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "quantize/linear_capture.h"
#include "support/progress.h"

namespace slimpack::quantize {

// The graph calibration runs: the ONNX graph itself, or the decoder graph
// built over an HF checkpoint's tensors.
absl::StatusOr<ir::Model> RunnableModel(const ir::Model& model);

// `weights` by the HF decoder layer of their tensor (ir::Tensor::layer) in
// a checkpoint, in the order given; INT_MAX holds those of no layer and
// every weight of an ONNX graph (which runs as one group).
std::map<int, std::vector<std::string>> WeightGroupsByLayer(const ir::Model& model,
                                                            const std::vector<std::string>& weights);

struct LayerwiseGptqOptions {
  int64_t max_runs = 0;  // calibration runs per group
  int threads = 1;
  // Values cached between groups above this many bytes: later groups run
  // from the model inputs instead (same statistics, more compute).
  uint64_t cache_bytes = uint64_t{1} << 30;
  support::ProgressSink progress;  // stage `stage` per group, "calibration" per run
  std::function<void(const std::string&)> log;
  // What the walk is reported as: the progress stage, the calibration
  // passes' context ("gptq layer 3") and the log lines' prefix. The float
  // Hessians (float_hessians.h) walk the same way without quantizing.
  std::string stage = "gptq";
};

// Quantizes the linear whose weight is `weight` from its captured input
// (X^T X in input.xtx over input.rows rows) and returns the tensor later
// groups read in its place: the dequantized weight, with the original's
// name, dims and layout, as f32.
using QuantizeLinearFn =
    std::function<absl::StatusOr<ir::Tensor>(const std::string& weight, const CapturedInput& input)>;

// Runs the walk over `weights` (constant B inputs of MatMul/Gemm in
// `model`'s graph, or checkpoint tensors of an HF decoder, which runs as its
// decoder graph), calling `quantize` once per weight, groups in layer order.
// Errors: those of the capture (a weight that is not a linear's, a layer that
// saw no rows, run errors naming the sample) and of `quantize`.
absl::Status RunLayerwiseGptq(const ir::Model& model, const std::vector<std::string>& weights,
                              calibration::Dataset& data, const LayerwiseGptqOptions& options,
                              const QuantizeLinearFn& quantize);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_GPTQ_LAYERS_H_
