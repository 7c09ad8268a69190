#include "formats/shard/writer/checked_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace slimpack::shard_writer {

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status WriteAll(int fd, const void* data, uint64_t size,
                      const std::string& path, uint64_t offset) {
  // Linux caps one write() at about 2 GiB; ask for at most 1 GiB at a time.
  constexpr uint64_t kMaxWrite = 1ull << 30;
  const char* p = static_cast<const char*>(data);
  uint64_t done = 0;
  while (done < size) {
    uint64_t want = size - done < kMaxWrite ? size - done : kMaxWrite;
    ssize_t n = ::write(fd, p + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, path + ": writing " + std::to_string(size) +
                                    " bytes at offset " +
                                    std::to_string(offset + done));
    }
    if (n == 0) {
      // write() returning 0 for a non-zero request would loop forever.
      return absl::ResourceExhaustedError(
          path + ": writing " + std::to_string(size) + " bytes at offset " +
          std::to_string(offset + done) + ": the file system accepted 0 bytes");
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
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
