// Token loading: ids are widened to int64 and range-checked up front, so a
// bad id is reported with its position instead of as a Gather error.
#include "eval/token_ids.h"

#include <cstring>

#include "ir/shape.h"
#include "formats/numpy/numpy_io.h"
#include "support/status_macros.h"

namespace slimpack::eval {

absl::StatusOr<std::vector<int64_t>> TokenIdsFromTensor(const ir::Tensor& t,
                                                        const std::string& source) {
  if (t.dtype != ir::DType::kI64 && t.dtype != ir::DType::kI32) {
    return absl::UnimplementedError(source + ": token ids have dtype " +
                                    std::string(ir::DTypeName(t.dtype)) +
                                    " (supported: i32, i64)");
  }
  if (t.dims.size() != 1 && t.dims.size() != 2) {
    return absl::InvalidArgumentError(source + ": token ids have shape " +
                                      ir::Shape::FromDims(t.dims).ToString() +
                                      " (expected [n] or [rows, n])");
  }
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  ASSIGN_OR_RETURN(uint64_t bytes, t.ExpectedBytes());
  if (bytes != t.data.size()) {
    return absl::InvalidArgumentError(source + ": token tensor holds " +
                                      std::to_string(t.data.size()) + " bytes, expected " +
                                      std::to_string(bytes));
  }
  std::vector<int64_t> ids(n);
  if (t.dtype == ir::DType::kI64) {
    if (n > 0) std::memcpy(ids.data(), t.data.data(), n * 8);
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, t.data.data() + 4 * i, 4);
      ids[i] = v;
    }
  }
  return ids;
}

absl::StatusOr<std::vector<int64_t>> LoadTokenIds(const std::string& npy_path) {
  ASSIGN_OR_RETURN(ir::Tensor t, numpy::ReadNpy(npy_path));
  return TokenIdsFromTensor(t, npy_path);
}

absl::Status CheckTokenIds(const std::vector<int64_t>& ids, int64_t vocab,
                           const std::string& source) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return absl::InvalidArgumentError(source + ": token id at index " + std::to_string(i) +
                                        " is " + std::to_string(ids[i]) +
                                        ", outside the vocabulary [0, " +
                                        std::to_string(vocab) + ")");
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::eval
