// QuantizeRow / DequantizeRow: argument checks, the float types, and the
// 32-weight block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0). The K-quants are in
// ggml_blocks_k.cc, the scale searches in ggml_blocks_search.cc.
#include "formats/gguf/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/gguf/ggml_blocks_internal.h"
#include "ir/float_convert.h"
#include "ir/ggml_blocks.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::gguf {
namespace {

using internal::GetF16;
using internal::MakeQkxQuants;
using internal::MakeQxQuants;
using internal::PutF16;
using internal::TruncateToInt8;

bool IsFloatType(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

}  // namespace

namespace internal {

LegacyLayout LayoutOf(TensorType type) {
  switch (type) {
    case TensorType::kQ4_0: return {4, false, -1, 2, 18};
    case TensorType::kQ4_1: return {4, true, -1, 4, 20};
    case TensorType::kQ5_0: return {5, false, 2, 6, 22};
    case TensorType::kQ5_1: return {5, true, 4, 8, 24};
    default: return {8, false, -1, 2, 34};  // kQ8_0
  }
}

bool IsLegacy(TensorType type) {
  return type == TensorType::kQ4_0 || type == TensorType::kQ4_1 ||
         type == TensorType::kQ5_0 || type == TensorType::kQ5_1 ||
         type == TensorType::kQ8_0;
}

void PackCodes(const LegacyLayout& layout, const uint8_t* codes, uint8_t* block) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    block[layout.qs_offset + j] =
        static_cast<uint8_t>((codes[j] & 0x0F) | ((codes[j + 16] & 0x0F) << 4));
    qh |= static_cast<uint32_t>((codes[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((codes[j + 16] >> 4) & 1) << (j + 16);
  }
  if (layout.qh_offset < 0) return;
  for (int b = 0; b < 4; ++b) block[layout.qh_offset + b] = static_cast<uint8_t>(qh >> (8 * b));
}

}  // namespace internal

namespace {

using internal::IsLegacy;
using internal::LayoutOf;
using internal::LegacyLayout;
using internal::PackCodes;

// quantize_row_q8_0_ref: d = amax/127, codes round(x/d) half away from zero.
void QuantizeQ8_0Block(const float* x, uint8_t* block) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutF16(block, d);
  // |x*id| <= amax*id (rounding is monotonic), so when that is below 2^22
  // every code rounds half away from zero as truncation plus a step on the
  // exact remainder: std::round's result without a libm call per weight (it
  // was an eighth of a q8_0 conversion). Otherwise (id Inf or huge, from a
  // subnormal d) std::round and ggml's cast, as before.
  if (amax * id < 4194304.0f) {
    for (int j = 0; j < 32; ++j) {
      const float v = x[j] * id;
      const int32_t t = static_cast<int32_t>(v);
      const float rest = v - static_cast<float>(t);
      const int32_t q = t + (rest >= 0.5f) - (rest <= -0.5f);
      block[2 + j] = static_cast<uint8_t>(q);
    }
    return;
  }
  for (int j = 0; j < 32; ++j) {
    block[2 + j] = static_cast<uint8_t>(TruncateToInt8(std::round(x[j] * id)));
  }
}

// quantize_row_q{4,5}_0_ref: the signed extreme maps to code 0 exactly
// (d = max / -2^(bits-1)); codes are x/d + 2^(bits-1) + 0.5 truncated, capped
// at 2^bits - 1.
void QuantizeSymmetricBlock(const LegacyLayout& layout, const float* x, uint8_t* block) {
  float amax = 0;
  float max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const int half = 1 << (layout.bits - 1);
  const float d = max / -half;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutF16(block, d);
  const float bias = half + 0.5f;  // 8.5f or 16.5f, exact
  uint8_t codes[32];
  if (amax * std::fabs(id) < 64.0f) {
    // Every x*id + bias then lies in [0, 64 + bias), where a plain truncating
    // cast equals ggml's (int8_t) one, and the loop vectorises
    // (TruncateToInt8's range check kept it scalar). With a finite id the
    // bound always holds (|x*id| <= half, up to rounding); an Inf id takes
    // the loop below.
    for (int j = 0; j < 32; ++j) {
      codes[j] = static_cast<uint8_t>(std::min(2 * half - 1, static_cast<int>(x[j] * id + bias)));
    }
  } else {
    for (int j = 0; j < 32; ++j) {
      codes[j] = static_cast<uint8_t>(std::min(2 * half - 1, TruncateToInt8(x[j] * id + bias)));
    }
  }
  PackCodes(layout, codes, block);
}

// quantize_row_q{4,5}_1_ref: min/max affine grid, codes (x - min)/d + 0.5
// truncated. ggml caps only q4_1's codes; (x - min)/d stays within a few ulp
// of 2^bits - 1, so the cap never binds and one path serves both.
void QuantizeAffineBlock(const LegacyLayout& layout, const float* x, uint8_t* block) {
  float min = x[0];
  float max = x[0];
  for (int j = 1; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const int levels = (1 << layout.bits) - 1;
  const float d = (max - min) / levels;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutF16(block, d);
  PutF16(block + 2, min);
  uint8_t codes[32];
  if ((max - min) * id < 64.0f) {
    // (x - min)*id + 0.5 then lies in [0, 64.5), where the plain cast equals
    // ggml's (int8_t) one, and the loop vectorises; an Inf id (subnormal
    // d) takes the loop below.
    for (int j = 0; j < 32; ++j) {
      codes[j] = static_cast<uint8_t>(std::min(levels, static_cast<int>((x[j] - min) * id + 0.5f)));
    }
  } else {
    for (int j = 0; j < 32; ++j) {
      const float scaled = (x[j] - min) * id;
      codes[j] = static_cast<uint8_t>(std::min(levels, TruncateToInt8(scaled + 0.5f)));
    }
  }
  PackCodes(layout, codes, block);
}

// ggml's quantize_row_q*_impl with quant_weights: per-weight importance
// qw * sqrt(sigma2 + x^2), sigma2 the row's mean square; symmetric types
// search with make_qx_quants, affine ones with make_qkx3_quants.
void QuantizeLegacyWeighted(const LegacyLayout& layout, const float* x, int64_t n,
                            const float* importance, uint8_t* dst) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  const float sigma2 = sum_x2 / n;
  const int levels = (1 << layout.bits) - 1;
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    const float* qw = importance + 32 * ib;
    uint8_t* block = dst + ib * layout.block_bytes;
    float weight[32];
    for (int j = 0; j < 32; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    uint8_t codes[32];
    if (layout.has_min) {
      float the_min;
      const float d =
          MakeQkxQuants(32, levels, xb, weight, codes, &the_min, -0.9f, 0.05f, 36, false);
      PutF16(block, d);
      PutF16(block + 2, -the_min);
    } else {
      int8_t signed_codes[32];
      PutF16(block, MakeQxQuants(32, (levels + 1) / 2, xb, weight, signed_codes));
      std::copy(signed_codes, signed_codes + 32, codes);
    }
    PackCodes(layout, codes, block);
  }
}

void QuantizeLegacy(TensorType type, const float* x, int64_t n, const float* importance,
                    uint8_t* dst) {
  const LegacyLayout layout = LayoutOf(type);
  if (importance && type != TensorType::kQ8_0) {
    return QuantizeLegacyWeighted(layout, x, n, importance, dst);
  }
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    uint8_t* block = dst + ib * layout.block_bytes;
    if (type == TensorType::kQ8_0) {
      QuantizeQ8_0Block(x + 32 * ib, block);
    } else if (layout.has_min) {
      QuantizeAffineBlock(layout, x + 32 * ib, block);
    } else {
      QuantizeSymmetricBlock(layout, x + 32 * ib, block);
    }
  }
}

// Checks the type and n; sets *name to ggml's type name for messages.
absl::Status CheckRow(TensorType type, int64_t n, const char* what, std::string* name) {
  TypeTraits traits{};
  if (!GetTypeTraits(static_cast<uint32_t>(type), &traits)) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": unknown ggml tensor type ", static_cast<uint32_t>(type),
        " (supported: ", SupportedTypeNames(), ")"));
  }
  *name = std::string(traits.name);
  if (n < 0 || n % traits.block_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(", *name, "): n = ", n,
                     " is not a non-negative multiple of the block size ", traits.block_size));
  }
  if (RowBytes(type, n) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(", *name, "): n = ", n, " overflows int64"));
  }
  return absl::OkStatus();
}

