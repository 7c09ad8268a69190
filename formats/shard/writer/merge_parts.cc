#include "formats/shard/writer/merge_parts.h"

#include <map>
#include <memory>
#include <optional>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/file_digest.h"
#include "formats/shard/writer/manifest_json.h"
#include "formats/shard/writer/output_preflight.h"
#include "formats/shard/writer/staging_dir.h"
#include "nlohmann/json.hpp"
#include "support/small_file.h"
#include "support/status_macros.h"
#include "support/strict_json.h"

namespace slimpack::shard_writer {
namespace {

using nlohmann::json;

struct Part {
  std::string dir;
  uint32_t index = 0;  // 1-based, as written
  uint32_t count = 0;
  std::vector<uint64_t> shards;
  bool carries_files = false;
  json manifest;
};

std::string Where(const Part& p) {
  return p.dir + "/" + kPartFileName;
}

absl::StatusOr<uint64_t> Unsigned(const json& v, const std::string& where, uint64_t max) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max) {
    return absl::InvalidArgumentError(where + " must be an integer in [0, " +
                                      std::to_string(max) + "], found " + v.dump());
  }
  return v.get<uint64_t>();
}

// Each entry of a manifest's shards / carried_files / producer.inputs:
// {"file": string, "size": unsigned, "sha256": string, ...}.
absl::Status CheckDigestList(const json& list, const std::string& where) {
  if (!list.is_array()) return absl::InvalidArgumentError(where + " must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("file") || !e["file"].is_string() || !e.contains("size") ||
        !e["size"].is_number_unsigned() || !e.contains("sha256") || !e["sha256"].is_string()) {
      return absl::InvalidArgumentError(at + " must be {\"file\": string, \"size\": integer, "
                                        "\"sha256\": string}");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Part> ReadPart(const std::string& dir) {
  Part p;
  p.dir = NormalizeOutputPath(dir);
  const std::string path = Where(p);
  ASSIGN_OR_RETURN(std::string text,
                   support::ReadSmallFile(path, shard::kMaxManifestBytes + (1 << 20)));
  ASSIGN_OR_RETURN(json j, support::ParseStrictJson(text, path, 96));
  if (!j.is_object() || j.value("format", json()) != kPartFormat) {
    return absl::InvalidArgumentError(path + ": not a part of a split conversion (\"format\" is not \"" +
                                      std::string(kPartFormat) + "\")");
  }
  const json part = j.value("part", json());
  if (!part.is_object()) return absl::InvalidArgumentError(path + ": \"part\" must be an object");
  ASSIGN_OR_RETURN(uint64_t count, Unsigned(part.value("count", json()), path + ": part.count", kMaxParts));
  ASSIGN_OR_RETURN(uint64_t index, Unsigned(part.value("index", json()), path + ": part.index", kMaxParts));
  if (count == 0 || index == 0 || index > count) {
    return absl::InvalidArgumentError(path + ": part " + std::to_string(index) + "/" +
                                      std::to_string(count) + " does not exist");
  }
  p.index = static_cast<uint32_t>(index);
  p.count = static_cast<uint32_t>(count);
  const json shards = j.value("shards", json());
  if (!shards.is_array()) return absl::InvalidArgumentError(path + ": \"shards\" must be an array");
  for (const json& s : shards) {
    ASSIGN_OR_RETURN(uint64_t i, Unsigned(s, path + ": a shard index", uint64_t{1} << 32));
    p.shards.push_back(i);
  }
  const json carries = j.value("carries_files", json());
  if (!carries.is_boolean()) {
    return absl::InvalidArgumentError(path + ": \"carries_files\" must be true or false");
  }
  p.carries_files = carries.get<bool>();
  p.manifest = j.value("manifest", json());
  if (!p.manifest.is_object() || !p.manifest.value("producer", json()).is_object()) {
    return absl::InvalidArgumentError(path + ": \"manifest\" must be a manifest object");
  }
  RETURN_IF_ERROR(CheckDigestList(p.manifest.value("shards", json()), path + ": manifest.shards"));
  RETURN_IF_ERROR(CheckDigestList(p.manifest.value("carried_files", json()),
                                  path + ": manifest.carried_files"));
  RETURN_IF_ERROR(CheckDigestList(p.manifest["producer"].value("inputs", json()),
                                  path + ": manifest.producer.inputs"));
  return p;
}

// The manifest without what each part fills differently.
json Common(json m) {
  m.erase("manifest_sha256");
  for (json& s : m["shards"]) {
    if (s.is_object()) s.erase("sha256");
  }
  for (json& s : m["carried_files"]) {
    if (s.is_object()) s.erase("sha256");
  }
  for (json& s : m["producer"]["inputs"]) {
    if (s.is_object()) s.erase("sha256");
  }
  return m;
}

// The first key path where two JSON values differ, for the message.
std::string FirstDifference(const json& a, const json& b, const std::string& at) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string here = at.empty() ? k : at + "." + k;
      if (!b.contains(k)) return here;
      if (v != b[k]) return FirstDifference(v, b[k], here);
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) return at.empty() ? k : at + "." + k;
    }
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return FirstDifference(a[i], b[i], at + "[" + std::to_string(i) + "]");
    }
  }
  return at.empty() ? "(the whole manifest)" : at;
}

