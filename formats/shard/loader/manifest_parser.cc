// ParseManifest: the top level, shards and carried files. Every check of
// spec.md section 9 that needs no shard bytes starts here (tensor entries are
// in manifest_tensors.cc, layouts in manifest_layout.cc, the model/graph
// section in manifest_model.cc).
#include <set>
#include <string>
#include <unordered_set>

#include "formats/shard/loader/json_reader.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"
#include "formats/shard/loader/manifest_layout.h"
#include "formats/shard/loader/manifest_sparsity.h"
#include "formats/shard/loader/manifest_model.h"
#include "formats/shard/loader/manifest_tensors.h"
#include "formats/shard/loader/sha256.h"

namespace slimpack::loader {
namespace {

using internal::Fields;
using internal::ObjectPath;
using internal::PendingLayouts;

constexpr std::string_view kSelfHashKey = "manifest_sha256";

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
  // Sorted, as writers list them (the error below prints this order).
  constexpr std::string_view kKnown[] = {shard::kFeatureF16Scales, shard::kFeatureFp8BlockRows,
                                         shard::kFeatureFp8E4M3,
                                         shard::kFeatureGgmlBlocks, shard::kFeatureInt8GroupWise,
                                         shard::kFeatureSparse2of4};
  for (const JsonValue& f : features->items()) {
    if (!f.is_string()) {
      return top.Error("required_features", "expected strings, found " +
                                                internal::DescribeValue(f));
    }
    bool known = false;
    for (std::string_view k : kKnown) known = known || f.string_value() == k;
    if (known) {
      m->required_features.emplace_back(f.string_value());
      continue;
    }
    std::string list;
    for (std::string_view k : kKnown) list += (list.empty() ? "" : ", ") + std::string(k);
    return top.Error("required_features",
                     "requires feature \"" + std::string(f.string_value()) +
                         "\", which this loader does not support (made by a "
                         "newer tool; supported features: " + list + ")",
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
