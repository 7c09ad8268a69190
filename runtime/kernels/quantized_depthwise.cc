// See quantized_depthwise.h.
#include "runtime/kernels/quantized_depthwise.h"

#include <cstdint>
#include <vector>

#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_layout.h"
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
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  const int64_t total = s.batch * s.channels * in_plane;
  const conv_layout::PackIsa isa = conv_layout::BestPackIsa();
  DepthwiseConv2DChannels(
      s, a.w,
      [&](int64_t nc, const conv_layout::Layout& l, float* buf, bool zero_padding) {
        if (a.x_type == ir::DType::kU8) {
          conv_layout::PackChannel(s, l, static_cast<const uint8_t*>(a.x) + nc * in_plane,
                                   total - nc * in_plane, a.xzp, buf, zero_padding, isa);
        } else {
          conv_layout::PackChannel(s, l, static_cast<const int8_t*>(a.x) + nc * in_plane,
                                   total - nc * in_plane, a.xzp, buf, zero_padding, isa);
        }
      },
      [&](int64_t nc, const float* sums) {
        thread_local std::vector<int32_t> ints;
        if (static_cast<int64_t>(ints.size()) < out_plane) ints.resize(out_plane);
        quantize_internal::ExactSumsToInts(sums, out_plane, ints.data());
        const int64_t c = nc % s.channels;
        RequantizeSums(ints.data(), out_plane, a.bias[c], a.mult[c], a.yzp, a.y_type,
                       a.y + nc * out_plane);
      },
      pool);
}

}  // namespace slimpack::runtime::kernels
