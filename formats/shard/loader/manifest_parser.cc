// ParseManifest: the top level, shards, carried files and tensors. Every
// check of spec.md section 9 that needs no shard bytes starts here (layouts
// are in manifest_layout.cc, the model/graph section in manifest_model.cc).
#include <set>
#include <string>
#include <unordered_set>

#include "formats/shard/loader/json_reader.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"
#include "formats/shard/loader/manifest_layout.h"
#include "formats/shard/loader/manifest_sparsity.h"
#include "formats/shard/loader/manifest_model.h"
#include "formats/shard/loader/sha256.h"

namespace slimpack::loader {
namespace {

using internal::Fields;
using internal::ObjectPath;
using internal::PendingLayouts;

constexpr std::string_view kSelfHashKey = "manifest_sha256";

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string SupportedDTypes() {
  std::string out;
  for (const auto& e : shard::kDTypes) {
    if (!out.empty()) out += ", ";
    out += std::string(e.name);
  }
  return out;
}

Status ParseVersion(const Fields& top, Manifest* m) {
  SLP_ASSIGN_OR_RETURN(std::string format, top.String("format"));
  if (format != shard::kFormatName) {
    return top.Error("format",
                     "expected \"" + std::string(shard::kFormatName) +
                         "\", found \"" + format + "\"",
                     StatusCode::kUnimplemented);
  }
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       top.RequiredOf("format_version", JsonValue::Type::kObject));
  ObjectPath path{top.path().file, "format_version"};
  Fields fv(*v, path);
  uint64_t major = 0, minor = 0;
  SLP_ASSIGN_OR_RETURN(major, fv.SafeUint("major"));
  SLP_ASSIGN_OR_RETURN(minor, fv.SafeUint("minor"));
  if (major > shard::kFormatVersionMajor) {
    return fv.Error("major",
                    "artifact format " + std::to_string(major) + "." +
                        std::to_string(minor) +
                        " was made by a newer tool; this loader reads major "
                        "version " +
                        std::to_string(shard::kFormatVersionMajor),
                    StatusCode::kUnimplemented);
  }
  if (major < 1) return fv.Error("major", "version 0 does not exist");
  m->version_major = static_cast<uint32_t>(major);
  m->version_minor = static_cast<uint32_t>(minor);

  SLP_ASSIGN_OR_RETURN(const JsonValue* features,
                       top.RequiredOf("required_features", JsonValue::Type::kArray));
  for (const JsonValue& f : features->items()) {
    if (!f.is_string()) {
      return top.Error("required_features", "expected strings, found " +
                                                internal::DescribeValue(f));
    }
    if (f.string_value() == shard::kFeatureSparse2of4) continue;
    return top.Error("required_features",
                     "requires feature \"" + std::string(f.string_value()) +
                         "\", which this loader does not support (made by a "
                         "newer tool; supported features: " +
                         std::string(shard::kFeatureSparse2of4) + ")",
                     StatusCode::kUnimplemented);
  }
  return OkStatus();
}

Status CheckCompleteAndSelfHash(const Fields& top, std::string_view text,
                                const ManifestOptions& options, Manifest* m) {
  const JsonValue* complete = top.Optional("complete");
  if (complete == nullptr || !complete->is_bool() || !complete->bool_value()) {
    return top.Error("complete",
                     "incomplete artifact: the completion marker "
                     "\"complete\": true is " +
                         std::string(complete == nullptr
                                         ? "missing"
                                         : "set to " + internal::DescribeValue(*complete)) +
                         " (was the writer interrupted?)",
                     StatusCode::kFailedPrecondition);
  }
  SLP_ASSIGN_OR_RETURN(m->manifest_sha256, top.Sha256Hex(kSelfHashKey));
  if (!options.check_self_hash) return OkStatus();
  const JsonValue* v = top.object().Find(kSelfHashKey);
  // Sha256Hex guaranteed 64 plain hex characters; a string written with
  // escapes would be longer in the text and is rejected here.
  if (v->end_offset() - v->begin_offset() != 66) {
    return top.Error(kSelfHashKey, "must be written without escapes");
  }
  Sha256 h;
  h.Update(text.substr(0, v->begin_offset() + 1));
  h.Update(std::string(64, '0'));
  h.Update(text.substr(v->end_offset() - 1));
  std::string actual = Sha256::ToHex(h.Final());
  if (actual != m->manifest_sha256) {
    return top.Error(kSelfHashKey,
                     "manifest checksum mismatch: recorded " +
                         m->manifest_sha256 + ", computed " + actual +
                         " (the manifest was modified or corrupted)",
                     StatusCode::kDataLoss);
  }
  return OkStatus();
}

Status ParseFileDigests(const Fields& top, std::string_view key,
                        bool safe_names, std::vector<FileDigest>* out) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* arr,
                       top.RequiredOf(key, JsonValue::Type::kArray));
  out->reserve(arr->size());
  size_t pos = 0;
  for (const JsonValue& item : arr->items()) {
    const size_t i = pos++;
    ObjectPath path{top.path().file, key, static_cast<int64_t>(i)};
    if (!item.is_object()) {
      return Fields(item, path).Error("", "expected an object, found " +
                                              internal::DescribeValue(item));
    }
    Fields f(item, path);
    FileDigest d;
    SLP_ASSIGN_OR_RETURN(d.file, f.String("file"));
    if (safe_names && !IsSafeArtifactFileName(d.file)) {
      return f.Error("file", "unsafe file name \"" + d.file +
                                 "\": names must match [A-Za-z0-9._-]+ with "
                                 "no \"..\", and not be manifest.json or *.tmp");
    }
    SLP_ASSIGN_OR_RETURN(d.size, f.SafeUint("size"));
    SLP_ASSIGN_OR_RETURN(d.sha256, f.Sha256Hex("sha256"));
    out->push_back(std::move(d));
  }
  return OkStatus();
}

