// Compiled with -ffp-contract=off (converter/CMakeLists.txt): the spec's
// dequantization is one rounding of an exact integer difference times the
// scale, and must not turn into a fused multiply-add anywhere it is inlined.
#include "ir/quant.h"

#include <cstring>
#include <string>

#include "ir/float_convert.h"
#include "ir/shape.h"

namespace slimpack::ir {
namespace {

std::string Dims(const std::vector<int64_t>& d) {
  return Shape::FromDims(d).ToString();
}

absl::Status Bad(const Tensor& q, const std::string& what) {
  return absl::InvalidArgumentError("tensor '" + q.name + "': quant layout " +
                                    std::string(QuantKindName(q.quant.kind)) +
                                    ": " + what);
}

// Checks a scale or zero point found under `field`: dtype `want_dtype` or
// `alt_dtype` (the same when only one is allowed), dims `want`.
absl::Status CheckParam(const Tensor& q, const char* field,
                        const std::string& name, const Tensor* p,
                        DType want_dtype, DType alt_dtype, const std::vector<int64_t>& want) {
  if (p == nullptr) {
    return Bad(q, std::string(field) + " names tensor '" + name +
                      "', which is not in the graph");
  }
  if (p->quant.quantized()) {
    return Bad(q, std::string(field) + " tensor '" + name +
                      "' is itself quantized (" +
                      std::string(QuantKindName(p->quant.kind)) +
                      "); it must be plain");
  }
  if (p->dtype != want_dtype && p->dtype != alt_dtype) {
    return Bad(q, std::string(field) + " tensor '" + name + "' has dtype " +
                      std::string(DTypeName(p->dtype)) + ", expected " +
                      std::string(DTypeName(want_dtype)) +
                      (alt_dtype != want_dtype ? " or " + std::string(DTypeName(alt_dtype))
                                               : std::string()));
  }
  if (p->dims != want) {
    return Bad(q, std::string(field) + " tensor '" + name + "' has shape " +
                      Dims(p->dims) + ", expected " + Dims(want) + " for " +
                      std::string(DTypeName(q.dtype)) + Dims(q.dims) +
                      " axis " + std::to_string(q.quant.axis) +
                      (IsGroupWise(q.quant.kind)
                           ? " group_size " + std::to_string(q.quant.group_size)
                           : std::string()));
  }
  if (p->layer != q.layer) {
    return Bad(q, std::string(field) + " tensor '" + name + "' has layer " +
                      std::to_string(p->layer) + ", expected " +
                      std::to_string(q.layer) +
                      " (the tensor's own; spec.md section 7)");
  }
  return absl::OkStatus();
}

absl::Status CheckBytes(const Tensor& t) {
  auto want = t.ExpectedBytes();
  if (!want.ok()) {
    return absl::InvalidArgumentError("tensor '" + t.name + "': " +
                                      std::string(want.status().message()));
  }
  if (*want != t.data.size()) {
    return absl::InvalidArgumentError(
        "tensor '" + t.name + "' " + std::string(DTypeName(t.dtype)) +
        Dims(t.dims) + " needs " + std::to_string(*want) + " bytes, found " +
        std::to_string(t.data.size()));
  }
  return absl::OkStatus();
}

// The element loop of DequantizeInto for one stored dtype (the zero point
// has the same dtype). Per-channel: one parameter per index along the axis,
// shared by every outer and inner position. Group-wise: the parameter tensor
// keeps outer and inner and has `groups` entries along the axis.
template <DType T>
void DequantizeLoop(const uint8_t* q, const float* scales, const uint8_t* zp,
                    int64_t outer, int64_t n_axis, int64_t inner, bool per_channel,
                    int64_t g, int64_t groups, float* out) {
  uint64_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < n_axis; ++a) {
      const int64_t grp = per_channel ? a : a / g;
      const uint64_t base = per_channel ? static_cast<uint64_t>(grp)
                                        : static_cast<uint64_t>((o * groups + grp) * inner);
      const uint64_t step = per_channel ? 0 : 1;
      for (int64_t k = 0; k < inner; ++k, ++i) {
        const uint64_t p = base + step * static_cast<uint64_t>(k);
        const int32_t z = zp ? IntAt<T>(zp, p) : 0;
        // The difference is exact in int32 and in float (|q - zp| <= 255).
        out[i] = static_cast<float>(IntAt<T>(q, i) - z) * scales[p];
      }
    }
  }
}

