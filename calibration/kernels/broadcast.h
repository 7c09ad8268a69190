// Numpy-style broadcasting: the output shape of several operands and a loop
// that visits every output element with the matching input offsets.
#ifndef SLIMPACK_CALIBRATION_KERNELS_BROADCAST_H_
#define SLIMPACK_CALIBRATION_KERNELS_BROADCAST_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::calibration {

// Broadcast result of `shapes`; InvalidArgument naming both sizes when two
// dims differ and neither is 1.
absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const std::vector<std::vector<int64_t>>& shapes);
// Element strides of `dims` right-aligned to `out_dims`, 0 on broadcast axes.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims);

// Calls fn(out_offset, in_offsets) for every output element in row-major
// order; in_offsets[k] indexes operand k (strides from BroadcastStrides).
template <size_t N, typename F>
void ForEachBroadcast(const std::vector<int64_t>& out_dims,
                      const std::array<std::vector<int64_t>, N>& strides,
                      F&& fn) {
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  const size_t r = out_dims.size();
  if (r == 0) {
    fn(int64_t{0}, std::array<int64_t, N>{});
    return;
  }
  const int64_t inner = out_dims[r - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> base{};
  for (int64_t out = 0; out < total; out += inner) {
    std::array<int64_t, N> off = base;
    for (int64_t j = 0; j < inner; ++j) {
      fn(out + j, off);
      for (size_t k = 0; k < N; ++k) off[k] += inner_stride[k];
    }
    for (int d = static_cast<int>(r) - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (idx[d] < out_dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out_dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_KERNELS_BROADCAST_H_
