// Runs a model over a dataset on the reference interpreter and folds every
// float activation into its observer (and linear-layer inputs into their
// accumulators), producing a CalibrationTable; and checks a table's
// coverage on other data.
//
// Determinism: samples are run one after another and the observer callback
// runs on the calling thread after each node, so statistics accumulate in
// dataset order; the interpreter is bitwise identical at any thread count,
// hence so is the table.
#ifndef SLIMPACK_CALIBRATION_CALIBRATOR_H_
#define SLIMPACK_CALIBRATION_CALIBRATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "runtime/kernel_registry.h"
#include "calibration/calibration_table.h"
#include "ir/graph.h"

namespace slimpack::calibration {

struct CalibrateOptions {
  ObserverOptions observer;
  bool collect_xtx = false;  // K*K doubles per linear layer
  int num_threads = 1;
  // Kernels to run with; null means BuiltinKernels() (fused and packed
  // slimpack.* ops included).
  std::shared_ptr<const runtime::KernelRegistry> kernels;
  // Optional progress callback after each run (runs done so far).
  std::function<void(int64_t)> progress;
  // Optional: told how the graph is computed when that is not as declared
  // (an f16 graph in f32: runtime::F16Widening::Summary()).
  std::function<void(const std::string&)> note;
};

// Calibrates `model` on every sample of `data` (read from its current
// position to the end). The table's model digest is left for the caller
// (ModelDigest reads files). InvalidArgument naming the sample source when
// a run fails; InvalidArgument for an empty dataset.
absl::StatusOr<CalibrationTable> Calibrate(const ir::Model& model, Dataset& data,
                                           const CalibrateOptions& options);

struct CoverageIssue {
  std::string tensor;
  double calibrated_lo = 0, calibrated_hi = 0;
  double observed_min = 0, observed_max = 0;
  uint64_t outside = 0, elements = 0;
  double fraction_outside = 0;
};

// Runs `model` on `data` and reports, sorted by tensor name, every tensor of
// `table` with finite values outside its calibrated range. Tensors the
// table does not hold are ignored.
absl::StatusOr<std::vector<CoverageIssue>> CheckCoverage(
    const ir::Model& model, const CalibrationTable& table, Dataset& data,
    int num_threads = 1);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_CALIBRATOR_H_
