#include "hf/input_perm.h"

#include <cstring>

#include "hf/weight_roles.h"

namespace slimpack::hf {

absl::StatusOr<std::vector<int64_t>> ReadInputPermutation(const ir::Graph& g,
                                                          const std::string& weight, int64_t in,
                                                          const std::string& source) {
  const std::string name = weight + kInputPermSuffix;
  const ir::Tensor* t = g.FindInitializer(name);
  if (t == nullptr) return std::vector<int64_t>();
  const std::string where = source + ": input permutation '" + name + "'";
  if (t->dtype != ir::DType::kI64 || t->dims != std::vector<int64_t>{in} ||
      t->data.size() != static_cast<uint64_t>(in) * 8 || t->quant.quantized()) {
    return absl::InvalidArgumentError(where + " is " + std::string(ir::DTypeName(t->dtype)) +
                                      ir::Shape::FromDims(t->dims).ToString() +
                                      ", expected i64[" + std::to_string(in) + "]");
  }
  std::vector<int64_t> perm(static_cast<size_t>(in));
  std::vector<bool> seen(static_cast<size_t>(in), false);
  for (int64_t j = 0; j < in; ++j) {
    int64_t v;
    std::memcpy(&v, t->data.data() + 8 * j, 8);
    if (v < 0 || v >= in || seen[static_cast<size_t>(v)]) {
      return absl::InvalidArgumentError(where + ": element " + std::to_string(j) + " = " +
                                        std::to_string(v) + " repeats or is outside [0, " +
                                        std::to_string(in) + "): not a permutation");
    }
    seen[static_cast<size_t>(v)] = true;
    perm[static_cast<size_t>(j)] = v;
  }
  return perm;
}

void UnpermuteColumns(const std::vector<int64_t>& perm, int64_t rows, float* values) {
  const int64_t in = static_cast<int64_t>(perm.size());
  std::vector<float> row(perm.size());
  for (int64_t r = 0; r < rows; ++r) {
    float* v = values + r * in;
    for (int64_t j = 0; j < in; ++j) row[static_cast<size_t>(perm[static_cast<size_t>(j)])] = v[j];
    std::memcpy(v, row.data(), row.size() * sizeof(float));
  }
}

}  // namespace slimpack::hf
