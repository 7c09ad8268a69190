// What Conv (conv.cc) and ConvTranspose (conv_transpose.cc) share: reading
// and checking their inputs and attributes, the bias, and index helpers
// over N-d spatial shapes.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_COMMON_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_COMMON_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/kernel.h"

namespace slimpack::runtime::kernels {

// Product of v[from...] (1 when empty).
int64_t DimsProduct(const std::vector<int64_t>& v, size_t from = 0);

// Unravels flat index `i` of `dims` into `idx` (sized like dims).
void UnravelIndex(int64_t i, const std::vector<int64_t>& dims, std::vector<int64_t>& idx);

struct ConvInputs {
  const RtTensor* x;
  const RtTensor* w;
  const RtTensor* b;  // null when absent
  int64_t group;
  std::vector<int64_t> kernel;  // W's spatial dims
};

// X, W and the optional bias (all f32), `group` and `kernel_shape`:
// InvalidArgument when the ranks differ or are below 3, kernel_shape
// contradicts W, or group is not positive.
absl::StatusOr<ConvInputs> ReadConvInputs(KernelContext& ctx);

// InvalidArgument unless b is null or holds `channels` elements.
absl::Status CheckConvBias(const RtTensor* b, int64_t channels);

// y[n, c, ...] += b[c] over `plane` values per channel (nothing when b is
// null); CheckConvBias's error when b has the wrong size.
absl::Status AddConvBias(const RtTensor* b, int64_t batch, int64_t channels, int64_t plane,
                         float* y);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_COMMON_H_
