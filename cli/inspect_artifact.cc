// `slimpack inspect ARTIFACT`: what a converted artifact holds, read from its
// manifest through the standalone loader (the artifact is opened once).
#include "cli/inspect_artifact.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/exit_codes.h"
#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/reader/quant_records.h"
#include "nlohmann/json.hpp"
#include "support/format_bytes.h"

namespace slimpack::cli {
namespace {

using nlohmann::ordered_json;

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

// Tensors by stored dtype and by layout.
struct Tally {
  std::map<std::string, Totals> by_dtype;
  std::map<std::string, uint64_t> by_layout;
};

Tally CountTensors(const loader::Manifest& m) {
  Tally t;
  for (const auto& info : m.tensors) {
    Totals& d = t.by_dtype[std::string(shard::DTypeName(info.dtype))];
    ++d.tensors;
    d.bytes += info.nbytes;
    ++t.by_layout[std::string(shard::LayoutKindName(info.layout.kind))];
  }
  return t;
}

// Op types of the stored graph and its subgraphs ("domain.Op" outside the
// default domain): what the passes left.
void CountOps(const loader::Graph& g, std::map<std::string, uint64_t>& ops) {
  for (const auto& node : g.nodes) {
    ++ops[node.domain.empty() ? node.op_type : node.domain + "." + node.op_type];
    for (const auto& [name, a] : node.attributes) {
      for (const auto& sub : a.graphs) CountOps(*sub, ops);
    }
  }
}

ordered_json ArtifactJson(const loader::Artifact& a) {
  const loader::Manifest& m = a.manifest();
  const auto [by_dtype, by_layout] = CountTensors(m);
  ordered_json j;
  j["path"] = a.dir();
  j["format"] = std::string(shard::kFormatName);
  j["format_version"] = std::to_string(m.version_major) + "." +
                        std::to_string(m.version_minor);
  j["required_features"] = m.required_features;
  j["producer"] = m.producer_name + " " + m.producer_version;
  ordered_json recipe = ordered_json::parse(m.recipe_json, nullptr, false);
  j["recipe"] = recipe.is_discarded() ? ordered_json(m.recipe_json) : recipe;
  j["source_format"] = m.source_format;
  if (m.onnx) {
    std::map<std::string, uint64_t> ops;
    CountOps(m.onnx->graph, ops);
    j["onnx"] = {{"ir_version", m.onnx->ir_version},
                 {"opset_imports", m.onnx->opset_imports},
                 {"nodes", CountNodes(m.onnx->graph)},
                 {"ops", ops}};
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

void PrintArtifact(const loader::Artifact& a) {
  const loader::Manifest& m = a.manifest();
  const auto [by_dtype, by_layout] = CountTensors(m);
  std::printf("artifact: %s (%s %u.%u, made by %s %s)\n", a.dir().c_str(),
              std::string(shard::kFormatName).c_str(), m.version_major,
              m.version_minor, m.producer_name.c_str(),
              m.producer_version.c_str());
  if (!m.required_features.empty()) {
    std::string list;
    for (const std::string& f : m.required_features) list += (list.empty() ? "" : ", ") + f;
    std::printf("required features: %s\n", list.c_str());
  }
  if (m.onnx) {
    auto it = m.onnx->opset_imports.find("");
    std::printf("model: onnx (ir_version %lld, opset %s, %zu nodes)\n",
                static_cast<long long>(m.onnx->ir_version),
                it == m.onnx->opset_imports.end()
                    ? "?"
                    : std::to_string(it->second).c_str(),
                CountNodes(m.onnx->graph));
    std::map<std::string, uint64_t> ops;
    CountOps(m.onnx->graph, ops);
    std::printf("ops:");
    for (const auto& [op, n] : ops) {
      std::printf(" %s=%llu", op.c_str(), static_cast<unsigned long long>(n));
    }
    std::printf("\n");
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
  std::printf("tensors: %zu (%s)\n", m.tensors.size(), support::FormatBytes(bytes).c_str());
  for (const auto& [name, t] : by_dtype) {
    std::printf("  %-5s %8llu tensors %12s\n", name.c_str(),
                static_cast<unsigned long long>(t.tensors),
                support::FormatBytes(t.bytes).c_str());
  }
  std::printf("layouts:");
  for (const auto& [name, n] : by_layout) {
    std::printf(" %s=%llu", name.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("\nshards: %zu\n", m.shards.size());
  for (const auto& s : m.shards) {
    std::printf("  %s %12s\n", s.file.c_str(), support::FormatBytes(s.size).c_str());
  }
  if (!m.carried_files.empty()) {
    std::printf("carried files:\n");
    for (const auto& c : m.carried_files) {
      std::printf("  %s %12s\n", c.file.c_str(), support::FormatBytes(c.size).c_str());
    }
  }
}

// One quantized tensor of an artifact, as `inspect` lists it.
struct QuantRow {
  std::string name, dtype, kind, algorithm;
  std::string scale_dtype;  // "f32" or "f16" (ggml blocks: f16, inside each block)
  std::string block_type;   // ggml_blocks: "q4_k", ...; else empty
  std::vector<uint64_t> shape;
  int64_t axis = 0;
  uint64_t group_size = 0;  // group-wise layouts; 0 for per-channel
  uint64_t block_rows = 1;  // fp8: rows sharing a scale
  int64_t bits = 0;         // bits of each stored integer
  bool symmetric = false;
  bool has_record = false;  // the manifest has a "quant" record
  double bits_per_weight = 0;  // payload + scale + zero point, per element
};

// Layouts come from the loader (validated); algorithm / symmetric from the
// optional "quant" records, which the loader does not keep.
absl::StatusOr<std::vector<QuantRow>> QuantRows(const loader::Artifact& a) {
  const loader::Manifest& m = a.manifest();
  const std::string manifest = a.dir() + "/" + std::string(shard::kManifestFileName);
  std::ifstream in(manifest, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto records = shard_reader::ParseQuantRecords(text.str(), manifest);
  if (!records.ok()) return records.status();
  std::vector<QuantRow> rows;
  for (const loader::TensorInfo& t : m.tensors) {
    if (t.layout.kind == shard::LayoutKind::kPlain ||
        t.layout.kind == shard::LayoutKind::kSparse2of4) {
      continue;
    }
    QuantRow r;
    r.name = t.name;
    r.dtype = std::string(shard::DTypeName(t.dtype));
    r.kind = std::string(shard::LayoutKindName(t.layout.kind));
    r.shape = t.shape;
    r.axis = t.layout.axis;
    r.group_size = t.layout.group_size;
    r.block_rows = t.layout.block_rows;
    if (t.layout.kind == shard::LayoutKind::kGgmlBlocks) {
      const shard::GgmlBlockType* type = shard::FindGgmlBlockType(t.layout.block_type);
      r.block_type = type ? std::string(type->name) : "?";
      r.scale_dtype = "f16";
      r.bits = 0;  // the record's (the code width); the layout alone does not say
      r.symmetric = type && !type->has_min;
    } else {
      r.scale_dtype = std::string(
          shard::DTypeName(m.tensors[static_cast<size_t>(t.layout.scale)].dtype));
      r.bits = static_cast<int64_t>(shard::DTypeBits(t.dtype));
      r.symmetric = t.layout.zero_point < 0;
    }
    uint64_t bytes = t.nbytes;
    for (int32_t aux : {t.layout.scale, t.layout.zero_point}) {
      if (aux >= 0) bytes += m.tensors[static_cast<size_t>(aux)].nbytes;
    }
    r.bits_per_weight = t.numel ? 8.0 * static_cast<double>(bytes) / static_cast<double>(t.numel) : 0;
    auto rec = records->find(t.name);
    if (rec != records->end()) {
      r.has_record = true;
      r.algorithm = rec->second.algorithm;
      r.symmetric = rec->second.symmetric;
      if (!r.block_type.empty()) r.bits = rec->second.bits;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

ordered_json QuantRowsJson(const std::vector<QuantRow>& rows) {
  ordered_json out = ordered_json::array();
  for (const QuantRow& r : rows) {
    ordered_json j = {{"name", r.name},         {"dtype", r.dtype},
                      {"layout", r.kind},       {"shape", r.shape},
                      {"axis", r.axis},         {"group_size", r.group_size},
                      {"block_rows", r.block_rows},
                      {"scale_dtype", r.scale_dtype},
                      {"block_type", r.block_type.empty() ? ordered_json(nullptr)
                                                          : ordered_json(r.block_type)},
                      {"bits", r.bits},         {"bits_per_weight", r.bits_per_weight},
                      {"symmetric", r.symmetric}};
    j["algorithm"] = r.has_record ? ordered_json(r.algorithm) : ordered_json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

void PrintQuantRows(const std::vector<QuantRow>& rows) {
  if (rows.empty()) return;
  double bits = 0, weights = 0;
  for (const QuantRow& r : rows) {
    double numel = 1;
    for (uint64_t d : r.shape) numel *= static_cast<double>(d);
    bits += r.bits_per_weight * numel;
    weights += numel;
  }
  std::printf("quantized tensors: %zu (%.3f bits per weight, scales and zero points included)\n",
              rows.size(), weights > 0 ? bits / weights : 0.0);
  std::printf("  %-44s %-5s %-17s %9s %-5s %-12s %4s %6s\n", "name", "dtype", "layout", "group",
              "scale", "algorithm", "bits", "bpw");
  for (const QuantRow& r : rows) {
    const std::string group =
        r.kind == shard::kLayoutInt8PerChannel ? "chan"
        : r.block_rows > 1 ? std::to_string(r.block_rows) + "x" + std::to_string(r.group_size)
                           : std::to_string(r.group_size);
    const std::string kind = r.block_type.empty() ? r.kind : "ggml " + r.block_type;
    std::printf("  %-44s %-5s %-17s %9s %-5s %-12s %4lld %6.3f%s\n", r.name.c_str(),
                r.dtype.c_str(), kind.c_str(), group.c_str(), r.scale_dtype.c_str(),
                r.has_record ? (r.algorithm.empty() ? "?" : r.algorithm.c_str()) : "-",
                static_cast<long long>(r.bits), r.bits_per_weight,
                r.symmetric ? "" : " asym");
  }
}

// One tensor with a sparsity record (spec.md section 5, "Sparsity").
struct SparseRow {
  std::string name, dtype, pattern, criterion, storage;
  double ratio = 0;
  uint64_t zeros = 0, numel = 0;
  uint64_t stored_bytes = 0;  // payload (+ 2:4 indices)
  uint64_t dense_bytes = 0;   // numel elements of dtype
};

std::vector<SparseRow> SparseRows(const loader::Artifact& a) {
  const loader::Manifest& m = a.manifest();
  std::vector<SparseRow> rows;
  for (const loader::TensorInfo& t : m.tensors) {
    if (!t.sparsity.present) continue;
    SparseRow r;
    r.name = t.name;
    r.dtype = std::string(shard::DTypeName(t.dtype));
    r.pattern = t.sparsity.two_of_four ? "2:4" : "unstructured";
    r.criterion = t.sparsity.criterion;
    r.storage = t.sparsity.packed ? "sparse_2_4" : "dense";
    r.ratio = t.sparsity.ratio;
    r.zeros = t.sparsity.zeros;
    r.numel = t.numel;
    r.stored_bytes = t.nbytes;
    if (t.layout.indices >= 0) r.stored_bytes += m.tensors[static_cast<size_t>(t.layout.indices)].nbytes;
    r.dense_bytes = (t.numel * shard::DTypeBits(t.dtype) + 7) / 8;
    rows.push_back(std::move(r));
  }
  return rows;
}

ordered_json SparseRowsJson(const std::vector<SparseRow>& rows) {
  ordered_json out = ordered_json::array();
  for (const SparseRow& r : rows) {
    out.push_back({{"name", r.name},           {"dtype", r.dtype},
                   {"pattern", r.pattern},     {"criterion", r.criterion},
                   {"ratio", r.ratio},         {"zeros", r.zeros},
                   {"numel", r.numel},         {"storage", r.storage},
                   {"stored_bytes", r.stored_bytes}, {"dense_bytes", r.dense_bytes}});
  }
  return out;
}

void PrintSparseRows(const std::vector<SparseRow>& rows) {
  if (rows.empty()) return;
  uint64_t zeros = 0, numel = 0, stored = 0, dense = 0;
  for (const SparseRow& r : rows) {
    zeros += r.zeros;
    numel += r.numel;
    stored += r.stored_bytes;
    dense += r.dense_bytes;
  }
  std::printf("sparse tensors: %zu (%.2f %% zeros; %llu bytes stored, %llu dense)\n", rows.size(),
              numel ? 100.0 * static_cast<double>(zeros) / static_cast<double>(numel) : 0.0,
              static_cast<unsigned long long>(stored), static_cast<unsigned long long>(dense));
  std::printf("  %-44s %-5s %-12s %-9s %7s %-10s %10s\n", "name", "dtype", "pattern", "criterion",
              "zeros%", "storage", "bytes");
  for (const SparseRow& r : rows) {
    std::printf("  %-44s %-5s %-12s %-9s %7.2f %-10s %10llu\n", r.name.c_str(), r.dtype.c_str(),
                r.pattern.c_str(), r.criterion.empty() ? "-" : r.criterion.c_str(),
                100.0 * r.ratio, r.storage.c_str(), static_cast<unsigned long long>(r.stored_bytes));
  }
}

}  // namespace

// One artifact, opened once: the summary from its manifest (dtypes,
// layouts, shards, the stored graph's op histogram) plus, when present, one
// row per quantized tensor (dtype, layout, group, algorithm, bits per weight
// including scale / zero-point overhead) and per sparse tensor.
int RunInspectArtifact(const std::string& path, bool json) {
  auto artifact = loader::Artifact::Open(path);
  if (!artifact.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n", artifact.status().ToString().c_str());
    return kExitInputError;
  }
  const loader::Artifact& a = **artifact;
  auto quant = QuantRows(a);
  if (!quant.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n", quant.status().ToString().c_str());
    return kExitInputError;
  }
  const std::vector<SparseRow> sparse = SparseRows(a);
  if (!json) {
    PrintArtifact(a);
    PrintQuantRows(*quant);
    PrintSparseRows(sparse);
    return kExitOk;
  }
  ordered_json j = ArtifactJson(a);
  j["quantized_tensors"] = QuantRowsJson(*quant);
  if (!sparse.empty()) j["sparse_tensors"] = SparseRowsJson(sparse);
  // replace: the path comes from the command line and may not be UTF-8.
  std::cout << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  return kExitOk;
}

}  // namespace slimpack::cli
