// 2:4 packing and sparsity measurement for the writer (sparse_tensors.h).
#include "formats/shard/writer/sparse_tensors.h"

#include <unordered_set>

#include "support/status_macros.h"

namespace slimpack::shard_writer {

absl::Status PrepareSparseTensors(std::vector<ArtifactTensor>& tensors, bool pack,
                                  SparseStorage* storage) {
  std::unordered_set<std::string> names;
  for (const ArtifactTensor& t : tensors) names.insert(t.name);
  const size_t original = tensors.size();
  for (size_t i = 0; i < original; ++i) {
    const ir::Tensor& t = *tensors[i].tensor;
    if (!t.sparsity.sparse() || tensors[i].is_attribute) continue;
    ASSIGN_OR_RETURN(ir::SparsityMeasure m, ir::MeasureSparsity(t));
    const std::string ctx = "tensor '" + tensors[i].name + "'";
    if (t.sparsity.pattern == ir::SparsityPattern::k2of4 && !m.holds_2of4) {
      return absl::InvalidArgumentError(
          ctx + ": recorded as 2:4 sparse but a group of 4 inputs holds 3 or more nonzeros");
    }
    SparsityRecord rec;
    rec.info = t.sparsity;
    rec.zeros = m.zeros;
    rec.numel = m.numel;
    const bool packable = pack && t.sparsity.pattern == ir::SparsityPattern::k2of4 &&
                          t.sparsity.axis == 1 && !t.quant.quantized() &&
                          (t.dtype == ir::DType::kF32 || t.dtype == ir::DType::kF16 ||
                           t.dtype == ir::DType::kBF16);
    if (packable) {
      ir::Tensor named = t;  // the artifact name may differ (attributes never get here)
      named.name = tensors[i].name;
      ASSIGN_OR_RETURN(ir::Packed2of4 p, ir::Pack2of4(named));
      if (!names.insert(p.indices.name).second) {
        return absl::InvalidArgumentError(ctx + ": its 2:4 index tensor name '" +
                                          p.indices.name + "' is already used");
      }
      rec.packed = true;
      rec.indices = p.indices.name;
      storage->owned.push_back(std::move(p.values));
      tensors[i].tensor = &storage->owned.back();
      storage->owned.push_back(std::move(p.indices));
      tensors.push_back({storage->owned.back().name, &storage->owned.back(), false});
    }
    storage->records.emplace(tensors[i].name, std::move(rec));
  }
  return absl::OkStatus();
}

uint64_t StoredElements(uint64_t numel, const SparseStorage& storage, const std::string& name) {
  auto it = storage.records.find(name);
  return it != storage.records.end() && it->second.packed ? numel / 2 : numel;
}

}  // namespace slimpack::shard_writer
