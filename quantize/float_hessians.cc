#include "quantize/float_hessians.h"

#include "calibration/linear_stats.h"
#include "quantize/float_walk.h"
#include "quantize/gptq_layers.h"
#include "quantize/importance_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

std::vector<LinearInput> LinearsOf(const ir::Model& runnable) {
  std::vector<LinearInput> out;
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(runnable.graph)) {
    out.push_back({l.weight, l.in_features});
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<LinearInput>> LinearInputs(const ir::Model& model) {
  ASSIGN_OR_RETURN(const ir::Model runnable, RunnableModel(model));
  return LinearsOf(runnable);
}

absl::StatusOr<int64_t> CountCalibrationSamples(const ir::Model& model,
                                                const std::vector<std::string>& calib_paths,
                                                int64_t max_runs) {
  ASSIGN_OR_RETURN(const ir::Model runnable, RunnableModel(model));
  ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibrationData(runnable, calib_paths));
  return data.CountSamples(max_runs);
}

absl::StatusOr<int64_t> ComputeFloatHessians(
    const ir::Model& model, const std::vector<std::string>& calib_paths,
    const FloatHessianOptions& options,
    const std::function<absl::Status(const std::string& weight, const CapturedInput& input)>& sink) {
  ASSIGN_OR_RETURN(const ir::Model runnable, RunnableModel(model));
  std::vector<std::string> weights;
  for (const LinearInput& l : LinearsOf(runnable)) weights.push_back(l.weight);
  ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibrationData(runnable, calib_paths));
  FloatWalkOptions walk;
  walk.max_runs = options.max_runs;
  walk.threads = options.threads;
  walk.cache_bytes = options.cache_bytes;
  walk.capture.hessian = true;
  walk.stage = "hessians";
  walk.progress = options.progress;
  walk.log = options.log;
  RETURN_IF_ERROR(WalkFloatModel(model, weights, data, walk, sink));
  // The samples those runs held (a run batches up to 8).
  return data.CountSamples(options.max_runs);
}

}  // namespace slimpack::quantize
