// Atomic file replacement via temp + rename in the same directory, so a
// crash or ENOSPC never leaves a truncated model under the final name and
// an input that is still mmapped is never truncated in place.
#include "formats/onnx/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace slimpack::onnx_format {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string RandomSuffix() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

}  // namespace

absl::Status FileErrnoStatus(int err, const std::string& what) {
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
    default:
      return absl::UnknownError(msg);
  }
}

AtomicFile::AtomicFile(std::string final_path, std::string temp_path, int fd)
    : final_path_(std::move(final_path)),
      temp_path_(std::move(temp_path)),
      fd_(fd) {}

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(
    const std::string& final_path) {
  std::string temp = final_path + ".tmp-" + std::to_string(::getpid()) + "-" +
                     RandomSuffix();
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FileErrnoStatus(errno, final_path + " (temporary file)");
  return std::unique_ptr<AtomicFile>(new AtomicFile(final_path, temp, fd));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFile::Write(const void* data, uint64_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t left = size;
  while (left > 0) {
    // Linux writes at most 0x7ffff000 bytes per call anyway.
    size_t chunk = left > (1u << 30) ? (1u << 30) : static_cast<size_t>(left);
    ssize_t n = ::write(fd_, p, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileErrnoStatus(errno, final_path_ + ": writing " +
                                        std::to_string(size) + " bytes");
    }
    p += n;
    left -= static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::WriteZeros(uint64_t size) {
  static const uint8_t kZeros[4096] = {};
  while (size > 0) {
    uint64_t chunk = size < sizeof(kZeros) ? size : sizeof(kZeros);
    absl::Status s = Write(kZeros, chunk);
    if (!s.ok()) return s;
    size -= chunk;
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (::fsync(fd_) != 0) return FileErrnoStatus(errno, final_path_ + ": fsync");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return FileErrnoStatus(errno, final_path_ + ": close");
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    return FileErrnoStatus(errno, final_path_ + ": rename");
  }
  committed_ = true;
  // Makes the rename itself durable (a power loss after rename could
  // otherwise bring back the old directory entry).
  int dir = ::open(DirName(final_path_).c_str(),
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::onnx_format
