// Confined opening of external data files. openat2 lets the kernel enforce
// "beneath the model directory, no symlinks" atomically; without it (old
// kernels, seccomp filters) each component is opened with O_NOFOLLOW.
#include "formats/onnx/safe_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#if defined(__has_include)
#if __has_include(<linux/openat2.h>) && defined(SYS_openat2)
#include <linux/openat2.h>
#define SLIMPACK_HAVE_OPENAT2 1
#endif
#endif

namespace slimpack::onnx_format {
namespace {

// Closes the descriptor on scope exit unless released.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Splits on both separators so a Windows-style "..\\x" is also caught.
std::vector<std::string> SplitAnySeparator(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == '/' || c == '\\') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// Components of a POSIX path without empty and "." entries.
std::vector<std::string> PathComponents(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    if (!part.empty() && part != ".") out.push_back(part);
    start = end + 1;
  }
  return out;
}

absl::Status SymlinkError(const std::string& location) {
  return absl::InvalidArgumentError(
      "external data location '" + location +
      "' is or passes through a symbolic link; only regular files inside "
      "the model directory are read");
}

absl::Status OpenErrnoStatus(int err, const std::string& location) {
  switch (err) {
    case ENOENT:
      return absl::NotFoundError("external data file '" + location +
                                 "' does not exist in the model directory");
    case ENOTDIR:
      return absl::NotFoundError("external data location '" + location +
                                 "': a path component is not a directory");
    case ELOOP:
      return SymlinkError(location);
    case EXDEV:
      return absl::InvalidArgumentError("external data location '" +
                                        location +
                                        "' escapes the model directory");
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError("external data file '" + location +
                                         "': " + std::strerror(err));
    default:
      return absl::InvalidArgumentError("external data file '" + location +
                                        "': " + std::strerror(err));
  }
}

// A hard link may alias a file outside the model directory (e.g. created by
// an attacker who can write only into the directory), so only files with a
// single link are read (onnx docs/ExternalDataSecurity.md layer 4).
absl::Status CheckOpenedFile(int fd, const std::string& location) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return OpenErrnoStatus(errno, location);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError("external data location '" + location +
                                      "' is not a regular file");
  }
  if (st.st_nlink > 1) {
    return absl::InvalidArgumentError(
        "external data file '" + location + "' has " +
        std::to_string(static_cast<uint64_t>(st.st_nlink)) +
        " hard links; refusing a file that may alias one outside the model "
        "directory");
  }
  return absl::OkStatus();
}

constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

// Returns the fd, or -1 with `*err` set. ENOSYS in `*err` means openat2 is
// unusable here and the caller should fall back.
int OpenWithOpenat2(int dir_fd, const std::string& location, int* err) {
#ifdef SLIMPACK_HAVE_OPENAT2
  struct open_how how;
  std::memset(&how, 0, sizeof(how));
  how.flags = kFileFlags;
  how.resolve =
      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dir_fd, location.c_str(), &how, sizeof(how));
  } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
  if (fd >= 0) return static_cast<int>(fd);
  *err = errno;
  // Seccomp profiles of some container runtimes answer EPERM for unknown
  // syscalls; old kernels answer ENOSYS; E2BIG/EINVAL mean a struct or flag
  // this kernel does not know.
  if (*err == EPERM || *err == E2BIG || *err == EINVAL) *err = ENOSYS;
  return -1;
#else
  (void)dir_fd;
  (void)location;
  *err = ENOSYS;
  return -1;
#endif
}

absl::StatusOr<int> OpenByComponentWalk(int dir_fd,
                                        const std::string& location) {
  std::vector<std::string> parts = PathComponents(location);
  if (parts.empty()) {
    return absl::InvalidArgumentError("external data location '" + location +
                                      "' names no file");
  }
  ScopedFd dir(-1);  // -1: still at dir_fd, which we do not own
  auto current = [&] { return dir.get() >= 0 ? dir.get() : dir_fd; };
  for (size_t i = 0; i < parts.size(); ++i) {
    struct stat st;
    if (::fstatat(current(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) !=
        0) {
      return OpenErrnoStatus(errno, location);
    }
    // The lstat gives a clear message; O_NOFOLLOW below closes the race.
    if (S_ISLNK(st.st_mode)) return SymlinkError(location);
    bool last = i + 1 == parts.size();
    int flags = last ? kFileFlags
                     : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(current(), parts[i].c_str(), flags);
    if (fd < 0) return OpenErrnoStatus(errno, location);
    if (last) return fd;
    dir.reset(fd);
  }
  return absl::InternalError("unreachable: empty component list");
}

}  // namespace

absl::Status ValidateRelativeLocation(const std::string& location) {
  if (location.empty()) {
    return absl::InvalidArgumentError("external data location is empty");
  }
  if (location.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        "external data location contains a NUL byte");
  }
  if (location == kOrtMemAddrMarker) {
    return absl::InvalidArgumentError(
        "external data location '" + location +
        "' is ONNX Runtime's in-memory address marker, not a file");
  }
  if (location[0] == '/' || location[0] == '\\') {
    return absl::InvalidArgumentError("external data location '" + location +
                                      "' is absolute; it must be relative "
                                      "to the model directory");
  }
  for (const std::string& part : SplitAnySeparator(location)) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          "external data location '" + location +
          "' has a '..' component; it must stay inside the model directory");
    }
  }
  return absl::OkStatus();
}

std::string NormalizeRelativeLocation(const std::string& location) {
  std::string out;
  for (const std::string& part : PathComponents(location)) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

absl::StatusOr<int> OpenBeneath(int dir_fd, const std::string& location,
                                OpenStrategy strategy) {
  absl::Status valid = ValidateRelativeLocation(location);
  if (!valid.ok()) return valid;
  int fd = -1;
  int err = ENOSYS;
  if (strategy == OpenStrategy::kAuto) {
    fd = OpenWithOpenat2(dir_fd, location, &err);
    if (fd < 0 && err != ENOSYS) return OpenErrnoStatus(err, location);
  }
  if (fd < 0) {
    absl::StatusOr<int> walked = OpenByComponentWalk(dir_fd, location);
    if (!walked.ok()) return walked.status();
    fd = *walked;
  }
  ScopedFd owned(fd);
  absl::Status checked = CheckOpenedFile(fd, location);
  if (!checked.ok()) return checked;
  return owned.release();
}

}  // namespace slimpack::onnx_format
