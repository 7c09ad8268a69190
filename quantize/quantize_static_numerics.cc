// quantize-static numerics (formats/shard/spec.md "Integer execution
// (static W8A8)"): activation scale/zero point, int8 per-channel weights and
// int32 bias codes. Kept apart from the graph rewrite so the spec's formulas
// sit in one short file.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "quantize/numerics/rtn.h"
#include "quantize/quantize_static_internal.h"

namespace slimpack::passes::static_quant_internal {

using ir::DType;

namespace {

int32_t QMin(DType t) { return t == DType::kU8 ? 0 : -128; }
int32_t QMax(DType t) { return t == DType::kU8 ? 255 : 127; }

}  // namespace

// Activation scale/zero point for the range [lo, hi] widened to hold 0.
std::pair<float, int32_t> ChooseParams(double lo, double hi, DType t) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  const double span = hi - lo;
  // An all-zero tensor: any scale represents it; zero point 0 is exact.
  if (!(span > 0) || !std::isfinite(span)) return {1.0f, 0};
  const float s = static_cast<float>(span / (QMax(t) - QMin(t)));
  const double z = std::nearbyint(QMin(t) - lo / static_cast<double>(s));
  return {s, static_cast<int32_t>(std::clamp<double>(z, QMin(t), QMax(t)))};
}

// Int8 symmetric per-row quantization of row-major [rows, cols] through
// quant::QuantizeRtn (bits 8, one group per row).
absl::StatusOr<quant::QuantizedMatrix> QuantizeRows(const std::vector<float>& w,
                                                    int64_t rows, int64_t cols,
                                                    const std::string& name) {
  quant::Scheme scheme;
  scheme.bits = 8;
  scheme.group_size = 0;
  scheme.symmetric = true;
  quant::RtnOptions options;
  options.restricted_range = true;  // spec: s_w = max|w| / 127, codes in [-127, 127]
  auto q = quant::QuantizeRtn(w.data(), rows, cols, scheme, options);
  if (!q.ok()) {
    return absl::Status(q.status().code(),
                        "weight '" + name + "': " + std::string(q.status().message()));
  }
  return q;
}

int32_t QuantizeBias(float b, float scale) {
  const double q = std::nearbyint(static_cast<double>(b) / static_cast<double>(scale));
  if (std::isnan(q)) return 0;  // 0 / 0 when both scales underflow
  return static_cast<int32_t>(std::clamp<double>(q, std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::max()));
}

}  // namespace slimpack::passes::static_quant_internal
