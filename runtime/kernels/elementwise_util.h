// Loops shared by element-wise kernels: a broadcasting binary loop and
// unary loops over f32 or any C++ element type.
#ifndef SLIMPACK_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_
#define SLIMPACK_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_

#include "runtime/kernel.h"
#include "runtime/kernels/broadcast.h"
#include "support/status_macros.h"

namespace slimpack::runtime {

// Applies f(a[i], b[i]) with broadcasting; the output has dtype `out_dtype`
// and C++ type Out.
template <typename T, typename Out, typename F>
absl::StatusOr<RtTensor> BinaryLoop(KernelContext& ctx, const RtTensor& a,
                                    const RtTensor& b, ir::DType out_dtype, F f) {
  ASSIGN_OR_RETURN(auto dims, BroadcastDims({a.dims(), b.dims()}));
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(out_dtype, dims));
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Out* po = out.mutable_data<Out>();
  const int64_t n = out.num_elements();
  if (a.dims() == b.dims()) {
    for (int64_t i = 0; i < n; ++i) po[i] = static_cast<Out>(f(pa[i], pb[i]));
  } else if (b.num_elements() == 1 && a.num_elements() == n) {
    const T s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = static_cast<Out>(f(pa[i], s));
  } else if (a.num_elements() == 1 && b.num_elements() == n) {
    const T s = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = static_cast<Out>(f(s, pb[i]));
  } else {
    ForEachBroadcast<2>(
        dims, {BroadcastStrides(a.dims(), dims), BroadcastStrides(b.dims(), dims)},
        [&](int64_t o, const std::array<int64_t, 2>& in) {
          po[o] = static_cast<Out>(f(pa[in[0]], pb[in[1]]));
        });
  }
  return out;
}

// f32 -> f32 function applied element by element.
template <typename F>
absl::Status UnaryFloat(KernelContext& ctx, F f) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != ir::DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(ir::DType::kF32, x->dims()));
  // Restrict-qualified and a hoisted count, so the loop vectorises (the
  // output is a fresh buffer).
  const float* __restrict px = x->data<float>();
  float* __restrict po = out.mutable_data<float>();
  const int64_t n = x->num_elements();
  for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

template <typename T, typename F>
absl::Status UnaryTyped(KernelContext& ctx, const RtTensor& x, F f) {
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x.dtype(), x.dims()));
  const T* __restrict px = x.data<T>();
  T* __restrict po = out.mutable_data<T>();
  const int64_t n = x.num_elements();
  for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_
