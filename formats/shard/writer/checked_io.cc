// Checked POSIX I/O for the artifact writer; errno mapping and the write
// loop are support/atomic_file's, shared with the single-file writers.
#include "formats/shard/writer/checked_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/atomic_file.h"

namespace slimpack::shard_writer {

absl::Status ErrnoStatus(int err, const std::string& what) {
  return ErrnoToStatus(err, what);
}

absl::Status WriteAll(int fd, const void* data, uint64_t size,
                      const std::string& path, uint64_t offset) {
  return WriteFully(fd, data, size, path, offset);
}

absl::Status Preallocate(int fd, uint64_t size, const std::string& path) {
  if (size == 0) return absl::OkStatus();
  int rc;
  do {
    rc = ::fallocate(fd, 0, 0, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return absl::OkStatus();
  if (errno == EOPNOTSUPP || errno == ENOSYS) return absl::OkStatus();
  return ErrnoStatus(errno, path + ": reserving " + std::to_string(size) +
                                " bytes");
}

absl::Status Fsync(int fd, const std::string& path) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoStatus(errno, path + ": fsync");
  return absl::OkStatus();
}

absl::Status Close(int fd, const std::string& path) {
  // Retrying close() after EINTR may close a descriptor another thread just
  // opened, so it is called once.
  if (::close(fd) != 0 && errno != EINTR) {
    return ErrnoStatus(errno, path + ": close");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> CreateExclusive(int dir_fd, const std::string& name,
                                    const std::string& path_for_errors) {
  int fd;
  do {
    fd = ::openat(dir_fd, name.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, path_for_errors + ": create");
  return fd;
}

}  // namespace slimpack::shard_writer
