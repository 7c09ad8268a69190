// Checked POSIX file I/O for the artifact writer: every write loops over
// short writes and EINTR, every failure becomes a Status naming the file,
// the byte count and the offset (bad-inputs.md part b: ENOSPC must never
// look like success).
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_CHECKED_IO_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_CHECKED_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

// slimpack::ErrnoToStatus (support/atomic_file.h): NotFound (ENOENT),
// PermissionDenied (EACCES, EPERM, EROFS), ResourceExhausted (ENOSPC,
// EDQUOT, EFBIG), AlreadyExists (EEXIST), Unknown otherwise. The message is
// "<what>: <strerror>".
absl::Status ErrnoStatus(int err, const std::string& what);

// slimpack::WriteFully: all of [data, data + size) at the descriptor's
// current position.
// `path` and `offset` (the file offset of data[0]) only feed error
// messages, e.g. "out/shard-00001.bin: writing 4194304 bytes at offset
// 16384: No space left on device".
absl::Status WriteAll(int fd, const void* data, uint64_t size,
                      const std::string& path, uint64_t offset);

// Reserves `size` bytes so a full disk fails here, before any payload is
// written (and never later as SIGBUS on a mapping). File systems without
// fallocate are accepted silently: WriteAll still checks every write.
absl::Status Preallocate(int fd, uint64_t size, const std::string& path);

// fsync, with the error naming `path`.
absl::Status Fsync(int fd, const std::string& path);
// close, with the error naming `path` (NFS reports quota errors here).
absl::Status Close(int fd, const std::string& path);

// Creates `name` inside the directory `dir_fd` for writing: O_EXCL (the
// staging directory is fresh, so an existing file means another writer),
// O_NOFOLLOW, mode 0644.
absl::StatusOr<int> CreateExclusive(int dir_fd, const std::string& name,
                                    const std::string& path_for_errors);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_CHECKED_IO_H_
