#include "support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"

namespace slimpack {
namespace {

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InvalidArgumentError(msg);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<MappedFile>> MappedFile::Open(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO planted where a file belongs would wait
  // for a writer forever; the regular-file check after fstat refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, path);
  return FromFd(fd, path);
}

absl::StatusOr<std::shared_ptr<MappedFile>> MappedFile::FromFd(
    int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(path + ": not a regular file");
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, path + ": mmap");
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace slimpack
