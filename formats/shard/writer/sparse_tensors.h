// The writer's side of sparsity (spec.md section 5, "Sparsity"): packs 2:4
// float tensors into the sparse_2_4 layout (values + a u4 index tensor) and
// measures what every tensor's sparsity record states.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/sparse.h"
#include "formats/shard/writer/artifact_tensors.h"

namespace slimpack::shard_writer {

// The manifest's per-tensor "sparsity" record.
struct SparsityRecord {
  ir::SparsityInfo info;
  uint64_t zeros = 0;   // elements stored as exactly zero
  uint64_t numel = 0;
  bool packed = false;  // layout sparse_2_4; its indices are `indices`
  std::string indices;
};

// A sparse tensor whose bytes are made when written (ir::TensorData::
// Deferred): its packing and measurement wait for them.
struct DeferredSparse {
  const ir::Tensor* dense = nullptr;  // the model's placeholder
  std::string name;                   // its artifact name
  bool packed = false;                // stored as `name` values + indices
  std::string indices;                // packed: the index tensor's name
  SparsityRecord* record = nullptr;   // in SparseStorage::records
  std::mutex mu;
  bool made = false;
  absl::Status status;
  std::map<std::string, ir::TensorData> ready;  // made, not yet handed out
};

struct SparseStorage {
  // Packed values and index tensors the writer streams instead of the
  // model's dense ones; the ArtifactTensor pointers refer into this.
  std::deque<ir::Tensor> owned;
  std::map<std::string, SparsityRecord> records;  // by artifact tensor name
  // Deferred sparse tensors by the artifact name of each tensor stored for
  // them (the dense one, or its packed values and indices).
  std::map<std::string, std::shared_ptr<DeferredSparse>> deferred;
};

// How many elements of a deferred sparse tensor end as zero, as its
// producer counted them (its record is planned before its bytes exist);
// nullopt where unknown, which is an error.
using SparseZerosFn = std::function<std::optional<uint64_t>(const ir::Tensor& t)>;

// For every tensor with a sparsity pattern: measures it (ir::MeasureSparsity)
// and, when `pack` and it is a plain float 2:4 tensor grouped along its
// rows (axis 1), replaces it in `tensors` by its packed values and appends
// its index tensor "<name>.sparse_indices" (same layer). Errors,
// InvalidArgument naming the tensor: a 2:4 record whose tensor breaks the
// pattern, an asymmetric quantized sparse tensor, an index name already
// used. Memory: the packed tensors (half of each dense one plus 1/8 of its
// element count in bytes) are held until the artifact is written.
//
// A deferred tensor (no bytes yet) is planned the same way, with deferred
// placeholders for its values and indices and the zero count `zeros`
// states; ProduceSparse packs and measures it when the writer asks, so
// nothing of it is held before. Internal when `zeros` does not know it.
absl::Status PrepareSparseTensors(std::vector<ArtifactTensor>& tensors, bool pack,
                                  const SparseZerosFn& zeros, SparseStorage* storage);

// The bytes of deferred artifact tensor `name` (a sparse tensor stored
// dense, or a packed one's values or indices): on the first request of any
// of a tensor's parts, its dense bytes from `produce`, checked against its
// record (2:4 held, the zero count stated) and packed; the other part waits
// in memory for its request. Thread-safe; each part may be asked for once.
// Errors: the producer's, InvalidArgument as PrepareSparseTensors' for bytes
// that break the record, Internal for an unknown or repeated name.
absl::StatusOr<ir::TensorData> ProduceSparse(
    const SparseStorage& storage, const std::string& name,
    const std::function<absl::StatusOr<ir::TensorData>(const ir::Tensor&)>& produce);

// Element count a tensor stores: numel, or numel / 2 for packed 2:4 values.
uint64_t StoredElements(uint64_t numel, const SparseStorage& storage, const std::string& name);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_
