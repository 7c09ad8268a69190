// Tensor layouts of the manifest (spec.md section 5, "Layouts"): resolves
// scale and zero-point references and checks their dtypes and shapes.
#include "formats/shard/loader/manifest_layout.h"

#include <string>
#include <vector>

namespace slimpack::loader::internal {
namespace {

// Resolves a scale / zero-point reference and checks its dtype (want_dtype
// or alt_dtype; the same when only one is allowed) and shape.
Status ResolveQuantParam(const Fields& f, std::string_view key, const Manifest& m,
                         DType want_dtype, const std::vector<uint64_t>& want_shape,
                         bool required, int32_t* out, DType alt_dtype) {
  const JsonValue* v = f.Optional(key);
  if (v == nullptr) {
    if (required) return f.Error(key, "missing required key");
    return OkStatus();
  }
  if (!v->is_string()) {
    return f.Error(key, "expected a tensor name, found " + DescribeValue(*v));
  }
  int32_t idx = m.FindTensor(v->string_value());
  if (idx < 0) {
    return f.Error(key, "refers to missing tensor '" + std::string(v->string_value()) + "'");
  }
  const TensorInfo& p = m.tensors[static_cast<size_t>(idx)];
  if (p.dtype != want_dtype && p.dtype != alt_dtype) {
    return f.Error(key, "tensor '" + p.name + "' has dtype " +
                            std::string(shard::DTypeName(p.dtype)) + ", expected " +
                            std::string(shard::DTypeName(want_dtype)) +
                            (alt_dtype != want_dtype
                                 ? " or " + std::string(shard::DTypeName(alt_dtype))
                                 : std::string()));
  }
  if (p.shape != want_shape) {
    auto dims = [](const std::vector<uint64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) {
        out += (i ? "," : "") + std::to_string(s[i]);
      }
      return out + "]";
    };
    return f.Error(key, "tensor '" + p.name + "' has shape " + dims(p.shape) +
                            ", expected " + dims(want_shape));
  }
  *out = idx;
  return OkStatus();
}

// sparse_2_4 (spec.md section 5, "Sparsity"): a float tensor of rank >= 2
// grouped along axis 1 (the flattened trailing dims), a multiple of 4 inputs
// per row, and a plain u4 index tensor of shape [rows, cols / 4].
Status ParseSparse2of4(const Fields& f, const Manifest& m, TensorInfo* t) {
  t->layout.kind = LayoutKind::kSparse2of4;
  if (t->dtype != DType::kF32 && t->dtype != DType::kF16 && t->dtype != DType::kBF16) {
    return f.Error("kind", "layout sparse_2_4 needs dtype f32, f16 or bf16, found " +
                               std::string(shard::DTypeName(t->dtype)));
  }
  uint64_t axis = 0;
  SLP_ASSIGN_OR_RETURN(axis, f.SafeUint("axis"));
  if (axis != 1) {
    return f.Error("axis", "sparse_2_4 packs groups along axis 1 only, found " +
                               std::to_string(axis), StatusCode::kUnimplemented);
  }
  if (t->shape.size() < 2 || t->shape[0] == 0) {
    return f.Error("", "sparse_2_4 needs rank >= 2 with at least one row, found rank " +
                           std::to_string(t->shape.size()));
  }
  const uint64_t rows = t->shape[0], cols = t->numel / rows;
  if (cols % shard::kSparseGroup != 0) {
    return f.Error("", "sparse_2_4 needs a multiple of 4 inputs per row, found " +
                           std::to_string(cols));
  }
  SLP_RETURN_IF_ERROR(ResolveQuantParam(f, "indices", m, DType::kU4,
                                        {rows, cols / shard::kSparseGroup},
                                        /*required=*/true, &t->layout.indices, DType::kU4));
  if (m.tensors[static_cast<size_t>(t->layout.indices)].layout.kind != LayoutKind::kPlain) {
    return f.Error("indices", "index tensor '" +
                                  m.tensors[static_cast<size_t>(t->layout.indices)].name +
                                  "' must have layout plain");
  }
  return OkStatus();
}

// ggml_blocks (spec.md, "ggml_blocks"): u8 block bytes along the last axis
// (rank >= 1), a known block type, whole blocks per row, nbytes exactly
// rows x blocks per row x block bytes; no scale or zero point.
Status ParseGgmlBlocks(const Fields& f, const Manifest& m, TensorInfo* t) {
  t->layout.kind = LayoutKind::kGgmlBlocks;
  if (!m.Requires(shard::kFeatureGgmlBlocks)) {
    return f.Error("kind", "layout ggml_blocks is used but required_features does not "
                           "list \"" + std::string(shard::kFeatureGgmlBlocks) + "\"");
  }
  if (t->dtype != DType::kU8) {
    return f.Error("kind", "layout ggml_blocks needs dtype u8, found " +
                               std::string(shard::DTypeName(t->dtype)));
  }
  if (t->shape.empty()) return f.Error("kind", "layout ggml_blocks needs rank >= 1");
  SLP_ASSIGN_OR_RETURN(std::string_view type_name, f.StringView("block_type"));
  const shard::GgmlBlockType* type = shard::FindGgmlBlockType(type_name);
  if (type == nullptr) {
    std::string known;
    for (const shard::GgmlBlockType& k : shard::kGgmlBlockTypes) {
      known += (known.empty() ? "" : ", ") + std::string(k.name);
    }
    return f.Error("block_type", "unknown block type \"" + std::string(type_name) +
                                     "\" (supported: " + known + ")",
                   StatusCode::kUnimplemented);
  }
  uint64_t axis = 0;
  SLP_ASSIGN_OR_RETURN(axis, f.SafeUint("axis"));
  if (axis + 1 != t->shape.size()) {
    return f.Error("axis", "ggml blocks run along the last axis (" +
                               std::to_string(t->shape.size() - 1) + "), found " +
                               std::to_string(axis));
  }
  const uint64_t cols = t->shape.back();
  if (cols % type->block_size != 0) {
    return f.Error("", "last dim " + std::to_string(cols) + " is not a multiple of " +
                           std::string(type->name) + "'s block size " +
                           std::to_string(type->block_size));
  }
  uint64_t expected = 0;
  if (__builtin_mul_overflow(t->numel / type->block_size, type->block_bytes, &expected)) {
    return f.Error("shape", "byte size overflows 64 bits");
  }
  if (t->nbytes != expected) {
    return f.Error("nbytes", "nbytes " + std::to_string(t->nbytes) + " does not match " +
                                 std::to_string(t->numel) + " weights of " +
                                 std::string(type->name) + " (expected " +
                                 std::to_string(expected) + ")");
  }
  for (const char* key : {"scale", "zero_point"}) {
    if (f.Optional(key) != nullptr) {
      return f.Error(key, "layout ggml_blocks has no " + std::string(key) +
                              " (each block holds its own)");
    }
  }
  t->layout.axis = static_cast<int32_t>(axis);
  t->layout.group_size = type->block_size;
  t->layout.block_type = type->ggml_type;
  return OkStatus();
}

Status ParseLayout(const JsonValue& v, const ObjectPath& tensor_path,
                   const Manifest& m, TensorInfo* t) {
  ObjectPath path{nullptr, "layout", -1, {}, &tensor_path};
  Fields f(v, path);
  if (!v.is_object()) {
    return f.Error("", "expected an object, found " + DescribeValue(v));
  }
  SLP_ASSIGN_OR_RETURN(std::string_view kind_view, f.StringView("kind"));
  // block_rows belongs to fp8_e4m3_groupwise alone; on any other layout it
  // is refused, not ignored (ignoring it would read its scales wrongly).
  if (f.Optional("block_rows") != nullptr && kind_view != shard::kLayoutFp8E4M3GroupWise) {
    return f.Error("block_rows", "layout " + std::string(kind_view) +
                                     " has no block_rows (fp8_e4m3_groupwise only)");
  }
  if (kind_view == shard::kLayoutPlain) {
    t->layout.kind = LayoutKind::kPlain;
    return OkStatus();
  }
  if (kind_view == shard::kLayoutSparse2of4) return ParseSparse2of4(f, m, t);
  if (kind_view == shard::kLayoutGgmlBlocks) return ParseGgmlBlocks(f, m, t);
  const std::string kind(kind_view);
  const bool per_channel = kind == shard::kLayoutInt8PerChannel;
  const bool int4 = kind == shard::kLayoutInt4GroupWise;
  const bool int8_groups = kind == shard::kLayoutInt8GroupWise;
  // fp8_e4m3_groupwise shares the group geometry and scale of the integer
  // group-wise layouts; only its dtype, feature and zero point differ.
  const bool fp8 = kind == shard::kLayoutFp8E4M3GroupWise;
  if (!per_channel && !int4 && !int8_groups && !fp8) {
    return f.Error("kind", "unknown layout \"" + kind + "\" (supported: plain, " +
                               std::string(shard::kLayoutInt8PerChannel) + ", " +
                               std::string(shard::kLayoutInt4GroupWise) + ", " +
                               std::string(shard::kLayoutInt8GroupWise) + ", " +
                               std::string(shard::kLayoutSparse2of4) + ", " +
                               std::string(shard::kLayoutGgmlBlocks) + ", " +
                               std::string(shard::kLayoutFp8E4M3GroupWise) + ")",
                   StatusCode::kUnimplemented);
  }
  if (int8_groups && !m.Requires(shard::kFeatureInt8GroupWise)) {
    return f.Error("kind", "layout int8_groupwise is used but required_features does not "
                           "list \"" + std::string(shard::kFeatureInt8GroupWise) + "\"");
  }
  if (fp8 && !m.Requires(shard::kFeatureFp8E4M3)) {
    return f.Error("kind", "layout fp8_e4m3_groupwise is used but required_features does "
                           "not list \"" + std::string(shard::kFeatureFp8E4M3) + "\"");
  }
  const bool int8 = per_channel || int8_groups;
  t->layout.kind = per_channel   ? LayoutKind::kInt8PerChannel
                   : int4        ? LayoutKind::kInt4GroupWise
                   : int8_groups ? LayoutKind::kInt8GroupWise
                                 : LayoutKind::kFp8E4M3GroupWise;
  const bool dtype_ok = fp8    ? t->dtype == DType::kU8
                        : int8 ? (t->dtype == DType::kI8 || t->dtype == DType::kU8)
                               : (t->dtype == DType::kI4 || t->dtype == DType::kU4);
  if (!dtype_ok) {
    return f.Error("kind", "layout " + kind + " needs dtype " +
                               (fp8 ? "u8" : int8 ? "i8 or u8" : "i4 or u4") + ", found " +
                               std::string(shard::DTypeName(t->dtype)));
  }
  // FP8 codes are signed values and the formula has no zero point, so a
  // zero_point key is refused rather than ignored (ignoring it would misread
  // a writer that meant one); no packing either (one byte per element).
  if (fp8) {
    for (const char* key : {"packing", "zero_point"}) {
      if (f.Optional(key) != nullptr) {
        return f.Error(key, "layout fp8_e4m3_groupwise has no " + std::string(key) +
                                " (found " + DescribeValue(*f.Optional(key)) + ")");
      }
    }
  }
  uint64_t axis = 0;
  SLP_ASSIGN_OR_RETURN(axis, f.SafeUint("axis"));
  if (axis >= t->shape.size()) {
    return f.Error("axis", "axis " + std::to_string(axis) +
                               " is out of range for rank " +
                               std::to_string(t->shape.size()));
  }
  t->layout.axis = static_cast<int32_t>(axis);
  std::vector<uint64_t> param_shape;
  if (per_channel) {
    param_shape = {t->shape[axis]};
  } else {
    SLP_ASSIGN_OR_RETURN(t->layout.group_size, f.SafeUint("group_size"));
    if (t->layout.group_size == 0) return f.Error("group_size", "must be at least 1");
    if (int4) {
      SLP_ASSIGN_OR_RETURN(std::string packing, f.String("packing"));
      if (packing != shard::kPackingLowNibbleFirst) {
        return f.Error("packing", "unknown packing \"" + packing + "\" (supported: " +
                                      std::string(shard::kPackingLowNibbleFirst) + ")",
                       StatusCode::kUnimplemented);
      }
    }
    param_shape = t->shape;
    const uint64_t g = t->layout.group_size;
    param_shape[axis] = t->shape[axis] / g + (t->shape[axis] % g != 0);
  }
  // block_rows: rows of an [out, in] FP8 matrix that share a scale row (a
  // checkpoint's 128 x 128 blocks). Other layouts refuse the key rather
  // than ignore it: ignoring it would read their scales with the wrong shape.
  if (f.Optional("block_rows") != nullptr) {  // fp8 (refused above for the others)
    if (!m.Requires(shard::kFeatureFp8BlockRows)) {
      return f.Error("block_rows", "block_rows is used but required_features does not list \"" +
                                       std::string(shard::kFeatureFp8BlockRows) + "\"");
    }
    SLP_ASSIGN_OR_RETURN(t->layout.block_rows, f.SafeUint("block_rows"));
    if (t->layout.block_rows == 0) return f.Error("block_rows", "must be at least 1");
    if (t->shape.size() != 2 || axis != 1) {
      return f.Error("block_rows", "block_rows needs a rank-2 tensor grouped along axis 1, "
                                   "found rank " + std::to_string(t->shape.size()) + " axis " +
                                   std::to_string(axis));
    }
    const uint64_t r = t->layout.block_rows;
    param_shape[0] = t->shape[0] / r + (t->shape[0] % r != 0);
  }
  // f16 scales only where the manifest declares them (an older reader
  // would otherwise meet them unannounced).
  const bool f16_scales = m.Requires(shard::kFeatureF16Scales);
  SLP_RETURN_IF_ERROR(ResolveQuantParam(f, "scale", m, DType::kF32, param_shape,
                                        /*required=*/true, &t->layout.scale,
                                        f16_scales ? DType::kF16 : DType::kF32));
  SLP_RETURN_IF_ERROR(ResolveQuantParam(f, "zero_point", m, t->dtype, param_shape,
                                        /*required=*/false, &t->layout.zero_point, t->dtype));
  for (int32_t p : {t->layout.scale, t->layout.zero_point}) {
    if (p >= 0 && m.tensors[static_cast<size_t>(p)].layout.kind != LayoutKind::kPlain) {
      return f.Error("", "quantization parameter '" +
                             m.tensors[static_cast<size_t>(p)].name +
                             "' must have layout plain");
    }
  }
  return OkStatus();
}

}  // namespace

Status ParseLayouts(const Fields& top, const PendingLayouts& pending, Manifest* m) {
  for (const auto& [i, layout] : pending) {
    TensorInfo& t = m->tensors[i];
    ObjectPath path{top.path().file, "tensors", static_cast<int64_t>(i), t.name};
    SLP_RETURN_IF_ERROR(ParseLayout(*layout, path, *m, &t));
  }
  return OkStatus();
}

}  // namespace slimpack::loader::internal
