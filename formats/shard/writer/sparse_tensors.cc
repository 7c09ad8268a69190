// 2:4 packing and sparsity measurement for the writer (sparse_tensors.h).
#include "formats/shard/writer/sparse_tensors.h"

#include <unordered_set>

#include "support/status_macros.h"

namespace slimpack::shard_writer {

namespace {

bool Packable(const ir::Tensor& t, bool pack) {
  return pack && t.sparsity.pattern == ir::SparsityPattern::k2of4 && t.sparsity.axis == 1 &&
         !t.quant.quantized() &&
         (t.dtype == ir::DType::kF32 || t.dtype == ir::DType::kF16 || t.dtype == ir::DType::kBF16);
}

std::string BrokenTwoOfFour(const std::string& name) {
  return "tensor '" + name +
         "': recorded as 2:4 sparse but a group of 4 inputs holds 3 or more nonzeros";
}

}  // namespace

absl::Status PrepareSparseTensors(std::vector<ArtifactTensor>& tensors, bool pack,
                                  const SparseZerosFn& zeros, SparseStorage* storage) {
  std::unordered_set<std::string> names;
  for (const ArtifactTensor& t : tensors) names.insert(t.name);
  const size_t original = tensors.size();
  for (size_t i = 0; i < original; ++i) {
    const ir::Tensor& t = *tensors[i].tensor;
    if (!t.sparsity.sparse() || tensors[i].is_attribute) continue;
    const std::string ctx = "tensor '" + tensors[i].name + "'";
    SparsityRecord rec;
    rec.info = t.sparsity;
    const bool packable = Packable(t, pack);
    std::shared_ptr<DeferredSparse> later;
    if (t.data.deferred()) {
      // Its bytes are made when written: the record states the producer's
      // count now (every part of a split conversion plans the same
      // manifest), ProduceSparse checks the bytes against it.
      std::optional<uint64_t> stated = zeros ? zeros(t) : std::nullopt;
      if (!stated) {
        return absl::InternalError(ctx + ": sparse, its bytes made when written, and no zero "
                                   "count was given for its sparsity record");
      }
      ASSIGN_OR_RETURN(ir::SparseView v, ir::SparsityView(t, t.sparsity.axis));
      if (t.sparsity.pattern == ir::SparsityPattern::k2of4 && v.cols % 4 != 0) {
        return absl::InvalidArgumentError(BrokenTwoOfFour(tensors[i].name));
      }
      rec.zeros = *stated;
      rec.numel = static_cast<uint64_t>(v.rows) * static_cast<uint64_t>(v.cols);
      later = std::make_shared<DeferredSparse>();
      later->dense = &t;
      later->name = tensors[i].name;
    } else {
      ASSIGN_OR_RETURN(ir::SparsityMeasure m, ir::MeasureSparsity(t));
      if (t.sparsity.pattern == ir::SparsityPattern::k2of4 && !m.holds_2of4) {
        return absl::InvalidArgumentError(BrokenTwoOfFour(tensors[i].name));
      }
      rec.zeros = m.zeros;
      rec.numel = m.numel;
    }
    if (packable) {
      ir::Tensor named = t;  // the artifact name may differ (attributes never get here)
      named.name = tensors[i].name;
      ASSIGN_OR_RETURN(ir::Packed2of4 p, later ? ir::Pack2of4Layout(named) : ir::Pack2of4(named));
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
    SparsityRecord& stored = storage->records.emplace(tensors[i].name, std::move(rec)).first->second;
    if (later) {
      later->packed = stored.packed;
      later->indices = stored.indices;
      later->record = &stored;
      storage->deferred[later->name] = later;
      if (later->packed) storage->deferred[later->indices] = later;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::TensorData> ProduceSparse(
    const SparseStorage& storage, const std::string& name,
    const std::function<absl::StatusOr<ir::TensorData>(const ir::Tensor&)>& produce) {
  auto found = storage.deferred.find(name);
  if (found == storage.deferred.end()) {
    return absl::InternalError("tensor '" + name + "': not a deferred sparse tensor");
  }
  DeferredSparse& job = *found->second;
  std::lock_guard<std::mutex> lock(job.mu);
  if (!job.made) {
    job.made = true;
    job.status = [&]() -> absl::Status {
      if (!produce) {
        return absl::InternalError("tensor '" + job.name +
                                   "' has no bytes yet and the writer was given no producer");
      }
      ir::Tensor dense = *job.dense;
      dense.name = job.name;
      ASSIGN_OR_RETURN(dense.data, produce(*job.dense));
      if (dense.data.size() != job.dense->data.size() || dense.data.deferred()) {
        return absl::InternalError("tensor '" + job.name + "': produced " +
                                   std::to_string(dense.data.size()) + " bytes, planned " +
                                   std::to_string(job.dense->data.size()));
      }
      ASSIGN_OR_RETURN(ir::SparsityMeasure m, ir::MeasureSparsity(dense));
      if (dense.sparsity.pattern == ir::SparsityPattern::k2of4 && !m.holds_2of4) {
        return absl::InvalidArgumentError(BrokenTwoOfFour(job.name));
      }
      if (m.zeros != job.record->zeros) {
        return absl::InternalError("tensor '" + job.name + "': " + std::to_string(m.zeros) +
                                   " zeros written, its sparsity record states " +
                                   std::to_string(job.record->zeros));
      }
      if (!job.packed) {
        job.ready[job.name] = std::move(dense.data);
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(ir::Packed2of4 p, ir::Pack2of4(dense));
      job.ready[job.name] = std::move(p.values.data);
      job.ready[job.indices] = std::move(p.indices.data);
      return absl::OkStatus();
    }();
  }
  RETURN_IF_ERROR(job.status);
  auto it = job.ready.find(name);
  if (it == job.ready.end()) {
    return absl::InternalError("tensor '" + name + "': asked for twice");
  }
  ir::TensorData out = std::move(it->second);
  job.ready.erase(it);
  return out;
}

uint64_t StoredElements(uint64_t numel, const SparseStorage& storage, const std::string& name) {
  auto it = storage.records.find(name);
  return it != storage.records.end() && it->second.packed ? numel / 2 : numel;
}

}  // namespace slimpack::shard_writer
