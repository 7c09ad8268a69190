// Walks a quantized tensor as [outer, axis, inner] blocks and hands each
// contiguous run to a kernel: a run shares one scale when the quantized axis
// is not the innermost, and has one scale per element when it is.
#include "formats/shard/loader/dequantize.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "formats/shard/loader/dequant_kernels.h"

namespace slimpack::loader {
namespace {

using internal::DequantKernels;
using shard::DType;
using shard::LayoutKind;

struct Blocks {
  uint64_t outer = 1, axis = 1, inner = 1;
};

Blocks SplitAt(const std::vector<uint64_t>& shape, size_t axis) {
  Blocks b;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) b.outer *= shape[d];
    if (d == axis) b.axis = shape[d];
    if (d > axis) b.inner *= shape[d];
  }
  return b;
}

std::string Bytes(uint64_t n) { return std::to_string(n) + " bytes"; }

Status CheckCount(const char* what, uint64_t found, uint64_t expected) {
  if (found == expected) return OkStatus();
  return InvalidArgumentError(std::string(what) + " has " + std::to_string(found) +
                              ", expected " + std::to_string(expected));
}

// Zero points as int16 (every 8- and 4-bit value fits), element k of the
// zero-point tensor at zp16[k - first].
void UnpackZeroPoints(const QuantizedTensorRef& ref, uint64_t first, uint64_t n,
                      int16_t* zp16) {
  const auto* z = static_cast<const uint8_t*>(ref.zero_point);
  const bool is_signed = ref.dtype == DType::kI8 || ref.dtype == DType::kI4;
  const bool four_bit = ref.dtype == DType::kI4 || ref.dtype == DType::kU4;
  for (uint64_t k = 0; k < n; ++k) {
    if (four_bit) {
      zp16[k] = static_cast<int16_t>(internal::Nibble(z, first + k, is_signed));
    } else {
      zp16[k] = is_signed ? static_cast<int8_t>(z[first + k]) : z[first + k];
    }
  }
}

// int8_per_channel; DequantizeToF32 has checked the scale count.
Status DequantInt8(const QuantizedTensorRef& ref, const float* scale, const Blocks& b,
                   const DequantKernels& k, float* out) {
  const auto* q = static_cast<const uint8_t*>(ref.data);
  const bool is_signed = ref.dtype == DType::kI8;
  std::vector<int16_t> zp;
  if (ref.zero_point != nullptr) {
    SLP_RETURN_IF_ERROR(CheckCount("zero point (bytes)", ref.zero_point_bytes, b.axis));
    zp.resize(b.axis);
    UnpackZeroPoints(ref, 0, b.axis, zp.data());
  }
  if (b.inner == 1) {  // per-channel along the innermost axis: vector runs
    for (uint64_t o = 0; o < b.outer; ++o) {
      k.vec8(q + o * b.axis, b.axis, is_signed, zp.empty() ? nullptr : zp.data(),
             scale, out + o * b.axis);
    }
    return OkStatus();
  }
  for (uint64_t o = 0; o < b.outer; ++o) {
    for (uint64_t a = 0; a < b.axis; ++a) {
      const uint64_t start = (o * b.axis + a) * b.inner;
      k.bcast8(q + start, b.inner, is_signed, zp.empty() ? 0 : zp[a], scale[a],
               out + start);
    }
  }
  return OkStatus();
}

