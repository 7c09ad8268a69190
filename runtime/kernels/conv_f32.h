// The float convolution behind Conv, callable by other kernels: QLinearConv
// and ConvInteger run their integer products through it when every partial
// sum is an integer below 2^24, where float arithmetic is exact in any order
// (quantized_conv.cc).
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_F32_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_F32_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "runtime/kernel.h"
#include "runtime/kernels/conv_direct.h"
#include "runtime/kernels/window.h"

namespace slimpack::runtime::kernels {

// X [x_dims] (*) W [out_channels, x_dims[1] / group, kernel...] + bias, with
// the window `g` (ComputeWindow's result for X's spatial axes). The caller
// has checked that group divides both channel counts; bias is null or
// holds out_channels floats.
struct ConvF32Args {
  const float* x;
  std::vector<int64_t> x_dims;
  const float* w;
  int64_t out_channels;
  int64_t group;
  const float* bias;
  WindowGeometry g;
  // True when w is the same on every run of this node (Conv's input 1 a
  // constant of the plan; QLinearConv's centred constant W): the
  // channel-blocked kernel (conv_blocked.h) then keeps its packed copy in
  // the node's cache.
  bool w_is_constant_input = false;
  // FusedConv's activation on every output, with its own kernel's bits: in
  // the direct, channel-blocked and depthwise kernels' stores, else over y
  // once the im2col + GEMM convolution is done. Saves the activation's own
  // pass over the output.
  ConvActivation activation = ConvActivation::kNone;
};

// The direct kernels' description of a 1-D or 2-D convolution of X
// [x_dims] into m channels (1-D as height 1), or nullopt when they cannot
// run it here (other ranks, empty tensors, no AVX2 + FMA or AVX-512, offsets
// past 32 bits): those go through im2col + GEMM.
std::optional<Conv2DShape> DirectConvShape(const std::vector<int64_t>& x_dims, int64_t m,
                                           int64_t group, const WindowGeometry& g);

// Writes Y [x_dims[0], out_channels, g.out...] to `y`: the direct kernels
// (conv_direct.h, conv_blocked.h) where the CPU and shape allow, otherwise
// im2col + GEMM.
// Scratch comes from ctx's allocator; results do not depend on the thread
// count.
absl::Status ConvF32(KernelContext& ctx, const ConvF32Args& a, float* y);

// Conv followed by Relu or HardSwish, one kernel (FusedConv with that
// activation).
absl::Status ConvRelu(KernelContext& ctx);
absl::Status ConvHardSwish(KernelContext& ctx);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_F32_H_
