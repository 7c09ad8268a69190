// Depthwise 2-D convolution (one input and one output channel per group)
// for AVX2 + FMA and AVX-512 machines, in the direct kernels' summation
// order (conv_direct.h): per output, one fused multiply-add per (kernel
// row, kernel column) from +0, then + bias. Channels go in the vector
// lanes (conv_depthwise_lanes.h): 16 with AVX-512, 8 with AVX2.
// QLinearConv's depthwise layers run the same kernel on their bytes
// (quantized_depthwise.h).
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_

#include <cstdint>
#include <functional>

#include "runtime/kernels/conv_depthwise_lanes.h"
#include "runtime/kernels/conv_direct.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// True when `s` is depthwise (group == channels == out_channels) and this
// CPU has AVX2 + FMA. The caller has checked DirectConv2DSupported(s).
bool DepthwiseConv2DApplies(const Conv2DShape& s);

// The lane widths DepthwiseConv2D can run, giving the same bytes.
enum class DepthwiseKernel { kLanes16, kLanes8 };

// The widest this CPU and SLIMPACK_CPU_MAX allow.
DepthwiseKernel BestDepthwiseKernel();

// y = act(conv(x, w) + bias) for a shape DepthwiseConv2DApplies accepts;
// the same bits as DirectConv2D's tiles and as im2col + GEMM, whatever the
// thread count and lane width. Needs no scratch (each thread keeps a
// buffer). `kernel` must be one the CPU allows (tests pick).
void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool,
                     ConvActivation act = ConvActivation::kNone);
void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool, DepthwiseKernel kernel,
                     ConvActivation act = ConvActivation::kNone);

// The kernel's tasks (every image x block of lanes channels x band of
// output rows, from the shape alone) on the pool's threads: run(n, c0, t)
// gets t with its geometry, channel count, rows and a scratch buffer of
// the thread's filled in; it sets the input, weights, bias and output of
// image n's channels from c0 and calls RunDepthwiseLanes (QLinearConv's
// depthwise layers hand it bytes and requantise what it wrote), with
// `kernel`'s lane width (one the CPU allows).
void ForEachDepthwiseLanesTask(
    const Conv2DShape& s, DepthwiseKernel kernel, ThreadPool* pool,
    const std::function<void(int64_t n, int64_t c0, depthwise_lanes::Task& t)>& run);
void RunDepthwiseLanes(const Conv2DShape& s, const depthwise_lanes::Task& t);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_H_
