#include "quantize/importance_matrix.h"

#include <optional>

#include "calibration/linear_stats.h"
#include "calibration/token_ids.h"
#include "quantize/float_walk.h"
#include "quantize/gptq_layers.h"
#include "support/status_macros.h"

namespace slimpack::quantize {

absl::StatusOr<calibration::Dataset> OpenCalibrationData(const ir::Model& runnable,
                                                         const std::vector<std::string>& paths) {
  calibration::DatasetOptions opts;
  opts.max_batch = 8;
  opts.vocab_size = calibration::KnownVocabSize(runnable);
  opts.max_positions = calibration::KnownMaxPositions(runnable);
  return calibration::Dataset::Open(paths, calibration::FeedInputs(runnable.graph), opts);
}

absl::StatusOr<ImportanceMatrix> ComputeImportanceMatrix(
    const ir::Model& model, const std::vector<std::string>& calib_paths, int64_t max_runs,
    int threads, const support::ProgressSink& progress) {
  ASSIGN_OR_RETURN(const ir::Model runnable, RunnableModel(model));
  std::vector<std::string> weights;
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(runnable.graph)) {
    weights.push_back(l.weight);
  }
  ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibrationData(runnable, calib_paths));
  FloatWalkOptions walk;
  walk.max_runs = max_runs;
  walk.threads = threads;
  walk.stage = "imatrix";
  walk.progress = progress;
  ImportanceMatrix out;
  RETURN_IF_ERROR(WalkFloatModel(model, weights, data, walk,
                                 [&out](const std::string& weight, CapturedInput& c) {
                                   out.columns[weight].assign(c.mean_sq.begin(), c.mean_sq.end());
                                   out.rows = c.rows;
                                   return absl::OkStatus();
                                 }));
  // The samples those runs held (a run batches up to 8).
  ASSIGN_OR_RETURN(out.samples, data.CountSamples(max_runs));
  return out;
}

}  // namespace slimpack::quantize
