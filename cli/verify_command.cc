#include "cli/verify_command.h"

#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <map>

#include "cli/exit_codes.h"
#include "formats/shard/loader/artifact.h"
#include "nlohmann/json.hpp"

namespace slimpack::cli {
namespace {

using nlohmann::ordered_json;

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A staging directory has no manifest at its top level, so the loader
// already rejects it; this adds what it is and what to do about it.
std::string StagingHint(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (EndsWith(p, std::string(shard::kStagingSuffix)) ||
      EndsWith(p, std::string(shard::kStagingSuffix) + "/artifact")) {
    return " (this is the staging directory of an interrupted or running "
           "`slimpack convert`, not an artifact; the next conversion to the "
           "same output deletes it)";
  }
  return "";
}

const char* LayoutName(shard::LayoutKind k) {
  switch (k) {
    case shard::LayoutKind::kPlain: return "plain";
    case shard::LayoutKind::kInt8PerChannel: return "int8_per_channel";
    case shard::LayoutKind::kInt4GroupWise: return "int4_groupwise";
    case shard::LayoutKind::kSparse2of4: return "sparse_2_4";
  }
  return "?";
}

size_t CountNodes(const loader::Graph& g) {
  size_t n = g.nodes.size();
  for (const auto& node : g.nodes) {
    for (const auto& [name, a] : node.attributes) {
      for (const auto& sub : a.graphs) n += CountNodes(*sub);
    }
  }
  return n;
}

struct Totals {
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};

ordered_json ArtifactJson(const loader::Artifact& a,
                          const std::map<std::string, Totals>& by_dtype,
                          const std::map<std::string, uint64_t>& by_layout) {
  const loader::Manifest& m = a.manifest();
  ordered_json j;
  j["path"] = a.dir();
  j["format"] = std::string(shard::kFormatName);
  j["format_version"] = std::to_string(m.version_major) + "." +
                        std::to_string(m.version_minor);
  j["producer"] = m.producer_name + " " + m.producer_version;
  ordered_json recipe = ordered_json::parse(m.recipe_json, nullptr, false);
  j["recipe"] = recipe.is_discarded() ? ordered_json(m.recipe_json) : recipe;
  j["source_format"] = m.source_format;
  if (m.onnx) {
    j["onnx"] = {{"ir_version", m.onnx->ir_version},
                 {"opset_imports", m.onnx->opset_imports},
                 {"nodes", CountNodes(m.onnx->graph)}};
  }
  if (m.architecture) {
    j["architecture"] = {{"model_type", m.architecture->model_type},
                         {"architectures", m.architecture->architectures},
                         {"num_layers", m.architecture->num_layers}};
  }
  uint64_t bytes = 0;
  for (const auto& t : m.tensors) bytes += t.nbytes;
  j["tensor_count"] = m.tensors.size();
  j["tensor_bytes"] = bytes;
  ordered_json dtypes = ordered_json::object();
  for (const auto& [name, t] : by_dtype) {
    dtypes[name] = {{"tensors", t.tensors}, {"bytes", t.bytes}};
  }
  j["by_dtype"] = dtypes;
  j["by_layout"] = by_layout;
  ordered_json shards = ordered_json::array();
  for (const auto& s : m.shards) shards.push_back({{"file", s.file}, {"size", s.size}});
  j["shards"] = shards;
  ordered_json carried = ordered_json::array();
  for (const auto& c : m.carried_files) carried.push_back({{"file", c.file}, {"size", c.size}});
  j["carried_files"] = carried;
  return j;
}

void PrintArtifact(const loader::Artifact& a,
                   const std::map<std::string, Totals>& by_dtype,
                   const std::map<std::string, uint64_t>& by_layout) {
  const loader::Manifest& m = a.manifest();
  std::printf("artifact: %s (%s %u.%u, made by %s %s)\n", a.dir().c_str(),
              std::string(shard::kFormatName).c_str(), m.version_major,
              m.version_minor, m.producer_name.c_str(),
              m.producer_version.c_str());
  if (m.onnx) {
    auto it = m.onnx->opset_imports.find("");
    std::printf("model: onnx (ir_version %lld, opset %s, %zu nodes)\n",
                static_cast<long long>(m.onnx->ir_version),
                it == m.onnx->opset_imports.end()
                    ? "?"
                    : std::to_string(it->second).c_str(),
                CountNodes(m.onnx->graph));
  } else if (m.architecture) {
    std::printf("model: %s checkpoint (%s, %lld layers)\n",
                m.source_format.c_str(), m.architecture->model_type.c_str(),
                static_cast<long long>(m.architecture->num_layers));
  } else {
    std::printf("model: %s checkpoint (no architecture)\n",
                m.source_format.c_str());
  }
  // The manifest stores the recipe indented; show it on one line.
  ordered_json recipe = ordered_json::parse(m.recipe_json, nullptr, false);
  std::printf("recipe: %s\n",
              recipe.is_discarded()
                  ? m.recipe_json.c_str()
                  : recipe.dump(-1, ' ', false,
                                ordered_json::error_handler_t::replace)
                        .c_str());
  uint64_t bytes = 0;
  for (const auto& t : m.tensors) bytes += t.nbytes;
  std::printf("tensors: %zu (%s)\n", m.tensors.size(), Bytes(bytes).c_str());
  for (const auto& [name, t] : by_dtype) {
    std::printf("  %-5s %8llu tensors %12s\n", name.c_str(),
                static_cast<unsigned long long>(t.tensors),
                Bytes(t.bytes).c_str());
  }
  std::printf("layouts:");
  for (const auto& [name, n] : by_layout) {
    std::printf(" %s=%llu", name.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("\nshards: %zu\n", m.shards.size());
  for (const auto& s : m.shards) {
    std::printf("  %s %12s\n", s.file.c_str(), Bytes(s.size).c_str());
  }
  if (!m.carried_files.empty()) {
    std::printf("carried files:\n");
    for (const auto& c : m.carried_files) {
      std::printf("  %s %12s\n", c.file.c_str(), Bytes(c.size).c_str());
    }
  }
}

}  // namespace

bool IsArtifactDirectory(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string manifest = path + "/" + std::string(shard::kManifestFileName);
  return ::lstat(manifest.c_str(), &st) == 0;
}

int RunVerify(const VerifyOptions& options) {
  auto artifact = loader::Artifact::Open(options.path);
  if (!artifact.ok()) {
    std::fprintf(stderr, "slimpack verify: %s%s\n",
                 artifact.status().ToString().c_str(),
                 StagingHint(options.path).c_str());
    return kExitInputError;
  }
  const loader::Artifact& a = **artifact;
  loader::Status s = a.Verify();
  if (!s.ok()) {
    std::fprintf(stderr, "slimpack verify: %s\n", s.ToString().c_str());
    return kExitInputError;
  }
  uint64_t bytes = 0;
  for (const auto& sh : a.manifest().shards) bytes += sh.size;
  for (const auto& c : a.manifest().carried_files) bytes += c.size;
  std::printf("%s: OK (%zu tensors, %zu shards, %zu carried files, %s hashed)\n",
              options.path.c_str(), a.num_tensors(), a.manifest().shards.size(),
              a.manifest().carried_files.size(), Bytes(bytes).c_str());
  return kExitOk;
}

int RunInspectArtifact(const std::string& path, bool json) {
  auto artifact = loader::Artifact::Open(path);
  if (!artifact.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n",
                 artifact.status().ToString().c_str());
    return kExitInputError;
  }
  const loader::Artifact& a = **artifact;
  std::map<std::string, Totals> by_dtype;
  std::map<std::string, uint64_t> by_layout;
  for (const auto& t : a.manifest().tensors) {
    Totals& d = by_dtype[std::string(shard::DTypeName(t.dtype))];
    ++d.tensors;
    d.bytes += t.nbytes;
    ++by_layout[LayoutName(t.layout.kind)];
  }
  if (json) {
    // replace: the path comes from the command line and may not be UTF-8.
    std::cout << ArtifactJson(a, by_dtype, by_layout)
                     .dump(2, ' ', false,
                           ordered_json::error_handler_t::replace)
              << "\n";
  } else {
    PrintArtifact(a, by_dtype, by_layout);
  }
  return kExitOk;
}

}  // namespace slimpack::cli
