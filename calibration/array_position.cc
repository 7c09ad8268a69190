#include "calibration/array_position.h"

namespace slimpack::calibration {

std::string ArrayPosition(uint64_t flat, const std::vector<int64_t>& dims) {
  if (dims.size() < 2) return "index " + std::to_string(flat);
  std::vector<uint64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    const uint64_t extent = static_cast<uint64_t>(dims[d]);
    index[d] = flat % extent;
    flat /= extent;
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) {
    out += (d == 0 ? "" : ", ") + std::to_string(index[d]);
  }
  return out + "]";
}

}  // namespace slimpack::calibration
