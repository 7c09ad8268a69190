// Numpy-style broadcasting: the output shape of several operands and a loop
// that visits every output element with the matching input offsets.
#ifndef SLIMPACK_RUNTIME_KERNELS_BROADCAST_H_
#define SLIMPACK_RUNTIME_KERNELS_BROADCAST_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::runtime {

// Broadcast result of `shapes`; InvalidArgument naming both sizes when two
// dims differ and neither is 1.
absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const std::vector<std::vector<int64_t>>& shapes);
// Element strides of `dims` right-aligned to `out_dims`, 0 on broadcast axes.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims);

namespace broadcast_internal {

// Runs fn over one row of `len` outputs whose operand k advances by
// stride[k]. Strides of 0 and 1 (the common cases: a full operand and a
// broadcast one) become compile-time constants so the loop vectorises once
// fn is inlined; other strides take the generic loop.
template <size_t N, typename F, int64_t... S>
inline void RowWithStrides(int64_t out, const std::array<int64_t, N>& base,
                           int64_t len, F& fn) {
  constexpr int64_t kStride[N] = {S...};
  for (int64_t j = 0; j < len; ++j) {
    std::array<int64_t, N> off;
    for (size_t k = 0; k < N; ++k) off[k] = base[k] + j * kStride[k];
    fn(out + j, off);
  }
}

template <size_t N, typename F>
inline void Row(int64_t out, const std::array<int64_t, N>& base, int64_t len,
                const std::array<int64_t, N>& stride, F& fn) {
  if constexpr (N == 1) {
    if (stride[0] == 1) return RowWithStrides<1, F, 1>(out, base, len, fn);
    if (stride[0] == 0) return RowWithStrides<1, F, 0>(out, base, len, fn);
  } else if constexpr (N == 2) {
    const int code = (stride[0] == 1   ? 0
                      : stride[0] == 0 ? 1
                                       : 9) +
                     (stride[1] == 1   ? 0
                      : stride[1] == 0 ? 2
                                       : 9);
    switch (code) {
      case 0: return RowWithStrides<2, F, 1, 1>(out, base, len, fn);
      case 1: return RowWithStrides<2, F, 0, 1>(out, base, len, fn);
      case 2: return RowWithStrides<2, F, 1, 0>(out, base, len, fn);
      default: break;
    }
  }
  std::array<int64_t, N> off = base;
  for (int64_t j = 0; j < len; ++j) {
    fn(out + j, off);
    for (size_t k = 0; k < N; ++k) off[k] += stride[k];
  }
}

}  // namespace broadcast_internal

// Calls fn(out_offset, in_offsets) for every output element in row-major
// order; in_offsets[k] indexes operand k (strides from BroadcastStrides).
// Size-1 axes are dropped and neighbouring axes that every operand walks
// contiguously (or broadcasts along both) are merged first, so the inner
// loop is as long as possible: [B, T, C] + [C] runs as B*T rows of C.
template <size_t N, typename F>
void ForEachBroadcast(const std::vector<int64_t>& out_dims,
                      const std::array<std::vector<int64_t>, N>& strides,
                      F&& fn) {
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  // Merged axes, outermost first.
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> st;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) {
      merge = st[k].back() == strides[k][i] * out_dims[i];
    }
    if (merge) {
      dims.back() *= out_dims[i];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][i];
    } else {
      dims.push_back(out_dims[i]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][i]);
    }
  }
  const size_t r = dims.size();
  if (r == 0) {
    fn(int64_t{0}, std::array<int64_t, N>{});
    return;
  }
  const int64_t inner = dims[r - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = st[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> base{};
  for (int64_t out = 0; out < total; out += inner) {
    broadcast_internal::Row<N>(out, base, inner, inner_stride, fn);
    for (int d = static_cast<int>(r) - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) base[k] += st[k][d];
      if (idx[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= st[k][d] * dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_BROADCAST_H_
