// Artifact: directory handling, manifest reading, views, verify().
#include "formats/shard/loader/artifact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "formats/shard/loader/sha256.h"

namespace slimpack::loader {
namespace {

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Names of staging files an interrupted writer left (spec.md section 8).
std::vector<std::string> ListStagingFiles(int dir_fd) {
  std::vector<std::string> out;
  int fd = ::dup(dir_fd);
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return out;
  }
  const std::string_view suffix = shard::kStagingSuffix;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() > suffix.size() &&
        name.substr(name.size() - suffix.size()) == suffix) {
      out.emplace_back(name);
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Reads exactly `size` bytes from the start of `fd`.
Status ReadAll(int fd, uint64_t size, std::string* out, const std::string& path) {
  out->resize(size);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgumentError(path + ": read failed: " + std::strerror(errno));
    if (n == 0) {
      return OutOfRangeError(path + ": file shrank while reading (" +
                             std::to_string(done) + " of " + std::to_string(size) +
                             " bytes)");
    }
    done += static_cast<uint64_t>(n);
  }
  return OkStatus();
}

// Streams `fd` through SHA-256; OutOfRange if it holds fewer than `size`.
Result<std::string> HashFile(int fd, uint64_t size, const std::string& path) {
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> buf(kChunk);
  Sha256 h;
  uint64_t done = 0;
  while (done < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgumentError(path + ": read failed: " + std::strerror(errno));
    if (n == 0) {
      return OutOfRangeError(path + ": truncated while hashing at byte " +
                             std::to_string(done));
    }
    h.Update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return Sha256::ToHex(h.Final());
}

}  // namespace

Result<std::unique_ptr<Artifact>> Artifact::Open(const std::string& dir,
                                                 const OpenOptions& options) {
  int dir_fd;
  do {
    dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (dir_fd < 0 && errno == EINTR);
  if (dir_fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError(dir + ": artifact directory not found");
    if (err == ENOTDIR) {
      return InvalidArgumentError(dir + ": not a directory (an artifact is a "
                                        "directory holding manifest.json)");
    }
    if (err == EACCES) return PermissionDeniedError(dir + ": " + std::strerror(err));
    return InvalidArgumentError(dir + ": cannot open: " + std::strerror(err));
  }
  FdCloser dir_closer(dir_fd);
  const std::string manifest_path = dir + "/" + std::string(shard::kManifestFileName);
  Result<OpenedFile> opened =
      OpenRegularFileAt(dir_fd, std::string(shard::kManifestFileName), manifest_path);
  if (!opened.ok()) {
    if (opened.status().code() != StatusCode::kNotFound) return opened.status();
    std::vector<std::string> staging = ListStagingFiles(dir_fd);
    std::string msg = manifest_path + ": not found; ";
    if (staging.empty()) {
      msg += "this is not a slimpack artifact directory";
    } else {
      msg += "incomplete artifact: a writer was interrupted and left staging files (";
      for (size_t i = 0; i < staging.size() && i < 5; ++i) {
        msg += (i ? ", " : "") + staging[i];
      }
      msg += staging.size() > 5 ? ", ...)" : ")";
    }
    return NotFoundError(msg);
  }
  FdCloser manifest_closer(opened->fd);
  if (opened->size > shard::kMaxManifestBytes) {
    return ResourceExhaustedError(manifest_path + ": " + std::to_string(opened->size) +
                                  " bytes exceeds the manifest size cap of " +
                                  std::to_string(shard::kMaxManifestBytes) + " bytes");
  }
  std::string text;
  SLP_RETURN_IF_ERROR(ReadAll(opened->fd, opened->size, &text, manifest_path));

  ManifestOptions mopts;
  mopts.check_self_hash = options.check_manifest_hash;
  SLP_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_path, mopts));

  std::unique_ptr<Artifact> a(new Artifact());
  a->dir_ = dir;
  a->manifest_ = std::move(manifest);
  a->dir_fd_ = dir_closer.release();
  a->cache_ = std::make_unique<ShardCache>(a->dir_fd_, dir, &a->manifest_,
                                           options.memory_budget_bytes, options.advice);
  return a;
}

