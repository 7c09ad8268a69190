// The manifest's "tensors" array: each entry's dtype, shape, shard and byte
// range, then storage order and shard coverage across all entries. Split
// from manifest_parser.cc, which calls ParseTensors once the shards are known.
#include "formats/shard/loader/manifest_tensors.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace slimpack::loader::internal {
namespace {

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string SupportedDTypes() {
  std::string out;
  for (const auto& e : shard::kDTypes) {
    if (!out.empty()) out += ", ";
    out += std::string(e.name);
  }
  return out;
}

Status ParseShape(const Fields& f, TensorInfo* t) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* shape,
                       f.RequiredOf("shape", JsonValue::Type::kArray));
  if (shape->size() > shard::kMaxTensorRank) {
    return f.Error("shape", "rank " + std::to_string(shape->size()) +
                                " exceeds the maximum of " +
                                std::to_string(shard::kMaxTensorRank));
  }
  t->shape.resize(shape->size());
  t->numel = 1;
  bool overflow = false;
  size_t d = 0;
  for (const JsonValue& dim : shape->items()) {
    Status s = internal::CheckSafeUint(dim, "shape", &t->shape[d],
                                       static_cast<int64_t>(d));
    if (!s.ok()) return f.Error("", s.message());
    uint64_t r;
    if (__builtin_mul_overflow(t->numel, t->shape[d], &r)) overflow = true;
    t->numel = r;
    ++d;
  }
  // A zero dim makes numel 0 even if other dims overflowed.
  for (uint64_t dim : t->shape) {
    if (dim == 0) {
      t->numel = 0;
      overflow = false;
    }
  }
  if (overflow) return f.Error("shape", "element count overflows 64 bits");
  return OkStatus();
}

