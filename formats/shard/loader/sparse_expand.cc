// Artifact::ExpandSparse: the sparse_2_4 layout (spec.md section 5,
// "Sparsity") back to dense elements of the tensor's dtype.
#include <cstring>
#include <string>

#include "formats/shard/loader/artifact.h"

namespace slimpack::loader {

Status Artifact::ExpandSparse(std::string_view name, void* out, uint64_t out_bytes) {
  const TensorInfo* info = FindTensor(name);
  if (info == nullptr) return NotFoundError(NoSuchTensor(name));
  const std::string ctx = dir_ + ": tensor '" + info->name + "'";
  if (info->layout.kind != LayoutKind::kSparse2of4) {
    return InvalidArgumentError(ctx + ": layout is not sparse_2_4");
  }
  // Open() has checked: f32/f16/bf16, rank >= 2, a multiple of 4 inputs per
  // row, nbytes = numel / 2 elements, indices u4 [rows, cols / 4].
  const uint64_t esize = shard::DTypeBits(info->dtype) / 8;
  const uint64_t groups = info->numel / shard::kSparseGroup;
  if (out_bytes != info->numel * esize) {
    return InvalidArgumentError(ctx + ": output holds " + std::to_string(out_bytes) +
                                " bytes, the dense tensor needs " +
                                std::to_string(info->numel * esize));
  }
  SLP_ASSIGN_OR_RETURN(TensorView values, GetTensor(name));
  SLP_ASSIGN_OR_RETURN(TensorView indices,
                       GetTensor(static_cast<size_t>(info->layout.indices)));
  if (values.size() != groups * shard::kSparseKept * esize ||
      indices.size() != (groups + 1) / 2) {
    return InvalidArgumentError(ctx + ": packed sizes disagree with the shape");
  }
  auto* dst = static_cast<uint8_t*>(out);
  std::memset(dst, 0, out_bytes);
  const uint8_t* v = values.data();
  const uint8_t* idx = indices.data();
  for (uint64_t g = 0; g < groups; ++g) {
    const unsigned nib = (idx[g / 2] >> (g % 2 * 4)) & 0xfu;
    const unsigned p0 = nib & 3u, p1 = nib >> 2;
    if (p0 >= p1) {
      return InvalidArgumentError(ctx + ": index nibble of group " + std::to_string(g) +
                                  " holds positions " + std::to_string(p0) + ", " +
                                  std::to_string(p1) + "; expected first < second");
    }
    std::memcpy(dst + (g * 4 + p0) * esize, v + g * 2 * esize, esize);
    std::memcpy(dst + (g * 4 + p1) * esize, v + (g * 2 + 1) * esize, esize);
  }
  return OkStatus();
}

}  // namespace slimpack::loader