// Copies `name` from `from` into the staging directory and checks it against
// `entry` ({file, size, sha256}) as its part recorded it.
absl::StatusOr<uint64_t> CopyChecked(const Part& from, const json& entry, const StagingDir& staging) {
  const std::string name = entry.value("file", "");
  if (!IsSafeArtifactFileName(name)) {
    return absl::InvalidArgumentError(Where(from) + ": unsafe file name '" + name + "'");
  }
  const std::string src = from.dir + "/" + name;
  ASSIGN_OR_RETURN(FileDigest d, CopyFileHashed(src, staging.fd(), name, staging.path() + "/" + name));
  const json size = entry.value("size", json());
  if (!size.is_number_unsigned() || d.size != size.get<uint64_t>() ||
      d.sha256 != entry.value("sha256", "")) {
    return absl::DataLossError(src + ": " + std::to_string(d.size) + " bytes with SHA-256 " +
                               d.sha256 + ", but " + Where(from) + " recorded " + size.dump() +
                               " bytes with " + entry.value("sha256", json()).dump() +
                               " (changed or damaged since the part was written)");
  }
  return d.size;
}

}  // namespace

absl::StatusOr<MergeSummary> MergeParts(const std::vector<std::string>& part_dirs,
                                        const std::string& output, bool force) {
  if (part_dirs.empty()) return absl::InvalidArgumentError("merge: no parts given");
  ASSIGN_OR_RETURN(OutputState state, PreflightOutput(output, force));
  RETURN_IF_ERROR(CheckInputsOutsideOutput(part_dirs, output));
  std::vector<Part> parts;
  for (const std::string& dir : part_dirs) {
    ASSIGN_OR_RETURN(Part p, ReadPart(dir));
    parts.push_back(std::move(p));
  }
  // One of each index, all of one count.
  const uint32_t count = parts[0].count;
  std::map<uint32_t, const Part*> by_index;
  for (const Part& p : parts) {
    if (p.count != count) {
      return absl::InvalidArgumentError(Where(p) + ": part " + std::to_string(p.index) + "/" +
                                        std::to_string(p.count) + " is from a split into " +
                                        std::to_string(p.count) + ", " + Where(parts[0]) +
                                        " from one into " + std::to_string(count));
    }
    auto [it, fresh] = by_index.emplace(p.index, &p);
    if (!fresh) {
      return absl::InvalidArgumentError(Where(p) + ": part " + std::to_string(p.index) + "/" +
                                        std::to_string(count) + " is given twice (also " +
                                        it->second->dir + ")");
    }
  }
  for (uint32_t i = 1; i <= count; ++i) {
    if (!by_index.count(i)) {
      return absl::InvalidArgumentError("merge: part " + std::to_string(i) + "/" +
                                        std::to_string(count) + " is missing (given: " +
                                        std::to_string(parts.size()) + " parts)");
    }
  }
  const Part& first = *by_index.at(1);
  if (!first.carries_files) {
    return absl::InvalidArgumentError(Where(first) + ": part 1 must carry the files");
  }
  // The same conversion: everything but the digests other parts fill in.
  const json common = Common(first.manifest);
  for (const auto& [index, p] : by_index) {
    if (index == 1) continue;
    if (p->carries_files) {
      return absl::InvalidArgumentError(Where(*p) + ": only part 1 carries the files");
    }
    const json mine = Common(p->manifest);
    if (mine != common) {
      return absl::InvalidArgumentError(
          Where(*p) + ": not converted like " + Where(first) + " (" +
          FirstDifference(common, mine, "manifest") +
          " differs): every part needs the same input, flags, recipe, calibration files and "
          "slimpack build");
    }
  }
  // Each shard from the one part that wrote it.
  json merged = first.manifest;
  json& shards = merged["shards"];
  std::vector<const Part*> owner(shards.size(), nullptr);
  for (const auto& [index, p] : by_index) {
    for (uint64_t s : p->shards) {
      if (s >= owner.size()) {
        return absl::InvalidArgumentError(Where(*p) + ": shard " + std::to_string(s) +
                                          " does not exist (the artifact has " +
                                          std::to_string(owner.size()) + ")");
      }
      if (owner[s]) {
        return absl::InvalidArgumentError(Where(*p) + ": shard " + std::to_string(s) +
                                          " is also written by " + Where(*owner[s]));
      }
      owner[s] = p;
    }
  }
  for (size_t s = 0; s < owner.size(); ++s) {
    if (!owner[s]) {
      return absl::InvalidArgumentError("merge: shard " + std::to_string(s) +
                                        " is written by no part");
    }
    shards[s] = owner[s]->manifest["shards"][s];
  }

  MergeSummary summary;
  summary.output = NormalizeOutputPath(output);
  summary.parts = count;
  summary.shards = static_cast<uint32_t>(shards.size());
  summary.replaced = state == OutputState::kArtifact;
  uint64_t total = 0;
  for (const json& s : shards) total += s.value("size", uint64_t{0});
  for (const json& c : merged["carried_files"]) total += c.value("size", uint64_t{0});
  RETURN_IF_ERROR(CheckFreeSpace(output, total + (uint64_t{16} << 20)));
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging, StagingDir::Create(output));
  for (size_t s = 0; s < owner.size(); ++s) {
    ASSIGN_OR_RETURN(uint64_t n, CopyChecked(*owner[s], shards[s], *staging));
    summary.bytes += n;
  }
  for (const json& c : merged["carried_files"]) {
    ASSIGN_OR_RETURN(uint64_t n, CopyChecked(first, c, *staging));
    summary.bytes += n;
  }
  ASSIGN_OR_RETURN(std::string text, SealManifest(merged));
  const std::string name(shard::kManifestFileName);
  const std::string path = staging->path() + "/" + name;
  ASSIGN_OR_RETURN(int fd, CreateExclusive(staging->fd(), name, path));
  absl::Status written = WriteAll(fd, text.data(), text.size(), path, 0);
  if (written.ok()) written = Fsync(fd, path);
  absl::Status closed = Close(fd, path);
  RETURN_IF_ERROR(written);
  RETURN_IF_ERROR(closed);
  RETURN_IF_ERROR(PreflightOutput(output, force).status());
  RETURN_IF_ERROR(staging->Commit([](std::string_view) {}));
  return summary;
}

}  // namespace slimpack::shard_writer