// `packed_2of4`: the layout is sparse_2_4, whose payload holds half the
// elements (the index tensor is a separate entry). `blocks`: the layout is
// ggml_blocks, whose byte count depends on its block type; ParseLayout
// checks it.
Status ParseTensor(const Fields& f, const Manifest& m, bool packed_2of4, bool blocks,
                   TensorInfo* t) {
  SLP_ASSIGN_OR_RETURN(std::string_view dtype, f.StringView("dtype"));
  if (!shard::DTypeFromName(dtype, &t->dtype)) {
    return f.Error("dtype", "unknown dtype \"" + std::string(dtype) + "\" (supported: " +
                                SupportedDTypes() + ")",
                   StatusCode::kUnimplemented);
  }
  SLP_RETURN_IF_ERROR(ParseShape(f, t));
  uint64_t shard_index = 0;
  SLP_ASSIGN_OR_RETURN(shard_index, f.SafeUint("shard"));
  if (shard_index >= m.shards.size()) {
    return f.Error("shard", "shard index " + std::to_string(shard_index) +
                                " is out of range: the artifact has " +
                                std::to_string(m.shards.size()) + " shards",
                   StatusCode::kOutOfRange);
  }
  t->shard = static_cast<uint32_t>(shard_index);
  SLP_ASSIGN_OR_RETURN(t->offset, f.SafeUint("offset"));
  SLP_ASSIGN_OR_RETURN(t->nbytes, f.SafeUint("nbytes"));

  const uint64_t bits = shard::DTypeBits(t->dtype);
  uint64_t total_bits = 0;
  const uint64_t stored = packed_2of4 ? t->numel / 2 : t->numel;
  if (__builtin_mul_overflow(stored, bits, &total_bits)) {
    return f.Error("shape", "byte size overflows 64 bits");
  }
  const uint64_t expected = total_bits / 8 + (total_bits % 8 != 0);
  if (!blocks && t->nbytes != expected) {
    return f.Error("nbytes", "nbytes " + std::to_string(t->nbytes) +
                                 " does not match " + std::to_string(stored) +
                                 (packed_2of4 ? " stored (2:4 packed)" : "") +
                                 " elements of " + std::string(dtype) + " (expected " +
                                 std::to_string(expected) + ")");
  }
  if (t->offset % shard::kTensorAlignment != 0) {
    return f.Error("offset", "offset " + std::to_string(t->offset) +
                                 " is not a multiple of " +
                                 std::to_string(shard::kTensorAlignment));
  }
  if (t->offset < shard::kDataRegionOffset) {
    return f.Error("offset", "offset " + std::to_string(t->offset) +
                                 " is inside the shard header region (payloads "
                                 "start at " +
                                 std::to_string(shard::kDataRegionOffset) + ")");
  }
  const ShardInfo& s = m.shards[t->shard];
  // Both terms are <= 2^53, so the sum cannot wrap.
  if (t->offset + t->nbytes > s.size) {
    return f.Error("offset",
                   "range [" + std::to_string(t->offset) + ", " +
                       std::to_string(t->offset + t->nbytes) +
                       ") extends past the end of shard '" + s.file + "' (size " +
                       std::to_string(s.size) + "); a tensor cannot span shards",
                   StatusCode::kOutOfRange);
  }
  if (const JsonValue* layer = f.Optional("layer")) {
    uint64_t l = 0;
    Status st = internal::CheckSafeUint(*layer, "layer", &l);
    if (!st.ok()) return f.Error("", st.message());
    t->layer = static_cast<int64_t>(l);
  }
  SLP_ASSIGN_OR_RETURN(t->role, f.OptionalString("role", ""));
  SLP_ASSIGN_OR_RETURN(t->source, f.OptionalString("source", ""));
  return OkStatus();
}
// Storage order, packing and shard coverage (spec.md sections 2 and 5).
Status CheckStorageOrder(const Manifest& m, const std::string& file) {
  uint64_t prev_end = 0;
  int64_t prev_shard = -1;
  const TensorInfo* prev = nullptr;
  auto fail = [&](const TensorInfo& t, size_t i, const std::string& msg) {
    return InvalidArgumentError(file + ": tensors[" + std::to_string(i) + "] '" +
                                t.name + "': " + msg);
  };
  auto close_shard = [&](int64_t s) -> Status {
    if (s < 0) return OkStatus();
    const ShardInfo& info = m.shards[static_cast<size_t>(s)];
    uint64_t want = std::max(shard::kDataRegionOffset, AlignUp(prev_end, 64));
    if (info.size != want) {
      return InvalidArgumentError(
          file + ": shards[" + std::to_string(s) + "] '" + info.file +
          "': size " + std::to_string(info.size) +
          " does not match its last tensor, which ends at " +
          std::to_string(prev_end) + " (expected size " + std::to_string(want) +
          "); shards must not carry unreferenced bytes");
    }
    return OkStatus();
  };
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorInfo& t = m.tensors[i];
    if (static_cast<int64_t>(t.shard) != prev_shard) {
      if (static_cast<int64_t>(t.shard) != prev_shard + 1) {
        if (static_cast<int64_t>(t.shard) < prev_shard) {
          return fail(t, i, "out of storage order: shard " +
                                std::to_string(t.shard) + " after shard " +
                                std::to_string(prev_shard) +
                                " (tensors must be sorted by shard, offset)");
        }
        return InvalidArgumentError(
            file + ": shards[" + std::to_string(prev_shard + 1) + "] '" +
            m.shards[static_cast<size_t>(prev_shard + 1)].file +
            "' holds no tensor");
      }
      SLP_RETURN_IF_ERROR(close_shard(prev_shard));
      prev_shard = t.shard;
      prev_end = shard::kDataRegionOffset;
      prev = nullptr;
    }
    const uint64_t expected_offset = AlignUp(prev_end, shard::kTensorAlignment);
    if (t.offset < prev_end) {
      return fail(t, i, "range [" + std::to_string(t.offset) + ", " +
                            std::to_string(t.offset + t.nbytes) +
                            ") overlaps tensor '" + (prev ? prev->name : "") +
                            "' ending at " + std::to_string(prev_end) +
                            " in shard '" + m.shards[t.shard].file +
                            "' (or tensors are out of offset order)");
    }
    if (t.offset != expected_offset) {
      return fail(t, i, "offset " + std::to_string(t.offset) + " leaves a hole of " +
                            std::to_string(t.offset - prev_end) +
                            " bytes after offset " + std::to_string(prev_end) +
                            " (expected offset " + std::to_string(expected_offset) +
                            "; payloads are packed)");
    }
    if (prev != nullptr && prev->offset == t.offset &&
        (prev->nbytes > t.nbytes ||
         (prev->nbytes == t.nbytes && prev->name >= t.name))) {
      return fail(t, i, "out of storage order (shard, offset, nbytes, name) "
                        "after tensor '" + prev->name + "'");
    }
    prev_end = t.offset + t.nbytes;
    prev = &t;
  }
  if (prev_shard + 1 != static_cast<int64_t>(m.shards.size())) {
    return InvalidArgumentError(
        file + ": shards[" + std::to_string(prev_shard + 1) + "] '" +
        m.shards[static_cast<size_t>(prev_shard + 1)].file + "' holds no tensor");
  }
  return close_shard(prev_shard);
}

}  // namespace

