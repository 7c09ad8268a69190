// See requantize.h.
#include "converter/requantize.h"

#include <cstring>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "ir/quant.h"
#include "support/status_macros.h"

namespace slimpack::converter {

absl::StatusOr<int64_t> DequantizeWeightsInPlace(ir::Model& model, const std::string& source) {
  ir::Graph& g = model.graph;
  std::vector<std::string> names;
  for (const ir::Tensor& t : g.initializers()) {
    if (t.quant.quantized()) names.push_back(t.name);
  }
  std::set<std::string> params;  // scales, zero points, permutations: removed at the end
  for (const std::string& name : names) {
    const ir::Tensor& q = *g.FindInitializer(name);
    const ir::Tensor* scale = nullptr;
    const ir::Tensor* zero = nullptr;
    if (!q.quant.scale.empty()) {
      scale = g.FindInitializer(q.quant.scale);
      if (scale == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": tensor '", name,
                                                       "' names scale '", q.quant.scale,
                                                       "', which the model does not hold"));
      }
      params.insert(q.quant.scale);
    }
    if (!q.quant.zero_point.empty()) {
      zero = g.FindInitializer(q.quant.zero_point);
      if (zero == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": tensor '", name,
                                                       "' names zero point '",
                                                       q.quant.zero_point,
                                                       "', which the model does not hold"));
      }
      params.insert(q.quant.zero_point);
    }
    absl::StatusOr<ir::Tensor> plain = ir::DequantizeTensor(q, scale, zero);
    if (!plain.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": decoding '", name, "': ", plain.status().message()));
    }
    // An act-order weight goes back to checkpoint column order: the
    // requantized weight is a plain one, read without a permutation.
    const int64_t in = q.dims.empty() ? 0 : q.dims.back();
    ASSIGN_OR_RETURN(std::vector<int64_t> perm, hf::ReadInputPermutation(g, name, in, source));
    if (!perm.empty()) {
      std::vector<float> values(plain->data.size() / sizeof(float));
      std::memcpy(values.data(), plain->data.data(), plain->data.size());
      hf::UnpermuteColumns(perm, static_cast<int64_t>(values.size()) / in, values.data());
      std::vector<uint8_t> bytes(plain->data.size());
      std::memcpy(bytes.data(), values.data(), bytes.size());
      plain->data = ir::TensorData::Owned(std::move(bytes));
      params.insert(name + hf::kInputPermSuffix);
    }
    *g.FindMutableInitializer(name) = *std::move(plain);
  }
  for (const std::string& p : params) g.RemoveInitializer(p);
  return static_cast<int64_t>(names.size());
}

}  // namespace slimpack::converter
