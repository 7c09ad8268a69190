// Loops shared by element-wise kernels: a broadcasting binary loop and
// unary loops over f32 or any C++ element type.
#ifndef SLIMPACK_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_
#define SLIMPACK_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_

#include <algorithm>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/kernels/broadcast.h"
#include "support/status_macros.h"

namespace slimpack::runtime {

// How a broadcast operand of `small` dims meets an output of `dims` whose
// other operand is full: as an [outer, inner] output, one value per outer
// row (kPerRow: a norm's [.., 1] statistic) or the same inner vector in
// every row (kPerColumn: a norm's weight, a bias). kOther for anything else.
enum class BroadcastRun { kOther, kPerRow, kPerColumn };
inline BroadcastRun ClassifyBroadcast(const std::vector<int64_t>& small,
                                      const std::vector<int64_t>& dims, int64_t* inner) {
  const size_t rank = dims.size();
  if (small.size() > rank || rank == 0) return BroadcastRun::kOther;
  std::vector<int64_t> sd(rank - small.size(), 1);  // right-aligned, 1s in front
  sd.insert(sd.end(), small.begin(), small.end());
  size_t first = rank, last = 0;  // the first and one past the last non-1 dim of sd
  for (size_t i = 0; i < rank; ++i) {
    if (sd[i] != 1) {
      first = std::min(first, i);
      last = i + 1;
    }
  }
  if (first == rank) return BroadcastRun::kOther;  // a scalar: handled by the caller
  bool column = true, row = true;
  for (size_t i = 0; i < rank; ++i) {
    column = column && (i < first ? true : sd[i] == dims[i]);
    row = row && (i < last ? sd[i] == dims[i] : true);
  }
  *inner = 1;
  if (column) {
    for (size_t i = first; i < rank; ++i) *inner *= dims[i];
    return BroadcastRun::kPerColumn;
  }
  if (row) {
    for (size_t i = last; i < rank; ++i) *inner *= dims[i];
    return BroadcastRun::kPerRow;
  }
  return BroadcastRun::kOther;
}

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
  } else if (int64_t inner = 0; n > 0 && (a.num_elements() == n || b.num_elements() == n) &&
                                ClassifyBroadcast(a.num_elements() == n ? b.dims() : a.dims(),
                                                  dims, &inner) != BroadcastRun::kOther) {
    // One operand full, the other a per-row value or a per-column vector:
    // rows of contiguous loops the vectoriser takes, each element the same
    // f(a, b) as the general walk below.
    const bool a_full = a.num_elements() == n;
    const bool per_row = ClassifyBroadcast(a_full ? b.dims() : a.dims(), dims, &inner) ==
                         BroadcastRun::kPerRow;
    const T* full = a_full ? pa : pb;
    const T* part = a_full ? pb : pa;
    for (int64_t o0 = 0; o0 < n; o0 += inner) {
      const T* x = full + o0;
      Out* y = po + o0;
      if (per_row) {
        const T s = part[o0 / inner];
        if (a_full) {
          for (int64_t j = 0; j < inner; ++j) y[j] = static_cast<Out>(f(x[j], s));
        } else {
          for (int64_t j = 0; j < inner; ++j) y[j] = static_cast<Out>(f(s, x[j]));
        }
      } else if (a_full) {
        for (int64_t j = 0; j < inner; ++j) y[j] = static_cast<Out>(f(x[j], part[j]));
      } else {
        for (int64_t j = 0; j < inner; ++j) y[j] = static_cast<Out>(f(part[j], x[j]));
      }
    }
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
