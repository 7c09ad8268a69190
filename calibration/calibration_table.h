// The calibration table `slimpack calibrate` writes and later commands read
// with --calib: per-tensor ranges and linear-layer input statistics, with
// the method, the data digests and the model digest that produced them.
//
// JSON (version 1), canonical: keys sorted, 2-space indent, numbers in
// shortest round-trip form, no paths beyond base names, no timestamps:
//  {"format": "slimpack-calibration", "version": 1,
//   "model": {"name", "sha256"},
//   "method": {"name", "per_channel", "channel_axis", "num_bins",
//              "percentile", "entropy_levels", "mse_levels",
//              "averaging_constant"},
//   "dataset": {"kind": "files"|"random", "seed", "samples", "runs",
//               "files": [{"name", "bytes", "sha256"}]},
//   "tensors": {NAME: {"producer", "op_type", "dtype", "shape", "runs",
//               "elements", "nonfinite", "min", "max", "range": [lo, hi],
//               "histogram": {"bins", "half_range", "p50_abs", "p99_abs",
//                             "p999_abs", "p9999_abs", "near_zero_fraction"},
//               "channel_axis"?, "channel_ranges"?: [[lo, hi], ...]}},
//   "linears": {NODE: {"op_type", "input", "weight", "in_features", "rows",
//               "mean_abs": [...], "mean_sq": [...], "xtx"?: [K*K]}}}
#ifndef SLIMPACK_CALIBRATION_CALIBRATION_TABLE_H_
#define SLIMPACK_CALIBRATION_CALIBRATION_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "calibration/linear_stats.h"
#include "calibration/tensor_observer.h"
#include "ir/graph.h"

namespace slimpack::calibration {

inline constexpr int kCalibrationTableVersion = 1;

struct TensorCalibration {
  std::string producer;  // node name, or "" for a graph input
  std::string op_type;   // "" for a graph input
  ObservedRange range;
};

struct LinearCalibration {
  LinearLayer layer;
  uint64_t rows = 0;
  std::vector<double> mean_abs, mean_sq;
  std::vector<double> xtx;  // K*K row-major, empty unless collected
};

struct CalibrationTable {
  std::string model_name;    // base name of the model path
  std::string model_sha256;  // see ModelDigest
  ObserverOptions method;
  bool random_data = false;
  uint64_t seed = 0;
  int64_t samples = 0;  // rows fed, summed over runs
  int64_t runs = 0;
  std::vector<DataFileDigest> files;
  std::map<std::string, TensorCalibration> tensors;
  std::map<std::string, LinearCalibration> linears;
};

// Digest of the model's bytes: the SHA-256 of its file when it was read
// from one file, else the SHA-256 of "<sha256> <base name>\n" lines over
// Model::input_files in order.
absl::StatusOr<std::string> ModelDigest(const ir::Model& model);

// Canonical JSON text (ends with a newline).
std::string SerializeCalibrationTable(const CalibrationTable& table);
// Strict parse; `source` prefixes errors. InvalidArgument for malformed
// JSON, a missing or mistyped field (named by its JSON path) or a bad
// value; Unimplemented for another format or version (lists supported).
absl::StatusOr<CalibrationTable> ParseCalibrationTable(std::string_view json,
                                                       const std::string& source);
// Writes atomically (temp file, fsync, rename, fsync dir).
absl::Status WriteCalibrationTable(const CalibrationTable& table,
                                   const std::string& path);
// Reads and parses `path` (NotFound if missing). When `expected_model_sha256`
// is non-empty, FailedPrecondition if the table was made for another model.
absl::StatusOr<CalibrationTable> LoadCalibrationTable(
    const std::string& path, const std::string& expected_model_sha256 = "");

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_CALIBRATION_TABLE_H_
