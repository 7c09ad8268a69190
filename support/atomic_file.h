// A file written under a temporary name beside its destination and renamed
// into place only when complete (O_EXCL temp, loop on short writes, fsync,
// rename, fsync the directory), shared by every single-file writer.
#ifndef SLIMPACK_SUPPORT_ATOMIC_FILE_H_
#define SLIMPACK_SUPPORT_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "support/write_back.h"

namespace slimpack {

// Maps a failed syscall's errno to the most specific code, with the message
// "<what>: <strerror>": NotFound (ENOENT), PermissionDenied (EACCES, EPERM,
// EROFS), ResourceExhausted (ENOSPC, EDQUOT, EFBIG), AlreadyExists (EEXIST),
// Unknown otherwise (the system gave no reason we can classify).
absl::Status ErrnoToStatus(int err, const std::string& what);

// Writes all of [data, data + size) at the descriptor's position, retrying
// short writes and EINTR. `path` and `offset` (the file offset of data[0])
// only feed messages: "<path>: writing <size> bytes at offset <offset>:
// No space left on device" (ResourceExhausted, like a write of 0 bytes).
absl::Status WriteFully(int fd, const void* data, uint64_t size,
                        const std::string& path, uint64_t offset);

class AtomicFile {
 public:
  // Creates "<dir>/.<name>.tmp-<pid>-<16 random hex>" beside `final_path`
  // (same file system, so the rename is atomic) with O_EXCL, mode 0644.
  // Errors name `final_path`: NotFound (missing directory),
  // PermissionDenied, ...
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      const std::string& final_path);
  // Removes the temporary file unless Commit() succeeded, so a failed or
  // abandoned write leaves nothing behind and the destination untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }
  // Bytes appended so far.
  uint64_t size() const { return size_; }

  // Appends all `size` bytes (see WriteFully; errors name the final path).
  absl::Status Write(const void* data, uint64_t size);
  absl::Status WriteZeros(uint64_t size);
  // Overwrites bytes already written, [offset, offset + size) within size()
  // (a header field known only after the data behind it: pwrite, the
  // append position unchanged). InvalidArgument past the end.
  absl::Status WriteAt(uint64_t offset, const void* data, uint64_t size);
  // fsync, close, rename over final_path, fsync the directory. On error the
  // destination keeps its old contents (or stays absent) and the temporary
  // file is removed by the destructor. A failed background flush (write_back.h)
  // fails the commit too.
  absl::Status Commit();

 private:
  AtomicFile(std::string final_path, std::string temp_path, int fd);
  std::string final_path_;
  std::string temp_path_;
  int fd_;
  uint64_t size_ = 0;
  // Sends what is appended back to disk as it goes (write_back.h), so
  // Commit's fsync finds at most the last stretch to flush.
  std::unique_ptr<support::WriteBack> write_back_;
  bool committed_ = false;
};

// Writes the concatenation of `pieces` to `path` through an AtomicFile.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces);

}  // namespace slimpack

#endif  // SLIMPACK_SUPPORT_ATOMIC_FILE_H_
