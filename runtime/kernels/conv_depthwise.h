// Depthwise 2-D convolution (one input and one output channel per group)
// for AVX2 + FMA machines, in the direct kernels' summation order
// (conv_direct.h): per output, one fused multiply-add per (kernel row,
// kernel column) from +0, then + bias. Each channel is padded and split
// into stride phases on its own (conv_layout.h) while it is in cache, and
// a block of output rows x 8-float column vectors stays in registers over
// all its terms, so a 7-wide output row wastes one lane in eight instead
// of the implicit-GEMM tile's 32-position runs over padded columns.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_

#include <cstdint>
#include <functional>

#include "runtime/kernels/conv_direct.h"
#include "runtime/kernels/conv_layout.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// True when `s` is depthwise (group == channels == out_channels) and this
// CPU has AVX2 + FMA. The caller has checked DirectConv2DSupported(s).
bool DepthwiseConv2DApplies(const Conv2DShape& s);

// y = conv(x, w) + bias for a shape DepthwiseConv2DApplies accepts; the same
// bits as DirectConv2D's tiles and as im2col + GEMM, whatever the thread
// count. Needs no scratch (each task packs its channel into a buffer of
// its own).
void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool);

// The same kernel with each channel's input and output left to the caller
// (QLinearConv's depthwise layers, quantized_depthwise.h): pack(nc, l, buf,
// zero_padding) writes plane nc = n * channels + c of the input into buf in
// layout l (conv_layout::PackChannel, padding only when zero_padding), and
// done(nc, sums) receives its out_h x out_w sums, no bias, in a buffer of
// the calling thread's that the next channel overwrites. Both run on the
// pool's threads, several channels at once.
using DepthwisePackFn =
    std::function<void(int64_t nc, const conv_layout::Layout& l, float* buf, bool zero_padding)>;
using DepthwiseDoneFn = std::function<void(int64_t nc, const float* sums)>;
void DepthwiseConv2DChannels(const Conv2DShape& s, const float* w, const DepthwisePackFn& pack,
                             const DepthwiseDoneFn& done, ThreadPool* pool);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_
