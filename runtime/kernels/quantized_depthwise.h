// QLinearConv's depthwise layers (one input and one output channel per
// group) in one pass per band of rows of a block of channels: its bytes
// read as centred floats into the float depthwise kernel's buffer
// (conv_depthwise.h, channels in the vector lanes), and the sums
// requantised to bytes as the kernel transposes them back into planes
// (depthwise_lanes::Requant; no float plane is written). The float sums are exact
// integers (every partial sum below 2^24, checked by the caller), so they
// equal the integer definition's sums. Before stop 55 the layer went
// through three tensor-sized float passes (centring, convolution,
// truncation), about two fifths of a W8A8 MobileNet's time.
#ifndef SLIMPACK_RUNTIME_KERNELS_QUANTIZED_DEPTHWISE_H_
#define SLIMPACK_RUNTIME_KERNELS_QUANTIZED_DEPTHWISE_H_

#include <cstdint>

#include "ir/dtype.h"
#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_direct.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// QLinearConv's requantisation of n int32 sums of one output channel:
// out[i] = clamp(rint(f32(acc[i] + bias) * mult) + zp) as out_type (u8 or
// i8) bytes, the sum wrapping mod 2^32, by the vector kernels where the CPU
// has them, else by quantize_internal::SaturateRoundBytes.
void RequantizeSums(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zp,
                    ir::DType out_type, uint8_t* out);

struct QuantizedDepthwiseArgs {
  const void* x;  // [batch, channels, height, width] bytes of x_type
  ir::DType x_type;  // kU8 or kI8
  int32_t xzp;
  const float* w;        // [channels, kernel_h * kernel_w]: W minus its zero points
  const int32_t* bias;   // [channels]
  const float* mult;     // [channels]: x_scale * w_scale[c] / y_scale
  int32_t yzp;
  ir::DType y_type;  // kU8 or kI8
  uint8_t* y;        // [batch, channels, out_h, out_w]
};

// True when QuantizedDepthwiseConv2D runs `s` here (DepthwiseConv2DApplies).
bool QuantizedDepthwiseApplies(const Conv2DShape& s);

// y = requantised depthwise convolution, the same bytes for any thread
// count. The caller has checked that for every channel sum |w| times the
// largest |x - xzp| is below 2^24 (quantize_util.h, kFloatExactBound).
void QuantizedDepthwiseConv2D(const Conv2DShape& s, const QuantizedDepthwiseArgs& a,
                              ThreadPool* pool);
// With the given lane width, which the CPU must allow (tests run both).
void QuantizedDepthwiseConv2D(const Conv2DShape& s, const QuantizedDepthwiseArgs& a,
                              ThreadPool* pool, DepthwiseKernel kernel);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_QUANTIZED_DEPTHWISE_H_
