#include "formats/shard/writer/file_digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "formats/shard/writer/checked_io.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

constexpr uint64_t kBufferBytes = 1 << 20;

std::string Hex(const unsigned char* d, unsigned int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (unsigned int i = 0; i < n; ++i) {
    out[2 * i] = kDigits[d[i] >> 4];
    out[2 * i + 1] = kDigits[d[i] & 15];
  }
  return out;
}

// Opens `path` read-only and checks it is a regular file.
absl::StatusOr<int> OpenRegular(const std::string& path, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO planted where a file belongs would wait
  // for a writer forever; the regular-file check after fstat refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, path);
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
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Reads up to `size` bytes, retrying EINTR; returns the count (0 at EOF).
absl::StatusOr<uint64_t> ReadSome(int fd, void* buf, uint64_t size,
                                  const std::string& path, uint64_t offset) {
  for (;;) {
    ssize_t n = ::read(fd, buf, size);
    if (n >= 0) return static_cast<uint64_t>(n);
    if (errno != EINTR) {
      return ErrnoStatus(errno,
                         path + ": reading at offset " + std::to_string(offset));
    }
  }
}

}  // namespace

struct Sha256Stream::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256Stream::Sha256Stream() : impl_(new Impl) {
  impl_->ctx = EVP_MD_CTX_new();
  // Allocation failure or a missing SHA-256 in libcrypto is not a property
  // of any input: our environment is broken.
  CHECK(impl_->ctx != nullptr);
  CHECK(EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1);
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256Stream::Update(const void* data, uint64_t size) {
  if (size == 0) return;
  CHECK(EVP_DigestUpdate(impl_->ctx, data, size) == 1);
}

std::string Sha256Stream::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  CHECK(EVP_DigestFinal_ex(impl_->ctx, digest, &n) == 1);
  return Hex(digest, n);
}

std::string Sha256Stream::HashHex(const void* data, uint64_t size) {
  Sha256Stream s;
  s.Update(data, size);
  return s.FinishHex();
}

absl::StatusOr<FileDigest> HashFile(const std::string& path) {
  uint64_t expected = 0;
  ASSIGN_OR_RETURN(int fd, OpenRegular(path, &expected));
  Sha256Stream sha;
  FileDigest digest;
  std::vector<uint8_t> buf(kBufferBytes);
  absl::Status status;
  for (;;) {
    auto n = ReadSome(fd, buf.data(), buf.size(), path, digest.size);
    if (!n.ok()) {
      status = n.status();
      break;
    }
    if (*n == 0) break;
    sha.Update(buf.data(), *n);
    digest.size += *n;
  }
  ::close(fd);
  RETURN_IF_ERROR(status);
  if (digest.size != expected) {
    return absl::DataLossError(path + ": changed size while being read (" +
                               std::to_string(expected) + " bytes before, " +
                               std::to_string(digest.size) + " read)");
  }
  digest.sha256 = sha.FinishHex();
  return digest;
}

absl::StatusOr<FileDigest> CopyFileHashed(
    const std::string& src_path, int dir_fd, const std::string& name,
    const std::string& dst_path_for_errors) {
  uint64_t expected = 0;
  ASSIGN_OR_RETURN(int in, OpenRegular(src_path, &expected));
  auto out = CreateExclusive(dir_fd, name, dst_path_for_errors);
  if (!out.ok()) {
    ::close(in);
    return out.status();
  }
  std::vector<uint8_t> buf(kBufferBytes);
  Sha256Stream sha;
  FileDigest digest;
  absl::Status status = Preallocate(*out, expected, dst_path_for_errors);
  while (status.ok()) {
    auto n = ReadSome(in, buf.data(), buf.size(), src_path, digest.size);
    if (!n.ok()) {
      status = n.status();
      break;
    }
    if (*n == 0) break;
    sha.Update(buf.data(), *n);
    status = WriteAll(*out, buf.data(), *n, dst_path_for_errors, digest.size);
    digest.size += *n;
  }
  ::close(in);
  if (status.ok()) status = Fsync(*out, dst_path_for_errors);
  absl::Status closed = Close(*out, dst_path_for_errors);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(closed);
  if (digest.size != expected) {
    return absl::DataLossError(src_path + ": changed size while being copied (" +
                               std::to_string(expected) + " bytes before, " +
                               std::to_string(digest.size) + " copied)");
  }
  digest.sha256 = sha.FinishHex();
  return digest;
}

}  // namespace slimpack::shard_writer
