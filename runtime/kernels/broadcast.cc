#include "runtime/kernels/broadcast.h"

#include <algorithm>
#include <string>

namespace slimpack::runtime {

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t shift = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[shift + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return absl::InvalidArgumentError(
          "shapes cannot broadcast: axis " + std::to_string(shift + i) +
          " has sizes " + std::to_string(o) + " and " + std::to_string(d));
    }
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> strides(out_dims.size(), 0);
  const size_t shift = out_dims.size() - dims.size();
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[shift + i] = dims[i] == 1 ? 0 : s;
    s *= dims[i];
  }
  return strides;
}

}  // namespace slimpack::runtime