Artifact::~Artifact() {
  cache_.reset();
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

const TensorInfo* Artifact::FindTensor(std::string_view name) const {
  const int32_t i = manifest_.FindTensor(name);
  return i < 0 ? nullptr : &manifest_.tensors[static_cast<size_t>(i)];
}

std::string Artifact::NoSuchTensor(std::string_view name) const {
  return dir_ + ": no tensor named '" + std::string(name) + "' (the artifact has " +
         std::to_string(manifest_.tensors.size()) + " tensors)";
}

Result<TensorView> Artifact::GetTensor(std::string_view name) {
  const int32_t i = manifest_.FindTensor(name);
  if (i < 0) return NotFoundError(NoSuchTensor(name));
  return GetTensor(static_cast<size_t>(i));
}

Result<TensorView> Artifact::GetTensor(size_t index) {
  if (index >= manifest_.tensors.size()) {
    return OutOfRangeError(dir_ + ": tensor index " + std::to_string(index) +
                           " out of range (" + std::to_string(manifest_.tensors.size()) +
                           " tensors)");
  }
  const TensorInfo& info = manifest_.tensors[index];
  Result<std::shared_ptr<const ShardMapping>> mapping = cache_->Get(info.shard);
  if (!mapping.ok()) {
    return mapping.status().Annotate("tensor '" + info.name + "'");
  }
  TensorView v;
  v.info_ = &info;
  v.mapping_ = std::move(mapping).value();
  v.data_ = v.mapping_->At(info.offset);
  return v;
}

Status Artifact::CheckTyped(const TensorInfo& info, DType want) const {
  if (info.layout.kind != LayoutKind::kPlain) {
    return InvalidArgumentError("tensor '" + info.name +
                                "' is quantized; use DequantizeToF32 or GetTensor");
  }
  if (info.dtype != want) {
    return InvalidArgumentError("tensor '" + info.name + "' has dtype " +
                                std::string(shard::DTypeName(info.dtype)) +
                                ", requested " + std::string(shard::DTypeName(want)));
  }
  return OkStatus();
}

Status Artifact::DequantizeToF32(std::string_view name, float* out,
                                 uint64_t out_count, DequantImpl impl) {
  const TensorInfo* info = FindTensor(name);
  if (info == nullptr) return NotFoundError(NoSuchTensor(name));
  SLP_ASSIGN_OR_RETURN(TensorView q, GetTensor(name));
  QuantizedTensorRef ref;
  ref.layout = info->layout.kind;
  ref.dtype = info->dtype;
  ref.shape = info->shape;
  ref.axis = info->layout.axis;
  ref.group_size = info->layout.group_size;
  ref.block_rows = info->layout.block_rows;
  ref.block_type = info->layout.block_type;
  ref.data = q.data();
  ref.data_bytes = q.size();
  // A 2:4 packed float tensor: expand it, then convert it as plain.
  std::vector<uint8_t> dense;
  if (info->layout.kind == LayoutKind::kSparse2of4) {
    dense.resize(info->numel * (shard::DTypeBits(info->dtype) / 8));
    SLP_RETURN_IF_ERROR(ExpandSparse(name, dense.data(), dense.size()));
    ref.layout = LayoutKind::kPlain;
    ref.data = dense.data();
    ref.data_bytes = dense.size();
  }
  TensorView scale, zp;
  if (info->layout.scale >= 0) {
    SLP_ASSIGN_OR_RETURN(scale, GetTensor(static_cast<size_t>(info->layout.scale)));
    ref.scale = scale.data();
    ref.scale_count = scale.info().numel;
    ref.scale_dtype = scale.info().dtype;
  }
  if (info->layout.zero_point >= 0) {
    SLP_ASSIGN_OR_RETURN(zp, GetTensor(static_cast<size_t>(info->layout.zero_point)));
    ref.zero_point = zp.data();
    ref.zero_point_bytes = zp.size();
  }
  Status s = loader::DequantizeToF32(ref, out, out_count, impl);
  return s.Annotate(dir_ + ": tensor '" + info->name + "'");
}

Result<std::vector<float>> Artifact::DequantizeToF32(std::string_view name) {
  const TensorInfo* info = FindTensor(name);
  if (info == nullptr) return NotFoundError(NoSuchTensor(name));
  std::vector<float> out(info->numel);
  SLP_RETURN_IF_ERROR(DequantizeToF32(name, out.data(), out.size()));
  return out;
}

Status Artifact::Prefetch(std::string_view name) {
  SLP_ASSIGN_OR_RETURN(TensorView v, GetTensor(name));
  v.mapping_->Advise(v.info().offset, v.size(), MADV_WILLNEED);
  return OkStatus();
}

Status Artifact::VerifyFile(const std::string& file, uint64_t size,
                            const std::string& sha256) const {
  const std::string path = dir_ + "/" + file;
  SLP_ASSIGN_OR_RETURN(OpenedFile f, OpenRegularFileAt(dir_fd_, file, path));
  FdCloser closer(f.fd);
  if (f.size != size) {
    return (f.size < size ? OutOfRangeError : DataLossError)(
        path + ": size " + std::to_string(f.size) + " bytes, manifest says " +
        std::to_string(size));
  }
  SLP_ASSIGN_OR_RETURN(std::string actual, HashFile(f.fd, size, path));
  if (actual != sha256) {
    return DataLossError(path + ": SHA-256 mismatch: manifest says " + sha256 +
                         ", file has " + actual);
  }
  return OkStatus();
}

Status Artifact::VerifyShard(size_t index) const {
  if (index >= manifest_.shards.size()) {
    return OutOfRangeError(dir_ + ": shard index " + std::to_string(index) +
                           " out of range");
  }
  const ShardInfo& s = manifest_.shards[index];
  {
    // The header check that mapping the shard makes first (the same
    // function), so a shard that loading rejects never verifies, even with
    // its hash recomputed. Size mismatches are VerifyFile's to report.
    const std::string path = dir_ + "/" + s.file;
    SLP_ASSIGN_OR_RETURN(OpenedFile f, OpenRegularFileAt(dir_fd_, s.file, path));
    FdCloser closer(f.fd);
    if (f.size == s.size && f.size >= shard::kShardHeaderSize) {
      std::string header;
      SLP_RETURN_IF_ERROR(ReadAll(f.fd, shard::kShardHeaderSize, &header, path));
      SLP_RETURN_IF_ERROR(
          CheckShardHeader(reinterpret_cast<const uint8_t*>(header.data()), s, path));
    }
  }
  return VerifyFile(s.file, s.size, s.sha256);
}

Status Artifact::Verify() const {
  const std::string manifest_path = dir_ + "/" + std::string(shard::kManifestFileName);
  SLP_ASSIGN_OR_RETURN(OpenedFile mf, OpenRegularFileAt(
                                          dir_fd_, std::string(shard::kManifestFileName),
                                          manifest_path));
  FdCloser closer(mf.fd);
  if (mf.size > shard::kMaxManifestBytes) {
    return DataLossError(manifest_path + ": changed since open (now " +
                         std::to_string(mf.size) + " bytes)");
  }
  std::string text;
  SLP_RETURN_IF_ERROR(ReadAll(mf.fd, mf.size, &text, manifest_path));
  Result<std::string> self = ComputeManifestSelfHash(text);
  if (!self.ok() || *self != manifest_.manifest_sha256) {
    return DataLossError(manifest_path + ": manifest checksum mismatch: recorded " +
                         manifest_.manifest_sha256 + ", computed " +
                         (self.ok() ? *self : self.status().message()));
  }
  for (size_t i = 0; i < manifest_.shards.size(); ++i) {
    SLP_RETURN_IF_ERROR(VerifyShard(i));
  }
  for (const FileDigest& f : manifest_.carried_files) {
    SLP_RETURN_IF_ERROR(VerifyFile(f.file, f.size, f.sha256));
  }
  return OkStatus();
}

Result<std::string> Artifact::CarriedFilePath(std::string_view file) const {
  for (const FileDigest& f : manifest_.carried_files) {
    if (f.file == file) return dir_ + "/" + f.file;
  }
  return NotFoundError(dir_ + ": the manifest lists no carried file '" +
                       std::string(file) + "'");
}

}  // namespace slimpack::loader
