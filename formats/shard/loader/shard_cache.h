// Lazy, budgeted memory mapping of an artifact's shards. A shard is opened,
// size-checked, header-checked and mapped on first access only, and the
// least recently used shards are dropped when a memory budget is set.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_SHARD_CACHE_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_SHARD_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader {

// madvise() hint applied to a shard's whole mapping when it is created.
enum class AccessAdvice : int32_t {
  kNormal = 0,
  kSequential = 1,
  kRandom = 2,
  kWillNeed = 3,  // start reading the whole shard in the background
};

// One read-only mapping of a shard's payload region. Unmapped when the last
// shared_ptr (cache slot or TensorView) goes away.
class ShardMapping {
 public:
  ShardMapping(const uint8_t* base, uint64_t map_offset, uint64_t length)
      : base_(base), map_offset_(map_offset), length_(length) {}
  ~ShardMapping();
  ShardMapping(const ShardMapping&) = delete;
  ShardMapping& operator=(const ShardMapping&) = delete;

  // Pointer to absolute shard offset `file_offset` (must be inside the
  // mapped range; the manifest checks guarantee that for tensors).
  const uint8_t* At(uint64_t file_offset) const {
    return base_ == nullptr ? nullptr : base_ + (file_offset - map_offset_);
  }
  uint64_t length() const { return length_; }
  uint64_t map_offset() const { return map_offset_; }

  // madvise() on the pages covering [file_offset, file_offset + size).
  void Advise(uint64_t file_offset, uint64_t size, int advice) const;

 private:
  const uint8_t* base_;  // nullptr for an empty payload region
  uint64_t map_offset_;  // shard offset of base_, page aligned
  uint64_t length_;
};

class ShardCache {
 public:
  // `dir_fd` stays owned by the caller and must outlive the cache.
  // `budget_bytes` 0 means unlimited.
  ShardCache(int dir_fd, std::string dir, const Manifest* manifest,
             uint64_t budget_bytes, AccessAdvice advice);

  // The mapping of shard `index`, mapping it first if needed. Thread-safe.
  // NotFound / InvalidArgument (symlink, not a regular file, bad header) /
  // OutOfRange (truncated) / DataLoss (grown) / Unimplemented (newer major),
  // each naming the shard file.
  Result<std::shared_ptr<const ShardMapping>> Get(uint32_t index);

  // Bytes and shards currently held by the cache (views may hold more).
  uint64_t mapped_bytes() const;
  size_t mapped_shards() const;
  // Drops every cached mapping (live views keep theirs).
  void Clear();

 private:
  Result<std::shared_ptr<const ShardMapping>> Map(uint32_t index) const;
  void EvictOverBudget(uint32_t keep);

  const int dir_fd_;
  const std::string dir_;
  const Manifest* manifest_;
  const uint64_t budget_bytes_;
  const AccessAdvice advice_;
  const uint64_t page_size_;

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const ShardMapping>> slots_;
  std::vector<std::list<uint32_t>::iterator> lru_pos_;
  std::list<uint32_t> lru_;  // front = most recently used
  uint64_t mapped_bytes_ = 0;
};

// The check every shard header passes before its shard is mapped (and
// before Artifact::Verify hashes it), shared so that verifying never
// accepts a shard that loading rejects. `header` holds the first
// shard::kShardHeaderSize bytes of the file named `path` (for messages).
// InvalidArgument: bad magic, major version 0, header_size outside
// [64, kDataRegionOffset], shard_index or file_size different from the
// manifest's `info`, non-zero reserved bytes; Unimplemented: a newer major
// version.
Status CheckShardHeader(const uint8_t* header, const ShardInfo& info,
                        const std::string& path);

// Runtime page size (sysconf(_SC_PAGESIZE)); 4 KiB or 16 KiB on phones.
uint64_t PageSize();

// Opens `name` inside directory `dir_fd` read-only without following
// symlinks or blocking (a FIFO is refused, not waited on) and checks it is a
// regular file. Returns the fd (blocking mode) and its size.
// NotFound / InvalidArgument ("is a FIFO, not a regular file", ...) /
// PermissionDenied naming `path_for_errors`.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
Result<OpenedFile> OpenRegularFileAt(int dir_fd, const std::string& name,
                                     const std::string& path_for_errors);

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_SHARD_CACHE_H_
