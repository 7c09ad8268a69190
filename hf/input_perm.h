// An act-order checkpoint's input permutation `<weight>.input_perm`
// (hf::kInputPermSuffix, formats/safetensors/prequantized.h): the weight's
// input columns are stored permuted, W'[:, j] = W[:, perm[j]]. The decoder
// graph applies it to the linear's input; the GGUF exporter undoes it on
// the dequantized weight (GGUF has no permutation), and the importance of
// the stored columns is put back in checkpoint order the same way.
#ifndef SLIMPACK_HF_INPUT_PERM_H_
#define SLIMPACK_HF_INPUT_PERM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::hf {

// The permutation of `weight` (a name in `g`) with `in` input columns, or
// an empty vector when it has none. InvalidArgument naming `source` and the
// tensor when it is not an i64 [in] permutation of 0..in-1.
absl::StatusOr<std::vector<int64_t>> ReadInputPermutation(const ir::Graph& g,
                                                          const std::string& weight, int64_t in,
                                                          const std::string& source);

// values [rows, in] with permuted columns -> checkpoint order, in place:
// column j goes back to column perm[j].
void UnpermuteColumns(const std::vector<int64_t>& perm, int64_t rows, float* values);

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_INPUT_PERM_H_
