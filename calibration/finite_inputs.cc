#include "calibration/finite_inputs.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "calibration/array_position.h"
#include "ir/float_convert.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

float ElementAsFloat(const ir::Tensor& t, uint64_t i) {
  switch (t.dtype) {
    case ir::DType::kF16: {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      return ir::F16ToF32(h);
    }
    case ir::DType::kBF16: {
      uint16_t b;
      std::memcpy(&b, t.data.data() + 2 * i, 2);
      return ir::Bf16ToF32(b);
    }
    default: {
      float f;
      std::memcpy(&f, t.data.data() + 4 * i, 4);
      return f;
    }
  }
}

std::string Describe(float v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

}  // namespace

absl::Status CheckFiniteTensor(const ir::Tensor& t, const std::string& source) {
  if (t.dtype != ir::DType::kF32 && t.dtype != ir::DType::kF16 &&
      t.dtype != ir::DType::kBF16) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  ASSIGN_OR_RETURN(uint64_t bytes, t.ExpectedBytes());
  if (bytes != t.data.size()) {
    return absl::InvalidArgumentError(source + ": array holds " + std::to_string(t.data.size()) +
                                      " bytes, expected " + std::to_string(bytes));
  }
  uint64_t bad = 0, first = 0;
  float first_value = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const float v = ElementAsFloat(t, i);
    if (std::isfinite(v)) continue;
    if (bad++ == 0) {
      first = i;
      first_value = v;
    }
  }
  if (bad == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      source + ": element " + ArrayPosition(first, t.dims) + " is " + Describe(first_value) +
      " (calibration data must be finite; " + std::to_string(bad) + " of " +
      std::to_string(n) + " elements are not)");
}

}  // namespace slimpack::calibration
