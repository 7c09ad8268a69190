// Hands out tensor storage for one run and takes back buffers whose last
// reader has finished, so later nodes reuse them instead of allocating.
#ifndef SLIMPACK_RUNTIME_ALLOCATOR_H_
#define SLIMPACK_RUNTIME_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/rt_tensor.h"

namespace slimpack::runtime {

class TensorAllocator {
 public:
  // Tensors over `max_tensor_bytes` are refused with ResourceExhausted: a
  // Range/Expand/Tile from a malformed model must not exhaust memory.
  explicit TensorAllocator(uint64_t max_tensor_bytes)
      : max_tensor_bytes_(max_tensor_bytes) {}

  // Storage for dtype/dims; zero-filled when `zero` is set, otherwise the
  // kernel must write every element.
  absl::StatusOr<RtTensor> Allocate(ir::DType dtype, std::vector<int64_t> dims,
                                    bool zero);
  // Takes `t`'s buffer back if no other tensor shares it.
  void Release(RtTensor t);

  uint64_t bytes_allocated() const { return bytes_allocated_; }
  uint64_t bytes_reused() const { return bytes_reused_; }

  // Between runs (the interpreter keeps an allocator's free buffers for its
  // next Run, so the same activations do not fault in fresh pages every
  // time): zeroes the counters and frees the largest idle buffers until at
  // most `keep_bytes` stay.
  void StartNextRun(uint64_t keep_bytes);

 private:
  uint64_t max_tensor_bytes_;
  // Free buffers by capacity; best fit is the smallest that is large enough.
  std::multimap<uint64_t, std::shared_ptr<Buffer>> free_;
  uint64_t free_bytes_ = 0;
  uint64_t bytes_allocated_ = 0;
  uint64_t bytes_reused_ = 0;
};

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_ALLOCATOR_H_
