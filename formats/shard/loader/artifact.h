// The runtime loader's C++ API: open an artifact directory, look tensors up
// by name in O(1), get zero-copy views into lazily mapped shards, verify
// checksums, and dequantize to f32. Standard library only.
//
//   auto artifact = slimpack::loader::Artifact::Open("/data/model");
//   if (!artifact.ok()) { log(artifact.status().ToString()); return; }
//   auto w = (*artifact)->GetTyped<float>("decoder.0.weight");
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_ARTIFACT_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_ARTIFACT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/loader/dequantize.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/shard_cache.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader {

struct OpenOptions {
  // Upper bound on bytes of shard mappings the artifact keeps; when a new
  // mapping goes over it, least recently used shards are unmapped (a shard in
  // use by a live TensorView stays mapped until the view is gone). 0 means
  // unlimited. A single shard larger than the budget is still mapped.
  uint64_t memory_budget_bytes = 0;
  // madvise() hint for each shard mapping.
  AccessAdvice advice = AccessAdvice::kNormal;
  // Check manifest_sha256 at open (verify() always checks it).
  bool check_manifest_hash = true;
};

// Element types for typed views of f16 / bf16 tensors (raw bits).
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// dtype a C++ element type corresponds to.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// Zero-copy bytes of one tensor. Keeps its shard mapped while it lives,
// even if the artifact's memory budget evicts the shard from its cache. The
// pointer is 64-byte aligned (spec.md section 2). Must not outlive the
// Artifact it came from (it refers to the Artifact's TensorInfo).
class TensorView {
 public:
  TensorView() = default;
  const TensorInfo& info() const { return *info_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return info_ ? info_->nbytes : 0; }

 private:
  friend class Artifact;
  const TensorInfo* info_ = nullptr;
  const uint8_t* data_ = nullptr;
  std::shared_ptr<const ShardMapping> mapping_;
};

// A TensorView whose elements are T (checked against the dtype).
template <typename T>
class TypedView {
 public:
  const T* data() const { return reinterpret_cast<const T*>(view_.data()); }
  uint64_t size() const { return view_.info().numel; }
  const T& operator[](uint64_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const TensorInfo& info() const { return view_.info(); }

 private:
  friend class Artifact;
  TensorView view_;
};

class Artifact {
 public:
  // Parses and validates `dir`/manifest.json (spec.md section 9) without
  // touching any shard. NotFound if the directory or manifest is missing
  // (mentioning staging files of an interrupted writer), and the codes of
  // ParseManifest otherwise; every message names the file.
  static Result<std::unique_ptr<Artifact>> Open(const std::string& dir,
                                                const OpenOptions& options = {});
  ~Artifact();
  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  size_t num_tensors() const { return manifest_.tensors.size(); }
  const TensorInfo& tensor(size_t index) const { return manifest_.tensors[index]; }
  // O(1); nullptr if there is no such tensor.
  const TensorInfo* FindTensor(std::string_view name) const;

  // Zero-copy view; maps the tensor's shard on first use (after checking its
  // size and header). NotFound for an unknown name; shard errors as
  // ShardCache::Get. Thread-safe.
  Result<TensorView> GetTensor(std::string_view name);
  Result<TensorView> GetTensor(size_t index);

  // InvalidArgument if the tensor's dtype is not T's or its layout is not
  // plain (packed 4-bit tensors have no typed view; use GetTensor).
  template <typename T>
  Result<TypedView<T>> GetTyped(std::string_view name) {
    const TensorInfo* info = FindTensor(name);
    if (info == nullptr) return NotFoundError(NoSuchTensor(name));
    SLP_RETURN_IF_ERROR(CheckTyped(*info, DTypeOf<T>::value));
    SLP_ASSIGN_OR_RETURN(TensorView v, GetTensor(name));
    TypedView<T> typed;
    typed.view_ = std::move(v);
    return typed;
  }

  // Dequantizes (or converts plain f32/f16/bf16) into out[0, numel).
  Status DequantizeToF32(std::string_view name, float* out, uint64_t out_count,
                         DequantImpl impl = DequantImpl::kBest);
  Result<std::vector<float>> DequantizeToF32(std::string_view name);

  // Expands a sparse_2_4 tensor (spec.md section 5, "Sparsity") into `out`
  // as dense elements of its dtype, numel * element bytes, pruned positions
  // +0. InvalidArgument naming the tensor for another layout, a wrong
  // out_bytes or a corrupt index nibble (naming the group); NotFound for an
  // unknown name. DequantizeToF32 also accepts sparse_2_4 tensors.
  Status ExpandSparse(std::string_view name, void* out, uint64_t out_bytes);
  // MADV_WILLNEED on the tensor's pages (maps its shard if needed).
  Status Prefetch(std::string_view name);

  // SHA-256 and size of every shard and carried file, and the manifest
  // self-hash. DataLoss naming the file with both digests on a mismatch.
  // Each shard's header first passes CheckShardHeader (shard_cache.h), the
  // check mapping it makes, with the same error, so an artifact that
  // verifies never fails to load. Reads with pread, never through the
  // mappings.
  Status Verify() const;
  Status VerifyShard(size_t index) const;

  // `dir`/`file` for a carried file listed in the manifest; NotFound if the
  // manifest does not list it.
  Result<std::string> CarriedFilePath(std::string_view file) const;

  uint64_t mapped_bytes() const { return cache_->mapped_bytes(); }
  size_t mapped_shards() const { return cache_->mapped_shards(); }

 private:
  Artifact() = default;
  std::string NoSuchTensor(std::string_view name) const;
  Status CheckTyped(const TensorInfo& info, DType want) const;
  Status VerifyFile(const std::string& file, uint64_t size,
                    const std::string& sha256) const;

  std::string dir_;
  int dir_fd_ = -1;
  Manifest manifest_;
  std::unique_ptr<ShardCache> cache_;
};

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_ARTIFACT_H_
