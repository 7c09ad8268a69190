// The float model's linear inputs captured one weight group (HF decoder
// layer) at a time: what imatrix, AWQ and the float Hessians read of a
// calibration run. A run of the whole model widens every f16 weight to f32
// in the interpreter and packs it, so its memory grows with the model
// (~27 GB for a 7B checkpoint); here each group's run reads only that
// group's weights, from the values the run before it cached
// (quantize/layer_cut.h), so memory holds one layer's weights plus the
// cache (LayerwiseGptqOptions::cache_bytes).
//
// Unlike GPTQ's walk (gptq_layers.h), no weight changes between groups, so
// the run that captures group g also computes group g+1's cached values: one
// pass over the model, as a whole-model run. The statistics are those of
// one capture of the whole model (CaptureLinearInputs) bit for bit: the same
// nodes run on the same values, samples in dataset order.
#ifndef SLIMPACK_QUANTIZE_FLOAT_WALK_H_
#define SLIMPACK_QUANTIZE_FLOAT_WALK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "quantize/linear_capture.h"
#include "support/progress.h"

namespace slimpack::quantize {

struct FloatWalkOptions {
  int64_t max_runs = 64;  // calibration runs (a run batches up to 8 samples)
  int threads = 1;
  // Values cached between groups above this many bytes: later groups run
  // from the model inputs instead (same statistics, more compute).
  uint64_t cache_bytes = uint64_t{1} << 30;
  // What to capture: `hessian` and `keep_rows` (the walk sets the rest).
  CaptureRequest capture;
  // Progress: stage `stage` per group, "calibration" per run with context
  // "<stage> layer L"; log lines are prefixed "quantize: <stage>: ".
  std::string stage;
  support::ProgressSink progress;
  std::function<void(const std::string&)> log;
};

// Runs `model` (an ONNX graph, which is one group, or an HF decoder
// checkpoint, which runs as its decoder graph) on the first
// options.max_runs runs of `data` and calls `sink` once per weight of
// `weights` with its captured input, groups in layer order (WeightGroupsByLayer).
// Errors: CaptureLinearInputs' (a weight that is not a linear's, a layer
// that saw no rows, run errors naming the sample), the cut's, and `sink`'s.
absl::Status WalkFloatModel(
    const ir::Model& model, const std::vector<std::string>& weights, calibration::Dataset& data,
    const FloatWalkOptions& options,
    const std::function<absl::Status(const std::string& weight, CapturedInput& input)>& sink);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_FLOAT_WALK_H_
