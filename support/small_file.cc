#include "support/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "support/file_type.h"

namespace slimpack::support {
namespace {

absl::Status ErrnoError(int err, const std::string& path) {
  std::string msg = path + ": " + std::strerror(err);
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InvalidArgumentError(msg);
}

}  // namespace

absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          uint64_t max_bytes) {
  // O_NONBLOCK: without it, open() of a FIFO (`convert --recipe <fifo>`)
  // waits for a writer forever, before the S_ISREG check below can refuse
  // it. For a regular file the flag changes nothing; it is cleared below.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoError(errno, path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(path + ": is " + FileTypeName(st.st_mode) +
                                      ", not a regular file");
  }
  // Back to blocking reads; a regular file never returns EAGAIN anyway.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, path);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return absl::InvalidArgumentError(
        path + ": file is " + std::to_string(size) + " bytes, over the " +
        std::to_string(max_bytes) + "-byte limit for JSON side files");
  }
  std::string text(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, text.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoError(err, path);
    }
    if (n == 0) break;  // shrank while reading
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (done != size) {
    return absl::OutOfRangeError(path + ": read " + std::to_string(done) +
                                 " of " + std::to_string(size) +
                                 " bytes (file changed while reading)");
  }
  return text;
}

}  // namespace slimpack::support
