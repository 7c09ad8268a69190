// X^T X of every linear layer's input in the float model, the statistics
// `slimpack calibrate --hessians` stores for GPTQ (quantize/hessian_source.h).
// The model runs group by group as GPTQ's walk does (quantize/gptq_layers.h:
// one HF decoder layer at a time, from values cached between layers) with no
// weight replaced, so one group's Hessians are held at a time and each is
// handed to the caller as soon as it is complete.
#ifndef SLIMPACK_QUANTIZE_FLOAT_HESSIANS_H_
#define SLIMPACK_QUANTIZE_FLOAT_HESSIANS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "quantize/linear_capture.h"
#include "support/progress.h"

namespace slimpack::quantize {

struct LinearInput {
  std::string weight;       // the weight's name in the model
  int64_t in_features = 0;  // K
};

// The linear layers of `model` (an ONNX graph, or an HF decoder checkpoint,
// which runs as its decoder graph), in node order.
absl::StatusOr<std::vector<LinearInput>> LinearInputs(const ir::Model& model);

// The calibration samples the first `max_runs` runs of
// `calib_paths` hold for `model`, without running it. The dataset's errors.
absl::StatusOr<int64_t> CountCalibrationSamples(const ir::Model& model,
                                                const std::vector<std::string>& calib_paths,
                                                int64_t max_runs);

struct FloatHessianOptions {
  int64_t max_runs = 64;  // calibration runs (a run batches up to 8 samples)
  int threads = 1;
  uint64_t cache_bytes = uint64_t{1} << 30;  // as LayerwiseGptqOptions'
  support::ProgressSink progress;
  std::function<void(const std::string&)> log;
};

// Runs `model` on `calib_paths` and calls `sink` once per linear layer of
// LinearInputs with its captured input (xtx: the sum over input.rows rows),
// groups in layer order, and returns the calibration samples they saw.
// Errors: the dataset's and the interpreter's (naming
// the file or sample), a layer that saw no rows, and `sink`'s.
absl::StatusOr<int64_t> ComputeFloatHessians(
    const ir::Model& model, const std::vector<std::string>& calib_paths,
    const FloatHessianOptions& options,
    const std::function<absl::Status(const std::string& weight, const CapturedInput& input)>& sink);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_FLOAT_HESSIANS_H_
