// Token-id streams for evaluation, read from .npy files.
#ifndef SLIMPACK_EVAL_TOKEN_IDS_H_
#define SLIMPACK_EVAL_TOKEN_IDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::eval {

// The ids of an i32/i64 tensor of rank 1, or rank 2 with its rows
// concatenated in order. Unimplemented naming the dtype otherwise;
// InvalidArgument for another rank. `source` prefixes errors.
absl::StatusOr<std::vector<int64_t>> TokenIdsFromTensor(const ir::Tensor& tensor,
                                                        const std::string& source);

// ReadNpy + TokenIdsFromTensor.
absl::StatusOr<std::vector<int64_t>> LoadTokenIds(const std::string& npy_path);

// InvalidArgument naming the first id outside [0, vocab): its flat index
// and value, and the vocabulary size.
absl::Status CheckTokenIds(const std::vector<int64_t>& ids, int64_t vocab,
                           const std::string& source);

}  // namespace slimpack::eval

#endif  // SLIMPACK_EVAL_TOKEN_IDS_H_