// Non-finite weights would make ggml's searches return garbage silently;
// negative importance breaks their least-squares fits.
// No element is Inf or NaN: a branch-free pass over the exponent bits, so
// the common case costs a fraction of a copy. The fixed-length inner loop
// is what GCC's -O2 vectoriser takes (it leaves loops of unknown length
// that would need a remainder loop scalar).
bool AllFinite(const float* v, int64_t n) {
  constexpr int kChunk = 64;
  uint32_t bad = 0;
  int64_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    uint32_t chunk = 0;
    for (int k = 0; k < kChunk; ++k) {
      uint32_t b;
      std::memcpy(&b, v + i + k, sizeof b);
      chunk |= static_cast<uint32_t>((b & 0x7F800000u) == 0x7F800000u);
    }
    bad |= chunk;
  }
  for (; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, v + i, sizeof b);
    bad |= static_cast<uint32_t>((b & 0x7F800000u) == 0x7F800000u);
  }
  return bad == 0;
}

absl::Status CheckValues(const std::string& type_name, const float* src, int64_t n,
                         const float* importance) {
  if (!importance && AllFinite(src, n)) return absl::OkStatus();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i])) {
      return absl::InvalidArgumentError(absl::StrCat("QuantizeRow(", type_name, "): src[", i,
                                                     "] is ", src[i], " (must be finite)"));
    }
    if (importance && !(std::isfinite(importance[i]) && importance[i] >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("QuantizeRow(", type_name, "): importance[", i, "] is ", importance[i],
                       " (must be finite and >= 0)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

ir::DType FloatDType(TensorType type) {
  switch (type) {
    case TensorType::kF16: return ir::DType::kF16;
    case TensorType::kBF16: return ir::DType::kBF16;
    default: return ir::DType::kF32;
  }
}

int64_t RowBytes(TensorType type, int64_t n) {
  TypeTraits traits{};
  if (!GetTypeTraits(static_cast<uint32_t>(type), &traits) || n < 0 ||
      n % traits.block_size != 0) {
    return -1;
  }
  const std::optional<int64_t> bytes = CheckedMulInt64(n / traits.block_size, traits.block_bytes);
  return bytes ? *bytes : -1;
}

absl::Status QuantizeRow(TensorType type, const float* src, int64_t n, const float* importance,
                         uint8_t* dst) {
  std::string name;
  RETURN_IF_ERROR(CheckRow(type, n, "QuantizeRow", &name));
  if (IsFloatType(type)) {
    return ir::ConvertFloats(ir::DType::kF32, reinterpret_cast<const uint8_t*>(src),
                             FloatDType(type), dst, static_cast<uint64_t>(n));
  }
  const bool uses_importance = type != TensorType::kQ8_0;
  RETURN_IF_ERROR(CheckValues(name, src, n, uses_importance ? importance : nullptr));
  if (IsLegacy(type)) {
    QuantizeLegacy(type, src, n, importance, dst);
  } else {
    internal::QuantizeKRow(type, src, n, importance, dst);
  }
  return absl::OkStatus();
}

absl::Status QuantizeRows(TensorType type, const float* src, int64_t rows, int64_t cols,
                          const float* importance, uint8_t* dst, int64_t first_row) {
  const int64_t row_bytes = RowBytes(type, cols);
  auto one_by_one = [&]() {
    for (int64_t r = 0; r < rows; ++r) {
      absl::Status s = QuantizeRow(type, src + r * cols, cols, importance, dst + r * row_bytes);
      if (!s.ok()) return Annotate(s, absl::StrCat("row ", first_row + r));
    }
    return absl::OkStatus();
  };
  if (rows <= 1 || row_bytes < 0 || IsFloatType(type) || IsLegacy(type) ||
      RowBytes(type, rows * cols) != rows * row_bytes) {
    return one_by_one();
  }
  std::vector<float> tiled;
  if (importance) {
    tiled.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) std::copy_n(importance, cols, tiled.data() + r * cols);
  }
  // A failure (a weight that is not finite) is found again row by row, so
  // it names the row and the index within it.
  if (!QuantizeRow(type, src, rows * cols, importance ? tiled.data() : nullptr, dst).ok()) {
    return one_by_one();
  }
  return absl::OkStatus();
}

absl::Status DequantizeRow(TensorType type, const uint8_t* src, int64_t n, float* dst) {
  std::string name;
  RETURN_IF_ERROR(CheckRow(type, n, "DequantizeRow", &name));
  if (IsFloatType(type)) {
    return ir::ConvertFloats(FloatDType(type), src, ir::DType::kF32,
                             reinterpret_cast<uint8_t*>(dst), static_cast<uint64_t>(n));
  }
  // The decoders are the IR's (the artifact's ggml_blocks layout uses them
  // too); TensorType's quantized values are ir::GgmlType's.
  ir::DequantizeGgmlRow(static_cast<ir::GgmlType>(type), src, static_cast<uint64_t>(n), dst);
  return absl::OkStatus();
}

}  // namespace slimpack::gguf
