#include "runtime/allocator.h"

#include <cstring>
#include <iterator>
#include <string>

namespace slimpack::runtime {
namespace {

// Keep at most this much idle memory in the pool.
constexpr uint64_t kMaxFreeBytes = uint64_t{1} << 30;

}  // namespace

absl::StatusOr<RtTensor> TensorAllocator::Allocate(ir::DType dtype,
                                                   std::vector<int64_t> dims,
                                                   bool zero) {
  int64_t n = NumElementsOf(dims);
  if (n < 0) {
    return absl::InvalidArgumentError("invalid output dims " +
                                      DimsToString(dims));
  }
  auto bytes = ir::DTypeByteSize(dtype, static_cast<uint64_t>(n));
  if (!bytes || *bytes > max_tensor_bytes_) {
    return absl::ResourceExhaustedError(
        "tensor " + std::string(ir::DTypeName(dtype)) + DimsToString(dims) +
        " exceeds the limit of " + std::to_string(max_tensor_bytes_) +
        " bytes (InterpreterOptions::max_tensor_bytes)");
  }
  std::shared_ptr<Buffer> buffer;
  auto it = free_.lower_bound(*bytes);
  // Reuse only buffers at most twice the request, so a huge idle buffer is
  // not pinned by a tiny tensor.
  if (it != free_.end() && it->first <= 2 * *bytes + 64) {
    buffer = std::move(it->second);
    free_bytes_ -= it->first;
    free_.erase(it);
    bytes_reused_ += *bytes;
  } else {
    buffer = Buffer::Create(*bytes);
    if (buffer == nullptr) {
      return absl::ResourceExhaustedError(
          "cannot allocate " + std::to_string(*bytes) + " bytes for tensor " +
          DimsToString(dims));
    }
    bytes_allocated_ += *bytes;
  }
  if (zero) std::memset(buffer->data(), 0, *bytes);
  return RtTensor::WithBuffer(dtype, std::move(dims), std::move(buffer));
}

void TensorAllocator::Release(RtTensor t) {
  std::shared_ptr<Buffer> buffer = t.buffer();
  t = RtTensor();
  // use_count 1: only our local copy is left, nobody else reads it.
  if (buffer == nullptr || buffer.use_count() != 1) return;
  if (free_bytes_ + buffer->capacity() > kMaxFreeBytes) return;
  free_bytes_ += buffer->capacity();
  free_.emplace(buffer->capacity(), std::move(buffer));
}

void TensorAllocator::StartNextRun(uint64_t keep_bytes) {
  bytes_allocated_ = 0;
  bytes_reused_ = 0;
  while (free_bytes_ > keep_bytes && !free_.empty()) {
    auto largest = std::prev(free_.end());
    free_bytes_ -= largest->first;
    free_.erase(largest);
  }
}

}  // namespace slimpack::runtime
