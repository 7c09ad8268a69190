// The importance matrix of a model (llama.cpp's "imatrix"): for every linear
// layer, the mean of x^2 over the calibration tokens for each input column.
// ggml's quantizers, and ours with --algo imatrix, weight each weight's
// rounding error by it. Computed by running the model in the interpreter,
// samples in dataset order, so the values are bit-identical for any thread
// count and CPU.
#ifndef SLIMPACK_QUANTIZE_IMPORTANCE_MATRIX_H_
#define SLIMPACK_QUANTIZE_IMPORTANCE_MATRIX_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "support/progress.h"

namespace slimpack::quantize {

// Opens `paths` as calibration data for `runnable` (token windows as .npy
// for a decoder, tensors as .npz/.npy for other graphs), in batches of up to
// 8 samples, checking token ids and positions against the model's sizes.
absl::StatusOr<calibration::Dataset> OpenCalibrationData(const ir::Model& runnable,
                                                         const std::vector<std::string>& paths);

struct ImportanceMatrix {
  // Weight name (as the model names it) -> mean x^2 per input column.
  std::map<std::string, std::vector<float>> columns;
  int64_t samples = 0;  // calibration samples (token windows) that fed it
  uint64_t rows = 0;    // activation rows (tokens) each layer saw
};

// Runs `model` (an ONNX graph, or an HF decoder checkpoint, which runs as
// its decoder graph) on up to `max_runs` runs of `calib_paths` and returns
// the importance of every linear layer's input columns. Errors name the
// calibration file or sample.
absl::StatusOr<ImportanceMatrix> ComputeImportanceMatrix(
    const ir::Model& model, const std::vector<std::string>& calib_paths, int64_t max_runs,
    int threads, const support::ProgressSink& progress = nullptr);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_IMPORTANCE_MATRIX_H_
