// mkstemp in the target directory (same filesystem, so rename is atomic),
// write, fsync, rename.
#include "formats/numpy/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace slimpack::numpy {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& path, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM || err == EROFS) return absl::PermissionDeniedError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces) {
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return ErrnoError("cannot create temporary file", path, errno);
  auto fail = [&](const std::string& what, int err) {
    close(fd);
    unlink(tmp.c_str());
    return ErrnoError(what, path, err);
  };
  for (std::string_view piece : pieces) {
    const char* p = piece.data();
    size_t left = piece.size();
    while (left > 0) {
      const ssize_t n = write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail("write failed", errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  // mkstemp creates 0600; outputs are meant to be shared like any file.
  // (Reading the umask would need umask(), which is not thread-safe.)
  if (fchmod(fd, 0644) != 0) return fail("chmod failed", errno);
  if (fsync(fd) != 0) return fail("fsync failed", errno);
  if (close(fd) != 0) {
    unlink(tmp.c_str());
    return ErrnoError("close failed", path, errno);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoError("rename failed", path, err);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::numpy
