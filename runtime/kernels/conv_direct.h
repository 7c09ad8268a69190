// Direct (implicit-GEMM) 2-D convolution for AVX-512 and AVX2 + FMA machines: no im2col and
// no weight packing; each output is bias + a fixed-order sum over (c, kh, kw).
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_DIRECT_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_DIRECT_H_

#include <cstdint>

#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// X [batch, channels, height, width] (*) W [out_channels, channels / group,
// kernel_h, kernel_w] -> Y [batch, out_channels, out_h, out_w]. The caller
// has validated the shapes (groups divide both channel counts, pads >= 0,
// out_h/out_w follow from the geometry and are positive).
struct Conv2DShape {
  int64_t batch = 1, channels = 1, height = 1, width = 1;
  int64_t out_channels = 1, group = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t out_h = 1, out_w = 1;
};

// An activation a convolution kernel applies to each output as it stores
// it (FusedConv's, saving a pass over the output), with the bits of that
// activation's own kernel: Relu (x > 0 or NaN ? x : +0) and HardSwish
// (x * min(1, max(0, x / 6 + 1/2)), a NaN's product NaN; the division, the
// addition and the multiplication each rounded once).
enum class ConvActivation { kNone, kRelu, kHardSwish };

// True when DirectConv2D can run `s` here: the CPU has AVX-512F or AVX2 + FMA, and every
// offset into the scratch buffer fits 32 bits.
bool DirectConv2DSupported(const Conv2DShape& s);

// Floats of scratch DirectConv2D needs for `s` (one image's input,
// re-laid-out with its padding and stride phases).
int64_t DirectConv2DScratchFloats(const Conv2DShape& s);

// y = act(conv(x, w) + bias) (bias may be null). Each output is one fused
// multiply-add per (c, kh, kw) in that order, then + bias, whatever `pool`'s
// thread count: results are bitwise identical for any number of threads. `scratch`
// holds DirectConv2DScratchFloats(s) floats. Requires DirectConv2DSupported.
void DirectConv2D(const Conv2DShape& s, const float* x, const float* w,
                  const float* bias, float* y, float* scratch, ThreadPool* pool,
                  ConvActivation act = ConvActivation::kNone);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_DIRECT_H_
