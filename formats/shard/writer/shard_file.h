// Streams one shard file: header, zero padding and tensor payloads in
// offset order, converting chunk by chunk through the TensorEncoder and
// hashing exactly the bytes written, so memory per shard is a few MiB
// whatever the tensor sizes.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_SHARD_FILE_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_SHARD_FILE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "support/input_pages.h"
#include "formats/shard/writer/tensor_encoder.h"

namespace slimpack::shard_writer {

// Output bytes per conversion chunk. With the 1 MiB write buffer and the
// input chunk (at most 4x this for f64 sources, 2x for f32 -> f16) this
// bounds one shard writer's working set at about 16 MiB.
inline constexpr uint64_t kChunkBytes = 4ull << 20;

struct ShardTensor {
  const ir::Tensor* tensor = nullptr;
  ir::DType output_dtype = ir::DType::kUndefined;
  uint64_t offset = 0;  // absolute offset in the shard file
  uint64_t nbytes = 0;  // stored bytes (in output_dtype)
};

struct WrittenFile {
  std::string file;  // base name
  uint64_t size = 0;
  std::string sha256;
};

struct ShardWriteContext {
  int dir_fd = -1;             // the staging directory
  std::string dir_for_errors;  // its path, for messages
  const TensorEncoder* encoder = nullptr;
  const support::InputPages* pages = nullptr;
  // Called after each write with the bytes just written (progress and the
  // tests' fault injection). May be called from several threads at once.
  std::function<void(uint64_t bytes)> on_bytes;
};

// Writes shard `index` ("shard-%05u.bin") of `file_size` bytes holding
// `tensors` (sorted by offset, placed by PlanShards), then fsyncs it.
// Errors name the file and offset (ResourceExhausted for ENOSPC/EFBIG) or
// the tensor (conversion errors, Internal if the plan and data disagree).
// `writing`, when set, holds the index in `tensors` of the tensor being
// written, then tensors.size() once they are all written (or on error).
absl::StatusOr<WrittenFile> WriteShardFile(
    const ShardWriteContext& ctx, uint32_t index, uint64_t file_size,
    const std::vector<ShardTensor>& tensors, std::atomic<size_t>* writing = nullptr);

// "shard-00012.bin"; more digits past 99999.
std::string ShardFileName(uint32_t index);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_SHARD_FILE_H_
