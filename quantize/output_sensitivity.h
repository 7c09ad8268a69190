// What the size planner (quantize/size_planner.h) measures a candidate
// scheme's harm by when calibration data is given: the mean squared
// difference of the model's float outputs from FP32's, on the first
// calibration runs, with one weight replaced by its quantized values.
#ifndef SLIMPACK_QUANTIZE_OUTPUT_SENSITIVITY_H_
#define SLIMPACK_QUANTIZE_OUTPUT_SENSITIVITY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "quantize/quant_rules.h"
#include "runtime/interpreter.h"

namespace slimpack::quantize {

class OutputSensitivity {
 public:
  // Runs `runnable` (the graph calibration runs) on the first kRuns samples
  // of `data` (rewound first) and keeps their float outputs as the
  // baseline. The dataset's and the interpreter's errors.
  static absl::StatusOr<OutputSensitivity> Measure(ir::Model runnable,
                                                   calibration::Dataset& data, int threads);

  // Mean squared difference of the float outputs from the baseline with
  // only `use`'s tensor replaced by `values` (its f32 values, in the
  // tensor's shape). NotFound when the graph has no such tensor.
  absl::StatusOr<double> OutputError(const WeightUse& use, const std::vector<float>& values) const;

  static constexpr int kRuns = 2;

 private:
  OutputSensitivity(ir::Model model, int threads) : model_(std::move(model)), threads_(threads) {}
  absl::StatusOr<runtime::Interpreter> MakeInterpreter(const ir::Model& m) const;

  ir::Model model_;
  int threads_;
  std::vector<std::map<std::string, runtime::RtTensor>> inputs_;
  std::vector<std::vector<float>> reference_;
};

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_OUTPUT_SENSITIVITY_H_
