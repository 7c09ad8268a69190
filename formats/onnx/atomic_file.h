// A file written under a temporary name in its final directory and renamed
// into place only when complete (house style writer protocol: O_EXCL temp,
// loop on short writes, fsync file, rename, fsync directory).
#ifndef SLIMPACK_FORMATS_ONNX_ATOMIC_FILE_H_
#define SLIMPACK_FORMATS_ONNX_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack::onnx_format {

class AtomicFile {
 public:
  // Creates "<final_path>.tmp-<pid>-<random>" with O_EXCL. Errors name the
  // final path: NotFound (directory missing), PermissionDenied, ...
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      const std::string& final_path);
  // Removes the temporary file unless Commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::string& final_path() const { return final_path_; }
  // Appends all `size` bytes (retrying short writes and EINTR).
  // ResourceExhausted on ENOSPC/EDQUOT, naming the file and byte count.
  absl::Status Write(const void* data, uint64_t size);
  absl::Status WriteZeros(uint64_t size);
  // fsync, close, rename over final_path, fsync the directory.
  absl::Status Commit();

 private:
  AtomicFile(std::string final_path, std::string temp_path, int fd);
  std::string final_path_;
  std::string temp_path_;
  int fd_;
  bool committed_ = false;
};

// Maps a failed syscall's errno to a Status naming `what`.
absl::Status FileErrnoStatus(int err, const std::string& what);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_ATOMIC_FILE_H_