Status ParseTensors(const Fields& top, Manifest* m, PendingLayouts* pending,
                    PendingLayouts* pending_sparsity) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* arr,
                       top.RequiredOf("tensors", JsonValue::Type::kArray));
  if (arr->size() > INT32_MAX) return top.Error("tensors", "too many tensors");
  m->tensors.resize(arr->size());
  m->tensor_index.Reserve(arr->size());
  size_t pos = 0;
  for (const JsonValue& item : arr->items()) {
    const size_t i = pos++;
    TensorInfo& t = m->tensors[i];
    ObjectPath path{top.path().file, "tensors", static_cast<int64_t>(i)};
    Fields f(item, path);
    if (!item.is_object()) {
      return f.Error("", "expected an object, found " + internal::DescribeValue(item));
    }
    SLP_ASSIGN_OR_RETURN(t.name, f.String("name"));
    if (t.name.empty() || t.name.size() > shard::kMaxNameBytes ||
        t.name.find('\0') != std::string::npos) {
      return f.Error("name", "tensor names must be 1 to " +
                                 std::to_string(shard::kMaxNameBytes) +
                                 " bytes with no NUL, found " +
                                 std::to_string(t.name.size()) + " bytes");
    }
    path.name = t.name;
    int32_t first = -1;
    if (!m->tensor_index.Insert(t.name, static_cast<int32_t>(i), &first)) {
      return f.Error("", "duplicate tensor name (first at tensors[" +
                             std::to_string(first) + "])");
    }
    const JsonValue* peek = f.Optional("layout");
    const JsonValue* peek_kind = peek != nullptr && peek->is_object() ? peek->Find("kind") : nullptr;
    const bool packed = peek_kind != nullptr && peek_kind->is_string() &&
                        peek_kind->string_value() == shard::kLayoutSparse2of4;
    const bool blocks = peek_kind != nullptr && peek_kind->is_string() &&
                        peek_kind->string_value() == shard::kLayoutGgmlBlocks;
    SLP_RETURN_IF_ERROR(ParseTensor(f, *m, packed, blocks, &t));
    SLP_ASSIGN_OR_RETURN(const JsonValue* layout,
                         f.RequiredOf("layout", JsonValue::Type::kObject));
    if (const JsonValue* sparsity = f.Optional("sparsity")) {
      pending_sparsity->emplace_back(i, sparsity);
    }
    const JsonValue* kind = layout->Find("kind");
    // block_rows belongs to fp8_e4m3_groupwise (manifest_layout.cc refuses
    // it on the other quantized layouts); on a plain one it is refused too,
    // not ignored.
    if (kind != nullptr && kind->is_string() && kind->string_value() == shard::kLayoutPlain &&
        layout->Find("block_rows") != nullptr) {
      const ObjectPath named{top.path().file, "tensors", static_cast<int64_t>(i), t.name};
      const ObjectPath lp{nullptr, "layout", -1, {}, &named};
      return Fields(*layout, lp).Error("block_rows",
                                       "layout plain has no block_rows (fp8_e4m3_groupwise only)");
    }
    if (kind == nullptr || !kind->is_string() ||
        kind->string_value() != shard::kLayoutPlain) {
      // Any non-plain kind for now; ParseLayout sets the real one.
      t.layout.kind = LayoutKind::kInt8PerChannel;
      pending->emplace_back(i, layout);
    }
  }
  return CheckStorageOrder(*m, *top.path().file);
}

}  // namespace slimpack::loader::internal
