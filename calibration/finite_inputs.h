// Calibration data must be finite. Observers skip NaN/Inf (attention masks
// legitimately hold -inf inside a graph), so a NaN or Inf *input* would not
// fail anything: it would spread through the graph and leave a table of
// null ranges and NaN statistics that quantizes nothing sensibly. The check
// sits where the file is read, the only place that can name the file, the
// array and the element.
#ifndef SLIMPACK_CALIBRATION_FINITE_INPUTS_H_
#define SLIMPACK_CALIBRATION_FINITE_INPUTS_H_

#include <string>

#include "absl/status/status.h"
#include "ir/tensor.h"

namespace slimpack::calibration {

// OK for a tensor whose dtype is not f32/f16/bf16, or whose elements are all
// finite. Otherwise InvalidArgument: "`source`: element [0, 2] is nan
// (calibration data must be finite; N of M elements are not)".
absl::Status CheckFiniteTensor(const ir::Tensor& tensor, const std::string& source);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_FINITE_INPUTS_H_
