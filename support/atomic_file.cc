// Temp + fsync + rename: a crash, ENOSPC or a failed step never leaves a
// truncated file under the final name, and an input that is still mmapped
// from the old file keeps its inode.
#include "support/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>


namespace slimpack {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Hidden and unguessable, so concurrent writers never collide and stale
// temporaries are recognisable.
std::string TempPathFor(const std::string& path) {
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%08x%08x", rd(), rd());
  std::string dir = DirName(path);
  std::string prefix = path.rfind('/') == std::string::npos ? ""
                       : dir == "/"                         ? "/"
                                                            : dir + "/";
  return prefix + "." + BaseName(path) + ".tmp-" + std::to_string(::getpid()) +
         "-" + hex;
}

}  // namespace

absl::Status ErrnoToStatus(int err, const std::string& what) {
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
      return absl::UnknownError(msg);
  }
}

absl::Status WriteFully(int fd, const void* data, uint64_t size,
                        const std::string& path, uint64_t offset) {
  // Linux writes at most about 2 GiB per call; ask for 1 GiB at a time.
  constexpr uint64_t kMaxWrite = 1ull << 30;
  const char* p = static_cast<const char*>(data);
  uint64_t done = 0;
  while (done < size) {
    uint64_t want = size - done < kMaxWrite ? size - done : kMaxWrite;
    ssize_t n = ::write(fd, p + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, path + ": writing " + std::to_string(size) +
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

AtomicFile::AtomicFile(std::string final_path, std::string temp_path, int fd)
    : final_path_(std::move(final_path)),
      temp_path_(std::move(temp_path)),
      fd_(fd),
      write_back_(std::make_unique<support::WriteBack>(fd)) {}

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(
    const std::string& final_path) {
  std::string temp = TempPathFor(final_path);
  int fd;
  do {
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, final_path + " (temporary file)");
  return std::unique_ptr<AtomicFile>(new AtomicFile(final_path, temp, fd));
}

AtomicFile::~AtomicFile() {
  write_back_.reset();  // joins a running flush before the close
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFile::Write(const void* data, uint64_t size) {
  absl::Status status = WriteFully(fd_, data, size, final_path_, size_);
  if (!status.ok()) return status;
  size_ += size;
  write_back_->Appended(size_);
  return status;
}

absl::Status AtomicFile::WriteAt(uint64_t offset, const void* data, uint64_t size) {
  if (offset > size_ || size > size_ - offset) {
    return absl::InvalidArgumentError(final_path_ + ": overwriting " + std::to_string(size) +
                                      " bytes at offset " + std::to_string(offset) +
                                      " past the " + std::to_string(size_) + " written");
  }
  const char* p = static_cast<const char*>(data);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd_, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, final_path_ + ": writing " + std::to_string(size) +
                                      " bytes at offset " + std::to_string(offset + done));
    }
    if (n == 0) {
      return absl::ResourceExhaustedError(final_path_ + ": the file system accepted 0 bytes at "
                                          "offset " + std::to_string(offset + done));
    }
    done += static_cast<uint64_t>(n);
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
  if (fd_ < 0) {
    return absl::FailedPreconditionError(final_path_ +
                                         ": already committed or closed");
  }
  // A background flush's failure may have been consumed by it (Linux
  // reports a writeback error once per open file), so it is reported here
  // even when the fsync below succeeds.
  if (const int err = write_back_->Finish(); err != 0) {
    return ErrnoToStatus(err, final_path_ + ": fdatasync");
  }
  int rc;
  do {
    rc = ::fsync(fd_);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoToStatus(errno, final_path_ + ": fsync");
  int fd = fd_;
  fd_ = -1;
  // Called once: retrying close() after EINTR may close another thread's
  // new descriptor. NFS reports quota errors here.
  if (::close(fd) != 0 && errno != EINTR) {
    return ErrnoToStatus(errno, final_path_ + ": close");
  }
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    return ErrnoToStatus(errno, final_path_ + ": rename");
  }
  committed_ = true;
  // Makes the rename itself durable (after a power loss the old directory
  // entry could otherwise come back).
  int dir = ::open(DirName(final_path_).c_str(),
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    rc = ::fsync(dir);
    int err = errno;
    ::close(dir);
    if (rc != 0 && err != EINVAL) {
      return ErrnoToStatus(err, final_path_ + ": fsync of the directory");
    }
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces) {
  auto file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  for (std::string_view piece : pieces) {
    absl::Status s = (*file)->Write(piece.data(), piece.size());
    if (!s.ok()) return s;
  }
  return (*file)->Commit();
}

}  // namespace slimpack