Status ParseProducer(const Fields& top, std::string_view text, Manifest* m) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       top.RequiredOf("producer", JsonValue::Type::kObject));
  ObjectPath path{top.path().file, "producer"};
  Fields f(*v, path);
  SLP_ASSIGN_OR_RETURN(m->producer_name, f.String("name"));
  SLP_ASSIGN_OR_RETURN(m->producer_version, f.String("version"));
  SLP_ASSIGN_OR_RETURN(const JsonValue* recipe, f.Required("recipe"));
  m->recipe_json = std::string(text.substr(
      recipe->begin_offset(), recipe->end_offset() - recipe->begin_offset()));
  return ParseFileDigests(f, "inputs", /*safe_names=*/false, &m->inputs);
}

Status ParseShards(const Fields& top, std::set<std::string>* file_names,
                   Manifest* m) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* arr,
                       top.RequiredOf("shards", JsonValue::Type::kArray));
  m->shards.reserve(arr->size());
  size_t pos = 0;
  for (const JsonValue& item : arr->items()) {
    const size_t i = pos++;
    ObjectPath path{top.path().file, "shards", static_cast<int64_t>(i)};
    Fields f(item, path);
    if (!item.is_object()) {
      return f.Error("", "expected an object, found " + internal::DescribeValue(item));
    }
    ShardInfo s;
    SLP_ASSIGN_OR_RETURN(s.file, f.String("file"));
    if (!IsSafeArtifactFileName(s.file)) {
      return f.Error("file", "unsafe shard file name \"" + s.file +
                                 "\": names must match [A-Za-z0-9._-]+ with no "
                                 "\"/\" or \"..\", and not be manifest.json or *.tmp");
    }
    if (!file_names->insert(s.file).second) {
      return f.Error("file", "file name \"" + s.file + "\" is used twice");
    }
    uint64_t index = 0;
    SLP_ASSIGN_OR_RETURN(index, f.SafeUint("index"));
    if (index != i) {
      return f.Error("index", "expected " + std::to_string(i) +
                                  " (its position in \"shards\"), found " +
                                  std::to_string(index));
    }
    s.index = static_cast<uint32_t>(i);
    SLP_ASSIGN_OR_RETURN(s.size, f.SafeUint("size"));
    if (s.size < shard::kDataRegionOffset || s.size % shard::kShardSizeAlignment != 0) {
      return f.Error("size", "shard size " + std::to_string(s.size) +
                                 " must be at least " +
                                 std::to_string(shard::kDataRegionOffset) +
                                 " and a multiple of " +
                                 std::to_string(shard::kShardSizeAlignment));
    }
    SLP_ASSIGN_OR_RETURN(s.sha256, f.Sha256Hex("sha256"));
    m->shards.push_back(std::move(s));
  }
  return OkStatus();
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
// elements (the index tensor is a separate entry).
Status ParseTensor(const Fields& f, const Manifest& m, bool packed_2of4, TensorInfo* t) {
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
  if (t->nbytes != expected) {
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
    SLP_RETURN_IF_ERROR(ParseTensor(f, *m, packed, &t));
    SLP_ASSIGN_OR_RETURN(const JsonValue* layout,
                         f.RequiredOf("layout", JsonValue::Type::kObject));
    if (const JsonValue* sparsity = f.Optional("sparsity")) {
      pending_sparsity->emplace_back(i, sparsity);
    }
    const JsonValue* kind = layout->Find("kind");
    if (kind == nullptr || !kind->is_string() ||
        kind->string_value() != shard::kLayoutPlain) {
      // Any non-plain kind for now; ParseLayout sets the real one.
      t.layout.kind = LayoutKind::kInt8PerChannel;
      pending->emplace_back(i, layout);
    }
  }
  return CheckStorageOrder(*m, *top.path().file);
}
}  // namespace

