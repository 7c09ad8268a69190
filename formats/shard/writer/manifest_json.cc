#include "formats/shard/writer/manifest_json.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "ir/quant.h"
#include "formats/shard/format.h"
#include "formats/shard/writer/file_digest.h"
#include "formats/shard/writer/model_json.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

using nlohmann::json;

constexpr char kZeroHash[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

json DigestJson(const NamedDigest& d) {
  return {{"file", d.file}, {"sha256", d.sha256}, {"size", d.size}};
}

// spec.md section 5, "Layouts", plus the optional "quant" record of how
// the integers were chosen (readers of 1.0 ignore it; nothing needs it to
// dequantize).
json LayoutJson(const ir::QuantLayout& q) {
  if (!q.quantized()) return {{"kind", std::string(shard::kLayoutPlain)}};
  if (q.kind == ir::QuantKind::kGgmlBlocks) {
    return {{"axis", q.axis},
            {"block_type", std::string(ir::GgmlTypeName(q.block_type))},
            {"kind", std::string(shard::kLayoutGgmlBlocks)}};
  }
  json out = {{"axis", q.axis},
              {"kind", std::string(ir::QuantKindName(q.kind))},
              {"scale", q.scale}};
  if (ir::IsGroupWise(q.kind)) out["group_size"] = q.group_size;
  // Written only when rows share a scale, so every other artifact's
  // manifest stays byte-identical.
  if (q.kind == ir::QuantKind::kFp8E4M3GroupWise && q.BlockRows() > 1) {
    out["block_rows"] = q.block_rows;
  }
  if (q.kind == ir::QuantKind::kInt4GroupWise) {
    out["packing"] = std::string(shard::kPackingLowNibbleFirst);
  }
  if (!q.zero_point.empty()) out["zero_point"] = q.zero_point;
  return out;
}

json QuantRecordJson(const TensorEntry& t) {
  const bool blocks = t.quant.kind == ir::QuantKind::kGgmlBlocks;
  const std::optional<ir::GgmlGeometry> g = ir::GgmlTypeGeometry(t.quant.block_type);
  return {{"algorithm", t.quant.algorithm},
          {"bits", blocks && g ? g->bits : ir::DTypeBits(t.dtype)},
          {"group_size",
           ir::IsGroupWise(t.quant.kind) || blocks ? t.quant.group_size : 0},
          {"symmetric", ir::IsSymmetricQuant(t.quant)}};
}

// A writer must not commit an artifact the loader rejects: every quantized
// entry is checked against the scale / zero point entries as stored (a
// dtype cast of a scale, say to f16, is caught here).
absl::Status CheckQuantEntries(const std::vector<TensorEntry>& entries) {
  std::unordered_map<std::string, const TensorEntry*> by_name;
  for (const TensorEntry& e : entries) by_name.emplace(e.name, &e);
  auto meta = [](const TensorEntry& e) {
    ir::Tensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.dims = e.dims;
    t.layer = static_cast<int>(e.layer);
    t.quant = e.quant;
    return t;
  };
  for (const TensorEntry& e : entries) {
    if (!e.quant.quantized()) continue;
    auto find = [&](const std::string& name) -> std::optional<ir::Tensor> {
      auto it = name.empty() ? by_name.end() : by_name.find(name);
      if (it == by_name.end()) return std::nullopt;
      return meta(*it->second);
    };
    std::optional<ir::Tensor> scale = find(e.quant.scale);
    std::optional<ir::Tensor> zp = find(e.quant.zero_point);
    absl::Status s = ir::ValidateQuantLayout(meta(e), scale ? &*scale : nullptr,
                                             zp ? &*zp : nullptr);
    if (!s.ok()) return Annotate(s, "manifest (as stored)");
  }
  return absl::OkStatus();
}

// spec.md section 5, "Sparsity". ratio is zeros / numel in double, which
// nlohmann prints as the shortest round-trip decimal: the same for the
// same counts on every host.
json SparsityJson(const SparsityRecord& r) {
  const double ratio =
      r.numel == 0 ? 0.0 : static_cast<double>(r.zeros) / static_cast<double>(r.numel);
  return {{"axis", r.info.axis},
          {"criterion", r.info.criterion},
          {"pattern", std::string(ir::SparsityPatternName(r.info.pattern))},
          {"ratio", ratio},
          {"storage", std::string(r.packed ? shard::kLayoutSparse2of4
                                           : shard::kSparseStorageDense)},
          {"zeros", r.zeros}};
}

json TensorJson(const TensorEntry& t) {
  json shape = json::array();
  for (int64_t d : t.dims) shape.push_back(static_cast<uint64_t>(d));
  json out = {{"dtype", std::string(ir::DTypeName(t.dtype))},
              {"layout", LayoutJson(t.quant)},
              {"name", t.name},
              {"nbytes", t.nbytes},
              {"offset", t.offset},
              {"shape", std::move(shape)},
              {"shard", t.shard}};
  if (t.layer >= 0) out["layer"] = t.layer;
  if (t.role != ir::WeightRole::kUnknown) {
    out["role"] = std::string(ir::WeightRoleName(t.role));
  }
  if (!t.source.empty()) out["source"] = t.source;
  if (t.quant.quantized()) out["quant"] = QuantRecordJson(t);
  if (t.sparsity) {
    out["sparsity"] = SparsityJson(*t.sparsity);
    if (t.sparsity->packed) {
      out["layout"] = {{"axis", 1},
                       {"indices", t.sparsity->indices},
                       {"kind", std::string(shard::kLayoutSparse2of4)}};
    }
  }
  return out;
}

// Walks the tree once: every string and key must be UTF-8 (nlohmann's
// strict dump would throw otherwise) and nesting must stay within the
// reader's limit. `path` names the value in errors.
absl::Status CheckTree(const json& v, const std::string& path, int depth) {
  if (v.is_object() || v.is_array()) {
    if (depth + 1 > shard::kMaxJsonDepth) {
      return absl::InvalidArgumentError(
          "manifest: " + path + " nests deeper than " +
          std::to_string(shard::kMaxJsonDepth) +
          " levels (too many nested subgraphs for the format)");
    }
  }
  if (v.is_string()) {
    long bad = FindInvalidUtf8(v.get_ref<const std::string&>());
    if (bad >= 0) {
      return absl::InvalidArgumentError("manifest: " + path +
                                        " is not valid UTF-8 (byte " +
                                        std::to_string(bad) + ")");
    }
  } else if (v.is_object()) {
    for (const auto& [key, item] : v.items()) {
      if (FindInvalidUtf8(key) >= 0) {
        return absl::InvalidArgumentError(
            "manifest: a key of " + path + " is not valid UTF-8 (hex " +
            HexBytes(key) + ")");
      }
      RETURN_IF_ERROR(CheckTree(item, path + "." + key, depth + 1));
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      RETURN_IF_ERROR(
          CheckTree(v[i], path + "[" + std::to_string(i) + "]", depth + 1));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFileNames(const ManifestParts& parts) {
  std::set<std::string> seen;
  auto check = [&seen](const std::string& name, const char* what) {
    if (!IsSafeArtifactFileName(name)) {
      return absl::InvalidArgumentError(
          std::string(what) + " '" + name +
          "' is not a safe artifact file name ([A-Za-z0-9._-]{1,255}, no "
          "'..', not manifest.json, not ending in .tmp)");
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(std::string(what) + " '" + name +
                                        "' clashes with another file of the "
                                        "artifact");
    }
    return absl::OkStatus();
  };
  for (const auto& s : parts.shards) RETURN_IF_ERROR(check(s.file, "shard"));
  for (const auto& c : parts.carried) {
    RETURN_IF_ERROR(check(c.file, "carried file"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Dump(const json& manifest) {
  // CheckTree has validated every string, so the strict handler cannot
  // throw; the catch keeps that promise if it ever does.
  try {
    return manifest.dump(1, ' ', false, json::error_handler_t::strict) + "\n";
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("manifest: serialisation: ") +
                               e.what());
  }
}

}  // namespace

bool IsSafeArtifactFileName(const std::string& name) {
  if (name.empty() || name.size() > shard::kMaxFileNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  if (name.find("..") != std::string::npos) return false;
  if (name == "." || name == shard::kManifestFileName) return false;
  const std::string_view tmp = shard::kStagingSuffix;
  return !(name.size() >= tmp.size() &&
           name.compare(name.size() - tmp.size(), tmp.size(), tmp) == 0);
}

std::string SourceString(const ir::Provenance& p) {
  ir::Provenance base = p;
  base.file = p.file.substr(p.file.rfind('/') + 1);
  return base.ToString();
}

absl::StatusOr<std::string> SerializeManifest(const ManifestParts& parts) {
  RETURN_IF_ERROR(CheckFileNames(parts));
  if (!parts.recipe.is_object()) {
    return absl::InternalError("manifest: the recipe is not a JSON object");
  }
  RETURN_IF_ERROR(CheckQuantEntries(parts.tensors));
  std::vector<const TensorEntry*> order;
  for (const auto& t : parts.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorEntry* a, const TensorEntry* b) {
              return std::tie(a->shard, a->offset, a->nbytes, a->name) <
                     std::tie(b->shard, b->offset, b->nbytes, b->name);
            });
  json tensors = json::array();
  std::unordered_map<std::string, ir::DType> dtype_of;
  for (const auto& t : parts.tensors) dtype_of.emplace(t.name, t.dtype);
  std::set<std::string_view> used;  // sorted: the list's order
  for (const TensorEntry* t : order) {
    tensors.push_back(TensorJson(*t));
    if (t->sparsity && t->sparsity->packed) used.insert(shard::kFeatureSparse2of4);
    if (t->quant.kind == ir::QuantKind::kInt8GroupWise) {
      used.insert(shard::kFeatureInt8GroupWise);
    }
    if (t->quant.kind == ir::QuantKind::kGgmlBlocks) used.insert(shard::kFeatureGgmlBlocks);
    if (t->quant.kind == ir::QuantKind::kFp8E4M3GroupWise) used.insert(shard::kFeatureFp8E4M3);
    if (t->quant.kind == ir::QuantKind::kFp8E4M3GroupWise && t->quant.BlockRows() > 1) {
      used.insert(shard::kFeatureFp8BlockRows);
    }
    auto scale = t->quant.quantized() ? dtype_of.find(t->quant.scale) : dtype_of.end();
    if (scale != dtype_of.end() && scale->second == ir::DType::kF16) {
      used.insert(shard::kFeatureF16Scales);
    }
  }
  json features = json::array();
  for (std::string_view f : used) features.push_back(std::string(f));

  std::vector<NamedDigest> carried = parts.carried;
  std::sort(carried.begin(), carried.end(),
            [](const auto& a, const auto& b) { return a.file < b.file; });
  std::vector<NamedDigest> inputs = parts.inputs;
  std::sort(inputs.begin(), inputs.end(),
            [](const auto& a, const auto& b) { return a.file < b.file; });
  json carried_json = json::array(), inputs_json = json::array(),
       shards_json = json::array();
  for (const auto& c : carried) carried_json.push_back(DigestJson(c));
  for (const auto& i : inputs) inputs_json.push_back(DigestJson(i));
  for (size_t i = 0; i < parts.shards.size(); ++i) {
    json s = DigestJson(parts.shards[i]);
    s["index"] = i;
    shards_json.push_back(std::move(s));
  }

  json producer = {{"commit", parts.producer_commit},
                   {"inputs", std::move(inputs_json)},
                   {"name", "slimpack"},
                   {"passes", parts.passes},
                   {"recipe", parts.recipe},
                   {"version", parts.producer_version}};
  if (!parts.calibration.empty()) {
    json calibration = json::array();
    for (const auto& c : parts.calibration) calibration.push_back(DigestJson(c));
    producer["calibration"] = std::move(calibration);
  }
  json manifest = {
      {"carried_files", std::move(carried_json)},
      {"complete", true},
      {"format", std::string(shard::kFormatName)},
      {"format_version",
       {{"major", shard::kFormatVersionMajor},
        {"minor", shard::kFormatVersionMinor}}},
      {"manifest_sha256", kZeroHash},
      {"model", parts.model},
      {"producer", std::move(producer)},
      {"required_features", std::move(features)},
      {"shards", std::move(shards_json)},
      {"tensors", std::move(tensors)},
  };
  return SealManifest(manifest);
}

absl::StatusOr<std::string> SealManifest(const nlohmann::json& given) {
  if (!given.is_object()) return absl::InvalidArgumentError("manifest: not a JSON object");
  json manifest = given;
  manifest["manifest_sha256"] = kZeroHash;
  RETURN_IF_ERROR(CheckTree(manifest, "manifest", 0));
  ASSIGN_OR_RETURN(std::string text, Dump(manifest));
  if (text.size() > shard::kMaxManifestBytes) {
    return absl::ResourceExhaustedError(
        "manifest: " + std::to_string(text.size()) +
        " bytes exceed the format's limit of " +
        std::to_string(shard::kMaxManifestBytes) + " (16 MiB)");
  }
  // The top-level key is the only one indented by exactly one space, so
  // this finds it and nothing nested (a key can never contain a raw '"').
  const std::string marker =
      std::string("\n \"manifest_sha256\": \"") + kZeroHash + "\"";
  const size_t at = text.find(marker);
  if (at == std::string::npos || text.find(marker, at + 1) != std::string::npos) {
    return absl::InternalError("manifest: cannot locate manifest_sha256");
  }
  const size_t hash_at = at + marker.size() - 1 - 64;
  const std::string self = Sha256Stream::HashHex(text.data(), text.size());
  text.replace(hash_at, 64, self);
  return text;
}

}  // namespace slimpack::shard_writer
