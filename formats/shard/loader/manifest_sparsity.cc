// Sparsity records (spec.md section 5, "Sparsity"): each is checked against
// its tensor's shape, dtype and layout, never against payload bytes.
#include "formats/shard/loader/manifest_sparsity.h"

#include <cmath>
#include <string>

namespace slimpack::loader::internal {
namespace {

// Allowed difference between the stored ratio and zeros / numel: the writer
// prints the double exactly, so only a hand-edited record differs.
constexpr double kRatioTolerance = 1e-9;

Status ParseRecord(const JsonValue& v, const ObjectPath& tensor_path, const Manifest& m,
                   TensorInfo* t) {
  ObjectPath path{nullptr, "sparsity", -1, {}, &tensor_path};
  Fields f(v, path);
  if (!v.is_object()) return f.Error("", "expected an object, found " + DescribeValue(v));
  SparsityInfo& s = t->sparsity;
  s.present = true;
  SLP_ASSIGN_OR_RETURN(std::string pattern, f.String("pattern"));
  if (pattern != shard::kSparsity2of4 && pattern != shard::kSparsityUnstructured) {
    return f.Error("pattern", "unknown pattern \"" + pattern + "\" (supported: " +
                                  std::string(shard::kSparsityUnstructured) + ", " +
                                  std::string(shard::kSparsity2of4) + ")",
                   StatusCode::kUnimplemented);
  }
  s.two_of_four = pattern == shard::kSparsity2of4;
  SLP_ASSIGN_OR_RETURN(std::string storage, f.String("storage"));
  if (storage != shard::kSparseStorageDense && storage != shard::kLayoutSparse2of4) {
    return f.Error("storage", "unknown storage \"" + storage + "\" (supported: " +
                                  std::string(shard::kSparseStorageDense) + ", " +
                                  std::string(shard::kLayoutSparse2of4) + ")",
                   StatusCode::kUnimplemented);
  }
  s.packed = storage == shard::kLayoutSparse2of4;
  const bool layout_packed = t->layout.kind == LayoutKind::kSparse2of4;
  if (s.packed != layout_packed) {
    return f.Error("storage", "storage \"" + storage + "\" disagrees with the tensor's layout (" +
                                  (layout_packed ? "sparse_2_4" : "not sparse_2_4") + ")");
  }
  if (s.packed && !s.two_of_four) {
    return f.Error("storage", "storage sparse_2_4 needs pattern \"2:4\", found \"" + pattern + "\"");
  }
  if (t->layout.kind == LayoutKind::kGgmlBlocks) {
    return f.Error("", "a sparsity record on a ggml_blocks tensor is not allowed: its elements "
                       "are block bytes, not values");
  }
  if (t->layout.zero_point >= 0) {
    return f.Error("", "a sparsity record on an asymmetric quantized tensor (zero point '" +
                           m.tensors[static_cast<size_t>(t->layout.zero_point)].name +
                           "') is not allowed: the format records exact zeros only for "
                           "symmetric quantization");
  }
  uint64_t axis = 0;
  SLP_ASSIGN_OR_RETURN(axis, f.SafeUint("axis"));
  const size_t rank = t->shape.size();
  if (!((axis == 1 && rank >= 2) || (axis == 0 && rank == 2))) {
    return f.Error("axis", "axis " + std::to_string(axis) + " does not fit rank " +
                               std::to_string(rank) + " (axis 1: rank >= 2; axis 0: rank 2)");
  }
  s.axis = static_cast<uint32_t>(axis);
  SLP_ASSIGN_OR_RETURN(s.criterion, f.OptionalString("criterion", ""));
  SLP_ASSIGN_OR_RETURN(s.zeros, f.SafeUint("zeros"));
  if (s.zeros > t->numel) {
    return f.Error("zeros", std::to_string(s.zeros) + " zeros in a tensor of " +
                                std::to_string(t->numel) + " elements");
  }
  if (s.two_of_four) {
    const uint64_t cols = axis == 1 ? (t->shape[0] == 0 ? 0 : t->numel / t->shape[0]) : t->shape[0];
    if (cols % shard::kSparseGroup != 0) {
      return f.Error("axis", "2:4 needs a multiple of 4 inputs along the axis, found " +
                                 std::to_string(cols));
    }
    if (s.zeros < t->numel / 2) {
      return f.Error("zeros", "2:4 sparsity zeroes at least half of the " +
                                  std::to_string(t->numel) + " elements, found " +
                                  std::to_string(s.zeros) + " zeros");
    }
  }
  SLP_ASSIGN_OR_RETURN(s.ratio, f.Number("ratio"));
  const double want = t->numel == 0 ? 0.0 : static_cast<double>(s.zeros) / static_cast<double>(t->numel);
  if (!(std::fabs(s.ratio - want) <= kRatioTolerance)) {
    return f.Error("ratio", "ratio " + std::to_string(s.ratio) + " disagrees with zeros / numel = " +
                                std::to_string(s.zeros) + " / " + std::to_string(t->numel) + " = " +
                                std::to_string(want));
  }
  return OkStatus();
}

}  // namespace

Status ParseSparsityRecords(const Fields& top, const PendingLayouts& pending, Manifest* m) {
  for (const auto& [i, record] : pending) {
    TensorInfo& t = m->tensors[i];
    ObjectPath path{top.path().file, "tensors", static_cast<int64_t>(i), t.name};
    SLP_RETURN_IF_ERROR(ParseRecord(*record, path, *m, &t));
  }
  for (size_t i = 0; i < m->tensors.size(); ++i) {
    const TensorInfo& t = m->tensors[i];
    if (t.layout.kind == LayoutKind::kSparse2of4 && !t.sparsity.present) {
      ObjectPath path{top.path().file, "tensors", static_cast<int64_t>(i), t.name};
      return Fields(top.object(), path)
          .Error("layout", "layout sparse_2_4 needs a \"sparsity\" record");
    }
  }
  return OkStatus();
}

}  // namespace slimpack::loader::internal
