// See quantized_depthwise.h.
#include "runtime/kernels/quantized_depthwise.h"

#include <cstdint>
#include <vector>

#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/quantize_util.h"

namespace slimpack::runtime::kernels {

void RequantizeSums(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp,
                    ir::DType out_type, uint8_t* out) {
  const auto lo = static_cast<int32_t>(quantize_internal::QMin(out_type));
  const auto hi = static_cast<int32_t>(quantize_internal::QMax(out_type));
  if (int8dot::RequantizeVnni512(acc, n, bias, mult, lo, hi, zp, out) ||
      int8dot::RequantizeAvx2(acc, n, bias, mult, lo, hi, zp, out)) {
    return;
  }
  thread_local std::vector<float> scaled;
  if (static_cast<int64_t>(scaled.size()) < n) scaled.resize(n);
  const auto b = static_cast<uint32_t>(bias);
  for (int64_t i = 0; i < n; ++i) {
    scaled[i] = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + b)) * mult;
  }
  quantize_internal::SaturateRoundBytes(scaled.data(), n, zp, out_type, out);
}

bool QuantizedDepthwiseApplies(const Conv2DShape& s) { return DepthwiseConv2DApplies(s); }

void QuantizedDepthwiseConv2D(const Conv2DShape& s, const QuantizedDepthwiseArgs& a,
                              ThreadPool* pool) {
  QuantizedDepthwiseConv2D(s, a, pool, BestDepthwiseKernel());
}

void QuantizedDepthwiseConv2D(const Conv2DShape& s, const QuantizedDepthwiseArgs& a,
                              ThreadPool* pool, DepthwiseKernel kernel) {
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  const int64_t taps = s.kernel_h * s.kernel_w;
  const auto lo = static_cast<int32_t>(quantize_internal::QMin(a.y_type));
  const auto hi = static_cast<int32_t>(quantize_internal::QMax(a.y_type));
  ForEachDepthwiseLanesTask(s, kernel, pool, [&](int64_t n, int64_t c0, depthwise_lanes::Task& t) {
    const int64_t first = n * s.channels + c0;
    t.x = static_cast<const uint8_t*>(a.x) + first * in_plane;  // one byte per value
    t.input = a.x_type == ir::DType::kU8 ? depthwise_lanes::Input::kU8
                                         : depthwise_lanes::Input::kI8;
    t.zero_point = static_cast<float>(a.xzp);
    t.w = a.w + c0 * taps;
    // The sums are requantised as the kernel unpacks them (bytes straight
    // into y); the float planes and the two passes over them (truncation,
    // requantisation) were a fifth of a W8A8 MobileNet's depthwise time.
    depthwise_lanes::Requant rq;
    rq.bias = a.bias + c0;
    rq.mult = a.mult + c0;
    rq.zp = a.yzp;
    rq.lo = lo;
    rq.hi = hi;
    rq.y = a.y + first * out_plane + t.oh0 * s.out_w;
    rq.y_stride = out_plane;
    t.requant = &rq;
    RunDepthwiseLanes(s, t);
  });
}

}  // namespace slimpack::runtime::kernels