// fp8_e4m3_groupwise: the group-wise walk of DequantizeLoop with an E4M3
// float code instead of an integer difference (no zero point).
// `block_rows` outer indices (the rows of an [out, in] matrix) share one
// scale row.
void Fp8Loop(const uint8_t* q, const float* scales, int64_t outer, int64_t n_axis,
             int64_t inner, int64_t g, int64_t groups, int64_t block_rows, float* out) {
  float table[256];
  for (int c = 0; c < 256; ++c) table[c] = F8E4M3ToF32(static_cast<uint8_t>(c));
  uint64_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < n_axis; ++a) {
      const uint64_t base = static_cast<uint64_t>(((o / block_rows) * groups + a / g) * inner);
      for (int64_t k = 0; k < inner; ++k, ++i) {
        out[i] = table[q[i]] * scales[base + static_cast<uint64_t>(k)];
      }
    }
  }
}

// ggml_blocks: u8 block bytes along the last axis, whole blocks, no scale or
// zero-point tensor (each block holds its own).
absl::Status ValidateGgmlBlocks(const Tensor& q) {
  const QuantLayout& l = q.quant;
  const std::optional<GgmlGeometry> g = GgmlTypeGeometry(l.block_type);
  if (!g) {
    return Bad(q, "block type " + std::to_string(static_cast<uint32_t>(l.block_type)) +
                      " is not a ggml block type (" + GgmlTypeNames() + ")");
  }
  const std::string type(GgmlTypeName(l.block_type));
  if (q.dtype != DType::kU8) {
    return Bad(q, "needs dtype u8 (block bytes), found " + std::string(DTypeName(q.dtype)));
  }
  if (q.dims.empty()) return Bad(q, "needs rank >= 1, found a scalar");
  const int last = static_cast<int>(q.dims.size()) - 1;
  if (l.axis != last) {
    return Bad(q, "axis " + std::to_string(l.axis) + " must be the last axis (" +
                      std::to_string(last) + "): " + type + " blocks run along rows");
  }
  if (l.group_size != g->block_size) {
    return Bad(q, "group_size " + std::to_string(l.group_size) + " must be " + type +
                      "'s block size " + std::to_string(g->block_size));
  }
  if (q.dims.back() % g->block_size != 0) {
    return Bad(q, "last dim " + std::to_string(q.dims.back()) + " of " + Dims(q.dims) +
                      " is not a multiple of " + type + "'s block size " +
                      std::to_string(g->block_size));
  }
  if (!l.scale.empty() || !l.zero_point.empty()) {
    return Bad(q, "names a scale or zero point ('" + l.scale + "', '" + l.zero_point +
                      "'); " + type + " blocks carry their own");
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view QuantKindName(QuantKind k) {
  switch (k) {
    case QuantKind::kNone: return "plain";
    case QuantKind::kInt8PerChannel: return "int8_per_channel";
    case QuantKind::kInt4GroupWise: return "int4_groupwise";
    case QuantKind::kInt8GroupWise: return "int8_groupwise";
    case QuantKind::kGgmlBlocks: return "ggml_blocks";
    case QuantKind::kFp8E4M3GroupWise: return "fp8_e4m3_groupwise";
  }
  return "?";
}

bool QuantKindFromName(std::string_view name, QuantKind* out) {
  for (QuantKind k : {QuantKind::kNone, QuantKind::kInt8PerChannel,
                      QuantKind::kInt4GroupWise, QuantKind::kInt8GroupWise,
                      QuantKind::kGgmlBlocks, QuantKind::kFp8E4M3GroupWise}) {
    if (QuantKindName(k) == name) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::vector<int64_t> QuantParamDims(const Tensor& q) {
  const int axis = q.quant.axis;
  if (axis < 0 || static_cast<size_t>(axis) >= q.dims.size()) return {};
  if (q.quant.kind == QuantKind::kInt8PerChannel) return {q.dims[axis]};
  std::vector<int64_t> dims = q.dims;
  const int64_t g = q.quant.group_size;
  if (g > 0) dims[axis] = dims[axis] / g + (dims[axis] % g != 0);
  const int64_t r = q.quant.BlockRows();
  if (r > 1 && dims.size() == 2 && axis == 1) dims[0] = dims[0] / r + (dims[0] % r != 0);
  return dims;
}

absl::Status ValidateQuantLayout(const Tensor& q, const Tensor* scale,
                                 const Tensor* zero_point) {
  const QuantLayout& l = q.quant;
  if (!l.quantized()) return Bad(q, "the tensor is not quantized");
  const bool fp8 = l.kind == QuantKind::kFp8E4M3GroupWise;
  if (l.block_rows < 0) {
    return Bad(q, "block_rows " + std::to_string(l.block_rows) + " is negative");
  }
  if (l.BlockRows() > 1 && !fp8) {
    return Bad(q, "block_rows " + std::to_string(l.block_rows) +
                      ": only fp8_e4m3_groupwise shares a scale between rows");
  }
  if (l.kind == QuantKind::kGgmlBlocks) return ValidateGgmlBlocks(q);
  const bool int8 = l.kind != QuantKind::kInt4GroupWise;
  const bool dtype_ok = fp8    ? q.dtype == DType::kU8
                        : int8 ? (q.dtype == DType::kI8 || q.dtype == DType::kU8)
                               : (q.dtype == DType::kI4 || q.dtype == DType::kU4);
  if (!dtype_ok) {
    return Bad(q, "needs dtype " +
                      std::string(fp8 ? "u8 (E4M3 bytes)" : int8 ? "i8 or u8" : "i4 or u4") +
                      ", found " + std::string(DTypeName(q.dtype)));
  }
  if (fp8 && !l.zero_point.empty()) {
    return Bad(q, "names zero point '" + l.zero_point + "'; FP8 codes are signed values");
  }
  if (q.dims.empty()) return Bad(q, "needs rank >= 1, found a scalar");
  if (l.axis < 0 || static_cast<size_t>(l.axis) >= q.dims.size()) {
    return Bad(q, "axis " + std::to_string(l.axis) + " is out of range for " +
                      Dims(q.dims) + " (rank " + std::to_string(q.dims.size()) +
                      ")");
  }
  if (IsGroupWise(l.kind) && l.group_size < 1) {
    return Bad(q, "group_size " + std::to_string(l.group_size) +
                      " must be at least 1");
  }
  if (l.BlockRows() > 1 && (q.dims.size() != 2 || l.axis != 1)) {
    return Bad(q, "block_rows " + std::to_string(l.block_rows) + " needs an [out, in] matrix "
                      "grouped along axis 1, found " + Dims(q.dims) + " axis " +
                      std::to_string(l.axis));
  }
  if (l.scale.empty()) return Bad(q, "names no scale tensor");
  const std::vector<int64_t> want = QuantParamDims(q);
  absl::Status s = CheckParam(q, "scale", l.scale, scale, DType::kF32, DType::kF16, want);
  if (!s.ok()) return s;
  if (!l.zero_point.empty()) {
    s = CheckParam(q, "zero_point", l.zero_point, zero_point, q.dtype, q.dtype, want);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

bool IsSymmetricQuant(const QuantLayout& layout) {
  if (layout.kind == QuantKind::kGgmlBlocks) {
    const std::optional<GgmlGeometry> g = GgmlTypeGeometry(layout.block_type);
    return g && !g->has_min;
  }
  return layout.quantized() && layout.zero_point.empty();
}

int QuantBits(const Tensor& q) {
  if (!q.quant.quantized()) return 0;
  if (q.quant.kind == QuantKind::kGgmlBlocks) {
    const std::optional<GgmlGeometry> g = GgmlTypeGeometry(q.quant.block_type);
    return g ? g->bits : 0;
  }
  return DTypeBits(q.dtype);
}

absl::StatusOr<std::vector<float>> ScaleValues(const Tensor& scale) {
  if (scale.dtype != DType::kF32 && scale.dtype != DType::kF16) {
    return absl::InvalidArgumentError("scale tensor '" + scale.name + "' has dtype " +
                                      std::string(DTypeName(scale.dtype)) +
                                      ", expected f32 or f16");
  }
  absl::Status s = CheckBytes(scale);
  if (!s.ok()) return s;
  const size_t width = scale.dtype == DType::kF32 ? 4 : 2;
  std::vector<float> out(scale.data.size() / width);
  const uint8_t* p = scale.data.data();
  if (width == 4) {
    // The bytes may be an unaligned view (a file mapping): copy them.
    if (!out.empty()) std::memcpy(out.data(), p, out.size() * 4);
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = F16ToF32(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
    }
  }
  return out;
}

absl::Status DequantizeInto(const Tensor& q, const Tensor& scale,
                            const Tensor* zero_point, float* out) {
  // ggml blocks carry their scales; `scale` is not theirs.
  if (q.quant.kind == QuantKind::kGgmlBlocks) return DequantizeInto(q, nullptr, nullptr, out);
  const bool has_zp = !q.quant.zero_point.empty();
  absl::Status s = ValidateQuantLayout(q, &scale, has_zp ? zero_point : nullptr);
  if (!s.ok()) return s;
  for (const Tensor* t : {&q, &scale, has_zp ? zero_point : nullptr}) {
    if (t == nullptr) continue;
    s = CheckBytes(*t);
    if (!s.ok()) return s;
  }
  const size_t axis = static_cast<size_t>(q.quant.axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= q.dims[i];
  for (size_t i = axis + 1; i < q.dims.size(); ++i) inner *= q.dims[i];
  const int64_t n_axis = q.dims[axis];
  const bool per_channel = q.quant.kind == QuantKind::kInt8PerChannel;
  const int64_t g = per_channel ? 1 : q.quant.group_size;
  const int64_t groups = per_channel ? n_axis : (n_axis + g - 1) / g;
  const uint8_t* zd = has_zp ? zero_point->data.data() : nullptr;
  absl::StatusOr<std::vector<float>> scale_values = ScaleValues(scale);
  if (!scale_values.ok()) return scale_values.status();
  const std::vector<float>& scales = *scale_values;
  const uint8_t* qd = q.data.data();
  if (q.quant.kind == QuantKind::kFp8E4M3GroupWise) {
    Fp8Loop(qd, scales.data(), outer, n_axis, inner, g, groups, q.quant.BlockRows(), out);
    return absl::OkStatus();
  }
  switch (q.dtype) {
    case DType::kI8:
      DequantizeLoop<DType::kI8>(qd, scales.data(), zd, outer, n_axis, inner, per_channel, g,
                                 groups, out);
      break;
    case DType::kU8:
      DequantizeLoop<DType::kU8>(qd, scales.data(), zd, outer, n_axis, inner, per_channel, g,
                                 groups, out);
      break;
    case DType::kI4:
      DequantizeLoop<DType::kI4>(qd, scales.data(), zd, outer, n_axis, inner, per_channel, g,
                                 groups, out);
      break;
    default:  // kU4: ValidateQuantLayout allows nothing else
      DequantizeLoop<DType::kU4>(qd, scales.data(), zd, outer, n_axis, inner, per_channel, g,
                                 groups, out);
      break;
  }
  return absl::OkStatus();
}

absl::Status DequantizeInto(const Tensor& q, const Tensor* scale,
                            const Tensor* zero_point, float* out) {
  if (q.quant.kind != QuantKind::kGgmlBlocks) {
    if (scale == nullptr) {
      return ValidateQuantLayout(q, nullptr, zero_point);  // names the missing scale
    }
    return DequantizeInto(q, *scale, zero_point, out);
  }
  absl::Status s = ValidateGgmlBlocks(q);
  if (!s.ok()) return s;
  s = CheckBytes(q);
  if (!s.ok()) return s;
  const uint64_t cols = static_cast<uint64_t>(q.dims.back());
  if (cols == 0) return absl::OkStatus();
  const uint64_t rows = *q.NumElements() / cols;
  const uint64_t row_bytes = *GgmlRowBytes(q.quant.block_type, cols);
  for (uint64_t r = 0; r < rows; ++r) {
    DequantizeGgmlRow(q.quant.block_type, q.data.data() + r * row_bytes, cols, out + r * cols);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> DequantizeToF32(const Tensor& q,
                                                   const Tensor* scale,
                                                   const Tensor* zero_point) {
  auto n = q.NumElements();
  if (!n.ok()) return n.status();
  std::vector<float> out(*n);
  absl::Status s = DequantizeInto(q, scale, zero_point, out.data());
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<float>> DequantizeToF32(const Tensor& q,
                                                   const Tensor& scale,
                                                   const Tensor* zero_point) {
  return DequantizeToF32(q, &scale, zero_point);
}

absl::StatusOr<Tensor> DequantizeTensor(const Tensor& q, const Tensor& scale,
                                        const Tensor* zero_point) {
  return DequantizeTensor(q, &scale, zero_point);
}

absl::StatusOr<Tensor> DequantizeTensor(const Tensor& q, const Tensor* scale,
                                        const Tensor* zero_point) {
  auto values = DequantizeToF32(q, scale, zero_point);
  if (!values.ok()) return values.status();
  Tensor t;
  t.name = q.name;
  t.dtype = DType::kF32;
  t.dims = q.dims;
  t.provenance = q.provenance;
  t.role = q.role;
  t.layer = q.layer;
  std::vector<uint8_t> bytes(values->size() * sizeof(float));
  if (!bytes.empty()) std::memcpy(bytes.data(), values->data(), bytes.size());
  t.data = TensorData::Owned(std::move(bytes));
  return t;
}

}  // namespace slimpack::ir
