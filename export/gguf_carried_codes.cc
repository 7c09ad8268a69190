#include "export/gguf_carried_codes.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "ir/quant.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;
constexpr int64_t kBlock = 32;

void PutF16(float v, uint8_t* dst) {
  const uint16_t h = ir::F32ToF16(v);
  std::memcpy(dst, &h, 2);
}

// Rows of ggml blocks moved as they are (only their order changes).
absl::Status CopyBlockRows(const ir::Tensor& q, const std::function<int64_t(int64_t)>& source_row,
                           uint8_t* dst, uint64_t size) {
  const int64_t cols = q.dims.back();
  const int64_t rows = q.dims.size() == 2 ? q.dims[0] : 1;
  const std::optional<uint64_t> row_bytes = ir::GgmlRowBytes(q.quant.block_type, cols);
  if (!row_bytes || *row_bytes * static_cast<uint64_t>(rows) != size ||
      q.data.size() != size) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", q.name, "': ", rows, " rows of ",
                                                   cols, " ", std::string(ir::GgmlTypeName(q.quant.block_type)),
                                                   " weights do not fill ", size, " bytes"));
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * *row_bytes, q.data.data() + source_row(r) * *row_bytes, *row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<TensorType> CarriedGgmlType(const ir::Tensor& q) {
  const ir::QuantLayout& l = q.quant;
  if (q.dims.empty() || q.dims.size() > 2) return std::nullopt;
  // ggml blocks are GGUF's own bytes (ir::GgmlType values are ggml's).
  if (l.kind == ir::QuantKind::kGgmlBlocks) return static_cast<TensorType>(l.block_type);
  const int64_t cols = q.dims.back();
  const int last = static_cast<int>(q.dims.size()) - 1;
  if (cols % kBlock != 0) return std::nullopt;
  if (l.kind == ir::QuantKind::kInt4GroupWise && l.axis == last && l.group_size == kBlock) {
    if (q.dtype == ir::DType::kI4 && l.zero_point.empty()) return TensorType::kQ4_0;
    if (q.dtype == ir::DType::kU4 && !l.zero_point.empty()) return TensorType::kQ4_1;
  }
  if (l.kind == ir::QuantKind::kInt8PerChannel && q.dims.size() == 2 && l.axis == 0 &&
      q.dtype == ir::DType::kI8 && l.zero_point.empty()) {
    return TensorType::kQ8_0;
  }
  if (l.kind == ir::QuantKind::kInt8GroupWise && l.axis == last && l.group_size == kBlock &&
      q.dtype == ir::DType::kI8 && l.zero_point.empty()) {
    return TensorType::kQ8_0;  // exact with f16 scales; f32 ones are rounded
  }
  return std::nullopt;
}

absl::Status EncodeCarriedRows(TensorType type, const ir::Tensor& q, const ir::Tensor* scale_ptr,
                               const ir::Tensor* zero_point,
                               const std::function<int64_t(int64_t)>& source_row,
                               uint8_t* dst, uint64_t size) {
  const int64_t cols = q.dims.back();
  const int64_t rows = q.dims.size() == 2 ? q.dims[0] : 1;
  if (q.quant.kind == ir::QuantKind::kGgmlBlocks) return CopyBlockRows(q, source_row, dst, size);
  if (scale_ptr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", q.name, "': no scale tensor '",
                                                   q.quant.scale, "'"));
  }
  const ir::Tensor& scale = *scale_ptr;
  const int64_t blocks = cols / kBlock;
  const int64_t block_bytes = type == TensorType::kQ4_0 ? 18 : type == TensorType::kQ4_1 ? 20 : 34;
  if (static_cast<uint64_t>(rows * blocks * block_bytes) != size) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", q.name, "': ", rows, " rows of ",
                                                   blocks, " blocks do not fill ", size, " bytes"));
  }
  // Every scale as f32 (f16 ones widened exactly), checked against its dims.
  absl::StatusOr<std::vector<float>> scales = ir::ScaleValues(scale);
  if (!scales.ok()) return scales.status();
  const uint8_t* codes = q.data.data();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = source_row(r);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* out = dst + (r * blocks + b) * block_bytes;
      const int64_t first = src * cols + b * kBlock;  // element index in q
      // Group b of row src, or the row's scale (int8 per channel).
      const bool per_row = q.quant.kind == ir::QuantKind::kInt8PerChannel;
      const int64_t param = per_row ? src : src * blocks + b;
      const float s = (*scales)[static_cast<size_t>(param)];
      if (!std::isfinite(s)) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", q.name, "': scale ", param,
                                                       " is not finite (", s, ")"));
      }
      if (type == TensorType::kQ8_0) {
        PutF16(s, out);
        for (int64_t j = 0; j < kBlock; ++j) {
          out[2 + j] = static_cast<uint8_t>(ir::IntAt<ir::DType::kI8>(codes, first + j));
        }
        continue;
      }
      int32_t n[kBlock];
      if (type == TensorType::kQ4_0) {
        PutF16(s, out);
        for (int64_t j = 0; j < kBlock; ++j) n[j] = ir::IntAt<ir::DType::kI4>(codes, first + j) + 8;
      } else {
        const int32_t z = ir::IntAt<ir::DType::kU4>(zero_point->data.data(), param);
        PutF16(s, out);
        // x = (q - z) s = q d + m with m = -z s, one f32 product as ours.
        PutF16(-static_cast<float>(z) * s, out + 2);
        for (int64_t j = 0; j < kBlock; ++j) n[j] = ir::IntAt<ir::DType::kU4>(codes, first + j);
      }
      // ggml's nibble order: element j in the low nibble of byte j, element
      // j + 16 in its high nibble.
      uint8_t* qs = out + (type == TensorType::kQ4_0 ? 2 : 4);
      for (int64_t j = 0; j < kBlock / 2; ++j) {
        qs[j] = static_cast<uint8_t>(n[j] | (n[j + kBlock / 2] << 4));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::gguf_export
