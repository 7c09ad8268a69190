// The writer's side of sparsity (spec.md section 5, "Sparsity"): packs 2:4
// float tensors into the sparse_2_4 layout (values + a u4 index tensor) and
// measures what every tensor's sparsity record states.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_

#include <cstdint>
#include <deque>
#include <map>
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

struct SparseStorage {
  // Packed values and index tensors the writer streams instead of the
  // model's dense ones; the ArtifactTensor pointers refer into this.
  std::deque<ir::Tensor> owned;
  std::map<std::string, SparsityRecord> records;  // by artifact tensor name
};

// For every tensor with a sparsity pattern: measures it (ir::MeasureSparsity)
// and, when `pack` and it is a plain float 2:4 tensor grouped along its
// rows (axis 1), replaces it in `tensors` by its packed values and appends
// its index tensor "<name>.sparse_indices" (same layer). Errors,
// InvalidArgument naming the tensor: a 2:4 record whose tensor breaks the
// pattern, an asymmetric quantized sparse tensor, an index name already
// used. Memory: the packed tensors (half of each dense one plus 1/8 of its
// element count in bytes) are held until the artifact is written.
absl::Status PrepareSparseTensors(std::vector<ArtifactTensor>& tensors, bool pack,
                                  SparseStorage* storage);

// Element count a tensor stores: numel, or numel / 2 for packed 2:4 values.
uint64_t StoredElements(uint64_t numel, const SparseStorage& storage, const std::string& name);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_SPARSE_TENSORS_H_
