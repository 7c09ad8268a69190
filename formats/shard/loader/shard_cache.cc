// Shard mapping: openat without following links (and without blocking, so
// a FIFO planted in the artifact is refused instead of hanging the open),
// fstat size check before mmap (a mapping past EOF faults with SIGBUS on
// access), header check with pread, then mmap from a page-aligned offset of
// the runtime page size.
#include "formats/shard/loader/shard_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "formats/shard/format.h"

namespace slimpack::loader {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

// Reads exactly `size` bytes at `offset`; OutOfRange on early EOF.
Status PreadFull(int fd, void* buf, size_t size, uint64_t offset,
                 const std::string& path) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgumentError(path + ": read failed: " + ErrnoText(errno));
    if (n == 0) {
      return OutOfRangeError(path + ": unexpected end of file at byte " +
                             std::to_string(offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
         (uint32_t{p[3]} << 24);
}
uint64_t Le64(const uint8_t* p) {
  return uint64_t{Le32(p)} | (uint64_t{Le32(p + 4)} << 32);
}

}  // namespace

// Header fields are decoded byte by byte so the check is endian-neutral.
Status CheckShardHeader(const uint8_t* h, const ShardInfo& info,
                        const std::string& path) {
  using shard::ShardHeader;
  if (std::memcmp(h + offsetof(ShardHeader, magic), shard::kShardMagic, 8) != 0) {
    return InvalidArgumentError(path + ": bad magic: not a slimpack shard (expected "
                                "\"SLIMSHRD\" at offset 0)");
  }
  const uint16_t major = Le16(h + offsetof(ShardHeader, version_major));
  if (major > shard::kFormatVersionMajor) {
    return UnimplementedError(path + ": shard format major version " +
                              std::to_string(major) +
                              " was made by a newer tool; this loader reads " +
                              std::to_string(shard::kFormatVersionMajor));
  }
  if (major == 0) return InvalidArgumentError(path + ": shard version 0 does not exist");
  const uint32_t header_size = Le32(h + offsetof(ShardHeader, header_size));
  if (header_size < shard::kShardHeaderSize || header_size > shard::kDataRegionOffset) {
    return InvalidArgumentError(path + ": header_size " + std::to_string(header_size) +
                                " outside [" + std::to_string(shard::kShardHeaderSize) +
                                ", " + std::to_string(shard::kDataRegionOffset) + "]");
  }
  const uint32_t index = Le32(h + offsetof(ShardHeader, shard_index));
  if (index != info.index) {
    return InvalidArgumentError(path + ": header says shard index " +
                                std::to_string(index) + ", manifest says " +
                                std::to_string(info.index));
  }
  const uint64_t file_size = Le64(h + offsetof(ShardHeader, file_size));
  if (file_size != info.size) {
    return InvalidArgumentError(path + ": header says file size " +
                                std::to_string(file_size) + ", manifest says " +
                                std::to_string(info.size));
  }
  if (Le32(h + offsetof(ShardHeader, reserved0)) != 0) {
    return InvalidArgumentError(path + ": reserved header bytes are not zero");
  }
  for (size_t i = offsetof(ShardHeader, reserved); i < sizeof(ShardHeader); ++i) {
    if (h[i] != 0) {
      return InvalidArgumentError(path + ": reserved header byte " +
                                  std::to_string(i) + " is not zero");
    }
  }
  return OkStatus();
}

namespace {

// What a non-regular file is, for "is a FIFO, not a regular file".
const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

int ToMadvise(AccessAdvice a) {
  switch (a) {
    case AccessAdvice::kSequential: return MADV_SEQUENTIAL;
    case AccessAdvice::kRandom: return MADV_RANDOM;
    case AccessAdvice::kWillNeed: return MADV_WILLNEED;
    case AccessAdvice::kNormal: break;
  }
  return MADV_NORMAL;
}

}  // namespace

uint64_t PageSize() {
  static const uint64_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

Result<OpenedFile> OpenRegularFileAt(int dir_fd, const std::string& name,
                                     const std::string& path_for_errors) {
  // O_NONBLOCK: without it, open() of a FIFO waits for a writer that never
  // comes, so a named pipe planted as manifest.json, a shard or a carried
  // file would hang the loader before the S_ISREG check below could refuse
  // it. For a regular file the flag changes nothing; it is cleared below.
  int fd;
  do {
    fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError(path_for_errors + ": file not found");
    if (err == ELOOP) {
      return InvalidArgumentError(path_for_errors +
                                  ": is a symbolic link; artifact files must be "
                                  "regular files inside the artifact directory");
    }
    if (err == EACCES || err == EPERM) {
      return PermissionDeniedError(path_for_errors + ": " + ErrnoText(err));
    }
    return InvalidArgumentError(path_for_errors + ": cannot open: " + ErrnoText(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return InvalidArgumentError(path_for_errors + ": fstat failed: " + ErrnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path_for_errors + ": is " + FileTypeName(st.st_mode) +
                                ", not a regular file");
  }
  // Back to blocking mode, so callers see the plain fd they asked for.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return InvalidArgumentError(path_for_errors + ": fcntl failed: " + ErrnoText(err));
  }
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

ShardMapping::~ShardMapping() {
  if (base_ != nullptr) {
    ::munmap(const_cast<uint8_t*>(base_), static_cast<size_t>(length_));
  }
}

void ShardMapping::Advise(uint64_t file_offset, uint64_t size, int advice) const {
  if (base_ == nullptr || size == 0) return;
  const uint64_t page = PageSize();
  const uint64_t rel = file_offset - map_offset_;
  const uint64_t start = rel / page * page;
  uint64_t end = rel + size;
  if (end > length_) end = length_;
  ::madvise(const_cast<uint8_t*>(base_) + start, static_cast<size_t>(end - start),
            advice);
}

ShardCache::ShardCache(int dir_fd, std::string dir, const Manifest* manifest,
                       uint64_t budget_bytes, AccessAdvice advice)
    : dir_fd_(dir_fd),
      dir_(std::move(dir)),
      manifest_(manifest),
      budget_bytes_(budget_bytes),
      advice_(advice),
      page_size_(PageSize()),
      slots_(manifest->shards.size()),
      lru_pos_(manifest->shards.size()) {}

Result<std::shared_ptr<const ShardMapping>> ShardCache::Map(uint32_t index) const {
  const ShardInfo& info = manifest_->shards[index];
  const std::string path = dir_ + "/" + info.file;
  SLP_ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFileAt(dir_fd_, info.file, path));
  FdCloser closer(file.fd);
  if (file.size < info.size) {
    return OutOfRangeError(path + ": truncated: file has " + std::to_string(file.size) +
                           " bytes, manifest says " + std::to_string(info.size));
  }
  if (file.size > info.size) {
    return DataLossError(path + ": file has " + std::to_string(file.size) +
                         " bytes, more than the " + std::to_string(info.size) +
                         " the manifest records (modified after writing?)");
  }
  uint8_t header[shard::kShardHeaderSize];
  SLP_RETURN_IF_ERROR(PreadFull(file.fd, header, sizeof(header), 0, path));
  SLP_RETURN_IF_ERROR(CheckShardHeader(header, info, path));

  // Map the payload region from the last page boundary at or before it, so
  // this works for 4 KiB, 16 KiB and 64 KiB pages alike.
  const uint64_t map_offset = shard::kDataRegionOffset / page_size_ * page_size_;
  const uint64_t length = info.size - map_offset;
  if (length == 0) {
    return std::make_shared<const ShardMapping>(nullptr, map_offset, 0);
  }
  if (length > SIZE_MAX) return ResourceExhaustedError(path + ": too large to map");
  void* base = ::mmap(nullptr, static_cast<size_t>(length), PROT_READ, MAP_SHARED,
                      file.fd, static_cast<off_t>(map_offset));
  if (base == MAP_FAILED) {
    const int err = errno;
    if (err == ENOMEM) {
      return ResourceExhaustedError(path + ": mmap of " + std::to_string(length) +
                                    " bytes failed: " + ErrnoText(err));
    }
    return InvalidArgumentError(path + ": mmap failed: " + ErrnoText(err) +
                                " (a shard stored compressed inside an APK cannot "
                                "be mapped; store it uncompressed)");
  }
  if (advice_ != AccessAdvice::kNormal) {
    ::madvise(base, static_cast<size_t>(length), ToMadvise(advice_));
  }
  return std::make_shared<const ShardMapping>(static_cast<const uint8_t*>(base),
                                              map_offset, length);
}

Result<std::shared_ptr<const ShardMapping>> ShardCache::Get(uint32_t index) {
  if (index >= slots_.size()) {
    return OutOfRangeError("shard index " + std::to_string(index) + " out of range");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (slots_[index] != nullptr) {
    lru_.splice(lru_.begin(), lru_, lru_pos_[index]);
    return slots_[index];
  }
  SLP_ASSIGN_OR_RETURN(std::shared_ptr<const ShardMapping> mapping, Map(index));
  slots_[index] = mapping;
  lru_.push_front(index);
  lru_pos_[index] = lru_.begin();
  mapped_bytes_ += mapping->length();
  EvictOverBudget(index);
  return mapping;
}

void ShardCache::EvictOverBudget(uint32_t keep) {
  if (budget_bytes_ == 0) return;
  while (mapped_bytes_ > budget_bytes_ && !lru_.empty() && lru_.back() != keep) {
    const uint32_t victim = lru_.back();
    lru_.pop_back();
    mapped_bytes_ -= slots_[victim]->length();
    slots_[victim].reset();
  }
}

uint64_t ShardCache::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mapped_bytes_;
}

size_t ShardCache::mapped_shards() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

void ShardCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : slots_) s.reset();
  lru_.clear();
  mapped_bytes_ = 0;
}

}  // namespace slimpack::loader