// int4_groupwise and int8_groupwise: the same walk, the kernels of the
// element width. DequantizeToF32 has checked group_size and the scale count.
Status DequantGroups(const QuantizedTensorRef& ref, const float* scale, const Blocks& b,
                     const DequantKernels& k, float* out) {
  const auto* q = static_cast<const uint8_t*>(ref.data);
  const bool four_bit = ref.layout == LayoutKind::kInt4GroupWise;
  const bool is_signed = ref.dtype == DType::kI4 || ref.dtype == DType::kI8;
  const uint64_t gs = ref.group_size;  // >= 1 (DequantizeToF32)
  const uint64_t groups = b.axis / gs + (b.axis % gs != 0);
  const uint64_t params = b.outer * groups * b.inner;
  const bool has_zp = ref.zero_point != nullptr;
  if (has_zp) {
    SLP_RETURN_IF_ERROR(CheckCount("zero point (bytes)", ref.zero_point_bytes,
                                   four_bit ? params / 2 + params % 2 : params));
  }
  if (b.inner == 1) {  // groups along the innermost axis: broadcast runs
    int16_t zp = 0;
    for (uint64_t o = 0; o < b.outer; ++o) {
      for (uint64_t g = 0; g < groups; ++g) {
        const uint64_t p = o * groups + g;
        const uint64_t a0 = g * gs;
        const uint64_t n = std::min(gs, b.axis - a0);
        if (has_zp) UnpackZeroPoints(ref, p, 1, &zp);
        if (four_bit) {
          k.bcast4(q, o * b.axis + a0, n, is_signed, zp, scale[p], out + o * b.axis + a0);
        } else {
          k.bcast8(q + o * b.axis + a0, n, is_signed, zp, scale[p], out + o * b.axis + a0);
        }
      }
    }
    return OkStatus();
  }
  std::vector<int16_t> zp_row(has_zp ? b.inner : 0);
  for (uint64_t o = 0; o < b.outer; ++o) {
    for (uint64_t g = 0; g < groups; ++g) {
      const uint64_t row = (o * groups + g) * b.inner;
      if (has_zp) UnpackZeroPoints(ref, row, b.inner, zp_row.data());
      const uint64_t a_end = std::min(b.axis, (g + 1) * gs);
      for (uint64_t a = g * gs; a < a_end; ++a) {
        const uint64_t start = (o * b.axis + a) * b.inner;
        const int16_t* zps = has_zp ? zp_row.data() : nullptr;
        if (four_bit) {
          k.vec4(q, start, b.inner, is_signed, zps, scale + row, out + start);
        } else {
          k.vec8(q + start, b.inner, is_signed, zps, scale + row, out + start);
        }
      }
    }
  }
  return OkStatus();
}

