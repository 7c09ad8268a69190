// Quantized tensors in the IR (formats/shard/spec.md, "Layouts"): checking a
// QuantLayout against its scale / zero-point tensors, and the reference
// dequantization x = float32(q - zp) * scale every consumer must match
// bit for bit (the loader's kernels, the interpreter, tests).
#ifndef SLIMPACK_IR_QUANT_H_
#define SLIMPACK_IR_QUANT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::ir {

// Manifest names of the kinds ("plain", "int8_per_channel",
// "int4_groupwise", "int8_groupwise", "ggml_blocks", "fp8_e4m3_groupwise") and the inverse (nullopt-like kNone for "plain"; false
// for an unknown name).
std::string_view QuantKindName(QuantKind k);
bool QuantKindFromName(std::string_view name, QuantKind* out);

// The shape the spec requires of the scale (and zero point) of `q`:
// [dims[axis]] for int8_per_channel; dims with dims[axis] replaced by
// ceil(dims[axis] / group_size) for the group-wise kinds, and fp8 with
// block_rows R > 1 also dims[0] by ceil(dims[0] / R). Only meaningful once the
// axis / group size are known to be valid (ValidateQuantLayout).
std::vector<int64_t> QuantParamDims(const Tensor& q);

// Checks q.quant (which must be quantized) against the tensors it names,
// `scale` and `zero_point` being what the caller found under
// q.quant.scale / q.quant.zero_point (nullptr: no such tensor). Checks only
// names, dtypes, dims and layers, never bytes:
//  - kind vs dtype: int8_per_channel and int8_groupwise need i8/u8,
//    int4_groupwise i4/u4;
//  - rank >= 1, 0 <= axis < rank, group_size >= 1 (group-wise kinds);
//  - the scale exists, is plain (not itself quantized), f32 or f16, and
//    has exactly QuantParamDims(q);
//  - a zero point, if named, exists, is plain, has q's dtype and the
//    scale's dims;
//  - scale and zero point carry q's layer (spec.md section 7: they are
//    placed in the same layer group).
// fp8_e4m3_groupwise is group-wise with dtype u8 (E4M3 bytes) and no zero
// point; block_rows > 1 (fp8 only) needs rank 2 and axis 1. ggml_blocks instead needs dtype u8, axis = rank - 1, a ggml block type,
// group_size = its block size, a last dim of whole blocks, and names no
// scale or zero point (both pointers are ignored).
// InvalidArgument naming q, the field and found vs expected values.
absl::Status ValidateQuantLayout(const Tensor& q, const Tensor* scale,
                                 const Tensor* zero_point);

// True if the stored integers are symmetric around zero: no zero-point
// tensor (zero point 0), or a ggml block type without a min. Recorded as
// the manifest's quant.symmetric.
bool IsSymmetricQuant(const QuantLayout& layout);

// Nominal bits per element of q's integers (8 or 4; a ggml block type's
// code width, 2..8; 0 if not quantized).
int QuantBits(const Tensor& q);

// The scale tensor's values as f32 (f16 widened exactly), whatever the
// alignment of its bytes. InvalidArgument naming it for another dtype or a
// byte count that does not match its dims.
absl::StatusOr<std::vector<float>> ScaleValues(const Tensor& scale);

// Reference dequantization, exactly x = float32(q - zp) * float32(scale)
// (fp8: F8E4M3ToF32(q) * float32(scale)) with one f32 multiply per element
// (compiled without FP contraction). Validates the
// layout and the byte sizes of all three tensors first (InvalidArgument
// naming the tensor). `out` must hold q's element count.
absl::Status DequantizeInto(const Tensor& q, const Tensor& scale,
                            const Tensor* zero_point, float* out);
absl::StatusOr<std::vector<float>> DequantizeToF32(const Tensor& q,
                                                   const Tensor& scale,
                                                   const Tensor* zero_point);
// The same as an f32 tensor: q's name, dims, role, layer and provenance,
// owned bytes, no quant layout.
absl::StatusOr<Tensor> DequantizeTensor(const Tensor& q, const Tensor& scale,
                                        const Tensor* zero_point);
// The same for any layout, ggml_blocks included: `scale` is what the caller
// found under q.quant.scale (nullptr when none; ggml_blocks needs none and
// decodes with ir/ggml_blocks.h row by row). The callers that look their
// parameters up by name use these.
absl::Status DequantizeInto(const Tensor& q, const Tensor* scale,
                            const Tensor* zero_point, float* out);
absl::StatusOr<std::vector<float>> DequantizeToF32(const Tensor& q, const Tensor* scale,
                                                   const Tensor* zero_point);
absl::StatusOr<Tensor> DequantizeTensor(const Tensor& q, const Tensor* scale,
                                        const Tensor* zero_point);

// Element i of a stored integer tensor of dtype T (i8, u8, i4, u4; 4-bit
// values packed two per byte, element 0 in the low nibble) as an exact
// int32. The one definition shared by DequantizeInto and the packed
// kernels, whose results must stay bit-identical.
template <DType T>
int32_t IntAt(const uint8_t* p, uint64_t i) {
  if constexpr (T == DType::kI8) {
    return static_cast<int8_t>(p[i]);
  } else if constexpr (T == DType::kU8) {
    return p[i];
  } else {
    const int32_t nib = (i & 1) ? (p[i >> 1] >> 4) : (p[i >> 1] & 0x0F);
    if constexpr (T == DType::kI4) return nib >= 8 ? nib - 16 : nib;
    return nib;
  }
}

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_QUANT_H_