bool IsSafeArtifactFileName(std::string_view name) {
  if (name.empty() || name.size() > shard::kMaxFileNameBytes) return false;
  if (name == "." || name == ".." || name.find("..") != std::string_view::npos) {
    return false;
  }
  if (name == shard::kManifestFileName) return false;
  const std::string_view tmp = shard::kStagingSuffix;
  if (name.size() >= tmp.size() && name.substr(name.size() - tmp.size()) == tmp) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<std::string> ComputeManifestSelfHash(std::string_view text) {
  SLP_ASSIGN_OR_RETURN(JsonDocument doc, ParseJson(text));
  const JsonValue& root = doc.root();
  const JsonValue* v = root.is_object() ? root.Find(kSelfHashKey) : nullptr;
  if (v == nullptr || !v->is_string() || v->string_value().size() != 64 ||
      v->end_offset() - v->begin_offset() != 66) {
    return InvalidArgumentError(
        "manifest has no top-level manifest_sha256 string of 64 characters");
  }
  Sha256 h;
  h.Update(text.substr(0, v->begin_offset() + 1));
  h.Update(std::string(64, '0'));
  h.Update(text.substr(v->end_offset() - 1));
  return Sha256::ToHex(h.Final());
}

Result<Manifest> ParseManifest(std::string_view text,
                               const std::string& file_for_errors,
                               const ManifestOptions& options) {
  if (text.size() > shard::kMaxManifestBytes) {
    return ResourceExhaustedError(
        file_for_errors + ": " + std::to_string(text.size()) +
        " bytes exceeds the manifest size cap of " +
        std::to_string(shard::kMaxManifestBytes) + " bytes");
  }
  JsonLimits limits;
  limits.max_depth = shard::kMaxJsonDepth;
  Result<JsonDocument> parsed = ParseJson(text, limits);
  if (!parsed.ok()) return parsed.status().Annotate(file_for_errors);
  const JsonValue& root = parsed->root();
  ObjectPath top_path;
  top_path.file = &file_for_errors;
  Fields top(root, top_path);
  if (!root.is_object()) {
    return InvalidArgumentError(file_for_errors +
                                ": the manifest must be a JSON object, found " +
                                internal::DescribeValue(root));
  }
  Manifest m;
  SLP_RETURN_IF_ERROR(ParseVersion(top, &m));
  SLP_RETURN_IF_ERROR(CheckCompleteAndSelfHash(top, text, options, &m));
  SLP_RETURN_IF_ERROR(ParseProducer(top, text, &m));
  std::set<std::string> file_names;
  SLP_RETURN_IF_ERROR(ParseShards(top, &file_names, &m));
  SLP_RETURN_IF_ERROR(
      ParseFileDigests(top, "carried_files", /*safe_names=*/true, &m.carried_files));
  for (size_t i = 0; i < m.carried_files.size(); ++i) {
    if (!file_names.insert(m.carried_files[i].file).second) {
      return InvalidArgumentError(file_for_errors + ": carried_files[" +
                                  std::to_string(i) + "] file name \"" +
                                  m.carried_files[i].file + "\" is used twice");
    }
  }
  PendingLayouts pending, pending_sparsity;
  SLP_RETURN_IF_ERROR(ParseTensors(top, &m, &pending, &pending_sparsity));
  SLP_RETURN_IF_ERROR(internal::ParseLayouts(top, pending, &m));
  SLP_RETURN_IF_ERROR(internal::ParseSparsityRecords(top, pending_sparsity, &m));
  SLP_RETURN_IF_ERROR(internal::ParseModel(top, &m));
  return m;
}

}  // namespace slimpack::loader
