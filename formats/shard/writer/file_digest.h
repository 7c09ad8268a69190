// SHA-256 (OpenSSL, SHA-NI/ARMv8 accelerated) over streams and files:
// shard hashes, input-file digests and carried-file copies.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_FILE_DIGEST_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_FILE_DIGEST_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

// Incremental SHA-256. Not copyable; one per file being written.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, uint64_t size);
  // 64 lowercase hex digits. The stream must not be updated afterwards.
  std::string FinishHex();

  // One-shot hash of a buffer, as hex.
  static std::string HashHex(const void* data, uint64_t size);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct FileDigest {
  uint64_t size = 0;
  std::string sha256;  // hex
};

// Streams `path` through SHA-256 with a fixed 1 MiB buffer (read(), not
// mmap, so the file's pages never count against the writer's RSS; a
// mapping measured no faster). NotFound / PermissionDenied /
// InvalidArgument (not a regular file); DataLoss if its size changes while
// it is read.
absl::StatusOr<FileDigest> HashFile(const std::string& path);

// Copies `src_path` to `name` inside `dir_fd` (created O_EXCL), hashing the
// bytes as they are written, then fsyncs the copy. Errors name the source or
// the destination `dst_path_for_errors`.
absl::StatusOr<FileDigest> CopyFileHashed(const std::string& src_path,
                                          int dir_fd, const std::string& name,
                                          const std::string& dst_path_for_errors);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_FILE_DIGEST_H_