Status ConvertPlain(const QuantizedTensorRef& ref, uint64_t numel, float* out) {
  const auto* p = static_cast<const uint8_t*>(ref.data);
  switch (ref.dtype) {
    case DType::kF32:
      if (numel > 0) std::memcpy(out, p, numel * 4);
      return OkStatus();
    case DType::kF16:
    case DType::kBF16:
      for (uint64_t i = 0; i < numel; ++i) {
        const uint16_t bits = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
        out[i] = ref.dtype == DType::kF16 ? HalfToFloat(bits) : BFloat16ToFloat(bits);
      }
      return OkStatus();
    default:
      return UnimplementedError("cannot convert plain " +
                                std::string(shard::DTypeName(ref.dtype)) +
                                " to f32 (supported plain dtypes: f32, f16, bf16)");
  }
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    exp = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

const char* DequantImplementation() { return internal::BestKernels().name; }

float internal::HalfAt(const uint8_t* p) {
  return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

namespace {

// ggml_blocks: rows of whole blocks along the last axis, u8 bytes.
Status DequantGgml(const QuantizedTensorRef& ref, uint64_t numel, const DequantKernels& k,
                   float* out) {
  const shard::GgmlBlockType* type = shard::FindGgmlBlockType(ref.block_type);
  if (type == nullptr) {
    return InvalidArgumentError("unknown ggml block type " + std::to_string(ref.block_type));
  }
  if (ref.dtype != DType::kU8) {
    return InvalidArgumentError("layout ggml_blocks needs dtype u8, found " +
                                std::string(shard::DTypeName(ref.dtype)));
  }
  if (ref.shape.empty() || ref.axis + 1 != static_cast<int32_t>(ref.shape.size())) {
    return InvalidArgumentError("ggml blocks need rank >= 1 and axis = rank - 1");
  }
  if (ref.shape.back() % type->block_size != 0) {
    return InvalidArgumentError("last dim " + std::to_string(ref.shape.back()) +
                                " is not a multiple of " + std::string(type->name) +
                                "'s block size " + std::to_string(type->block_size));
  }
  const uint64_t blocks = numel / type->block_size;
  uint64_t expected = 0;
  if (__builtin_mul_overflow(blocks, type->block_bytes, &expected)) {
    return InvalidArgumentError("byte size overflows");
  }
  SLP_RETURN_IF_ERROR(CheckCount("data (bytes)", ref.data_bytes, expected));
  if (numel == 0) return OkStatus();
  if (ref.data == nullptr) return InvalidArgumentError("data is null");
  k.ggml(type->ggml_type, type->block_size, type->block_bytes,
         static_cast<const uint8_t*>(ref.data), blocks, out);
  return OkStatus();
}

}  // namespace

Status DequantizeToF32(const QuantizedTensorRef& ref, float* out,
                       uint64_t out_count, DequantImpl impl) {
  uint64_t numel = 1;
  for (uint64_t d : ref.shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return InvalidArgumentError("element count overflows");
    }
  }
  SLP_RETURN_IF_ERROR(CheckCount("output (elements)", out_count, numel));
  const DequantKernels& k =
      impl == DequantImpl::kScalar ? internal::ScalarKernels() : internal::BestKernels();
  if (ref.layout == LayoutKind::kGgmlBlocks) return DequantGgml(ref, numel, k, out);
  const uint64_t bits = shard::DTypeBits(ref.dtype);
  if (bits == 0) return InvalidArgumentError("unknown dtype");
  const uint64_t expected_bytes = (numel * bits + 7) / 8;  // numel <= 2^53 here
  if (ref.data_bytes != expected_bytes) {
    return InvalidArgumentError("data has " + Bytes(ref.data_bytes) + ", expected " +
                                Bytes(expected_bytes));
  }
  if (numel > 0 && ref.data == nullptr) return InvalidArgumentError("data is null");
  if (ref.layout == LayoutKind::kPlain) return ConvertPlain(ref, numel, out);

  const bool int8 = ref.layout == LayoutKind::kInt8PerChannel ||
                    ref.layout == LayoutKind::kInt8GroupWise;
  const bool fp8 = ref.layout == LayoutKind::kFp8E4M3GroupWise;
  if (!int8 && !fp8 && ref.layout != LayoutKind::kInt4GroupWise) {
    return InvalidArgumentError("layout " + std::string(shard::LayoutKindName(ref.layout)) +
                                " is not a quantized layout");
  }
  const bool dtype_ok = fp8    ? ref.dtype == DType::kU8
                        : int8 ? (ref.dtype == DType::kI8 || ref.dtype == DType::kU8)
                               : (ref.dtype == DType::kI4 || ref.dtype == DType::kU4);
  if (!dtype_ok) {
    return InvalidArgumentError("layout does not match dtype " +
                                std::string(shard::DTypeName(ref.dtype)));
  }
  if (fp8 && ref.zero_point != nullptr) {
    return InvalidArgumentError("layout fp8_e4m3_groupwise has no zero point");
  }
  if (ref.block_rows == 0) return InvalidArgumentError("block_rows must be at least 1");
  if (ref.block_rows > 1 && (!fp8 || ref.shape.size() != 2 || ref.axis != 1)) {
    return InvalidArgumentError("block_rows " + std::to_string(ref.block_rows) +
                                " needs layout fp8_e4m3_groupwise of rank 2 and axis 1");
  }
  if (ref.axis < 0 || static_cast<size_t>(ref.axis) >= ref.shape.size()) {
    return InvalidArgumentError("axis " + std::to_string(ref.axis) +
                                " out of range for rank " +
                                std::to_string(ref.shape.size()));
  }
  if (ref.scale == nullptr) return InvalidArgumentError("scale is null");
  if (ref.scale_dtype != DType::kF32 && ref.scale_dtype != DType::kF16) {
    return InvalidArgumentError("scale dtype " + std::string(shard::DTypeName(ref.scale_dtype)) +
                                " is not f32 or f16");
  }
  if (numel == 0) return OkStatus();
  const Blocks b = SplitAt(ref.shape, static_cast<size_t>(ref.axis));
  uint64_t params = b.axis;  // per channel
  if (ref.layout != LayoutKind::kInt8PerChannel) {
    if (ref.group_size == 0) return InvalidArgumentError("group_size must be at least 1");
    const uint64_t groups = b.axis / ref.group_size + (b.axis % ref.group_size != 0);
    const uint64_t row_blocks = b.outer / ref.block_rows + (b.outer % ref.block_rows != 0);
    params = row_blocks * groups * b.inner;  // <= numel
  }
  SLP_RETURN_IF_ERROR(CheckCount("scale (elements)", ref.scale_count, params));
  // f16 scales are widened once (exactly); the kernels multiply by f32.
  std::vector<float> widened;
  const float* scale = static_cast<const float*>(ref.scale);
  if (ref.scale_dtype == DType::kF16) {
    const auto* h = static_cast<const uint8_t*>(ref.scale);
    widened.resize(ref.scale_count);
    for (uint64_t i = 0; i < ref.scale_count; ++i) {
      widened[i] = HalfToFloat(static_cast<uint16_t>(h[2 * i] | (h[2 * i + 1] << 8)));
    }
    scale = widened.data();
  }
  if (fp8) {  // the same code for every DequantImpl (dequant_fp8.cc)
    internal::DequantFp8E4M3Groups(static_cast<const uint8_t*>(ref.data), scale, b.outer,
                                   b.axis, b.inner, ref.group_size, ref.block_rows, out);
    return OkStatus();
  }
  return ref.layout == LayoutKind::kInt8PerChannel ? DequantInt8(ref, scale, b, k, out)
                                                   : DequantGroups(ref, scale, b, k, out);
}

}  // namespace slimpack::loader
