#include "cli/inspect_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/exit_codes.h"
#include "cli/verify_command.h"
#include "converter/import.h"
#include "converter/model_summary.h"
#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/reader/quant_records.h"
#include "nlohmann/json.hpp"

namespace slimpack::cli {
namespace {

using nlohmann::ordered_json;

ordered_json ShapeJson(const ir::Shape& shape) {
  if (!shape.rank_known()) return nullptr;
  ordered_json dims = ordered_json::array();
  for (const auto& d : shape.dims()) {
    if (d.is_static()) {
      dims.push_back(d.value);
    } else if (!d.symbol.empty()) {
      dims.push_back(d.symbol);
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

ordered_json ValuesJson(const std::vector<ir::ValueInfo>& values) {
  ordered_json out = ordered_json::array();
  for (const auto& v : values) {
    out.push_back({{"name", v.name},
                   {"dtype", std::string(ir::DTypeName(v.dtype))},
                   {"shape", ShapeJson(v.shape)}});
  }
  return out;
}

ordered_json ArchitectureJson(const ir::ArchitectureInfo& a) {
  return {{"model_type", a.model_type},
          {"architectures", a.architectures},
          {"known_family", a.known},
          {"num_layers", a.num_layers},
          {"hidden_size", a.hidden_size},
          {"intermediate_size", a.intermediate_size},
          {"num_heads", a.num_heads},
          {"num_kv_heads", a.num_kv_heads},
          {"head_dim", a.head_dim},
          {"vocab_size", a.vocab_size},
          {"max_position_embeddings", a.max_position_embeddings},
          {"rope_theta", a.rope_theta},
          {"norm_eps", a.norm_eps},
          {"tie_word_embeddings", a.tie_word_embeddings},
          {"torch_dtype", a.torch_dtype}};
}

ordered_json SummaryJson(const ir::Model& m, const converter::ModelSummary& s) {
  ordered_json j;
  j["path"] = m.source_path;
  j["format"] = m.source_format == ir::SourceFormat::kOnnx ? "onnx" : "safetensors";
  if (m.source_format == ir::SourceFormat::kOnnx) {
    j["ir_version"] = m.ir_version;
    ordered_json opsets = ordered_json::object();
    for (const auto& [domain, v] : m.opset_imports) opsets[domain] = v;
    j["opset_imports"] = opsets;
    auto it = m.opset_imports.find("");
    j["opset"] = it == m.opset_imports.end() ? ordered_json(nullptr)
                                             : ordered_json(it->second);
    j["producer"] = m.producer_name + (m.producer_version.empty() ? "" : " " + m.producer_version);
  }
  j["inputs"] = ValuesJson(m.graph.inputs);
  j["outputs"] = ValuesJson(m.graph.outputs);
  j["node_count"] = s.node_count;
  j["subgraph_count"] = s.subgraph_count;
  j["op_histogram"] = s.op_histogram;
  j["tensor_count"] = s.tensor_count;
  j["parameter_count"] = s.parameter_count;
  j["parameter_bytes"] = s.parameter_bytes;
  ordered_json by_dtype = ordered_json::object();
  for (const auto& [name, t] : s.by_dtype) {
    by_dtype[name] = {{"tensors", t.tensors}, {"elements", t.elements}, {"bytes", t.bytes}};
  }
  j["by_dtype"] = by_dtype;
  j["zero_copy_bytes"] = s.zero_copy_bytes;
  if (!s.by_role.empty()) j["by_role"] = s.by_role;
  j["input_files"] = m.input_files;
  j["carried_files"] = m.carried_files;
  j["architecture"] = m.architecture ? ArchitectureJson(*m.architecture) : ordered_json(nullptr);
  j["warnings"] = m.warnings;
  return j;
}

std::string HumanBytes(uint64_t b) {
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

std::string Grouped(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(i, ",");
  return s;
}

void PrintValues(const char* title, const std::vector<ir::ValueInfo>& values) {
  std::printf("%s:\n", title);
  if (values.empty()) std::printf("  (none)\n");
  for (const auto& v : values) {
    std::printf("  %-24s %s%s\n", v.name.c_str(),
                std::string(ir::DTypeName(v.dtype)).c_str(),
                v.shape.ToString().c_str());
  }
}

void PrintHuman(const ir::Model& m, const converter::ModelSummary& s) {
  if (m.source_format == ir::SourceFormat::kOnnx) {
    auto it = m.opset_imports.find("");
    std::printf("model: %s (ONNX, ir_version %lld, opset %s, producer %s %s)\n",
                m.source_path.c_str(), static_cast<long long>(m.ir_version),
                it == m.opset_imports.end() ? "?" : std::to_string(it->second).c_str(),
                m.producer_name.empty() ? "?" : m.producer_name.c_str(),
                m.producer_version.c_str());
    PrintValues("inputs", m.graph.inputs);
    PrintValues("outputs", m.graph.outputs);
    std::printf("nodes: %s", Grouped(s.node_count).c_str());
    if (s.subgraph_count) std::printf(" (in %llu subgraphs too)", static_cast<unsigned long long>(s.subgraph_count));
    std::printf("\nops:\n");
    for (const auto& [op, n] : s.op_histogram) {
      std::printf("  %-28s %s\n", op.c_str(), Grouped(n).c_str());
    }
  } else {
    std::printf("checkpoint: %s (safetensors, %zu file%s)\n", m.source_path.c_str(),
                m.input_files.size(), m.input_files.size() == 1 ? "" : "s");
    if (m.architecture) {
      const auto& a = *m.architecture;
      std::printf("architecture: %s%s%s layers=%lld hidden=%lld heads=%lld kv_heads=%lld "
                  "head_dim=%lld intermediate=%lld vocab=%lld rope_theta=%g norm_eps=%g tied=%s\n",
                  a.model_type.c_str(), a.architectures.empty() ? "" : " ",
                  a.architectures.empty() ? "" : a.architectures[0].c_str(),
                  static_cast<long long>(a.num_layers), static_cast<long long>(a.hidden_size),
                  static_cast<long long>(a.num_heads), static_cast<long long>(a.num_kv_heads),
                  static_cast<long long>(a.head_dim), static_cast<long long>(a.intermediate_size),
                  static_cast<long long>(a.vocab_size), a.rope_theta, a.norm_eps,
                  a.tie_word_embeddings ? "yes" : "no");
    } else {
      std::printf("architecture: unknown (no config.json)\n");
    }
    if (!s.by_role.empty()) {
      std::printf("weights by role:\n");
      for (const auto& [role, n] : s.by_role) std::printf("  %-12s %s\n", role.c_str(), Grouped(n).c_str());
    }
  }
  std::printf("tensors: %s, parameters: %s (%s)\n", Grouped(s.tensor_count).c_str(),
              Grouped(s.parameter_count).c_str(), HumanBytes(s.parameter_bytes).c_str());
  for (const auto& [name, t] : s.by_dtype) {
    std::printf("  %-5s %6s tensors %16s elements %12s\n", name.c_str(),
                Grouped(t.tensors).c_str(), Grouped(t.elements).c_str(), HumanBytes(t.bytes).c_str());
  }
  std::printf("files read:\n");
  for (const auto& f : m.input_files) std::printf("  %s\n", f.c_str());
  if (!m.carried_files.empty()) {
    std::printf("carried files:\n");
    for (const auto& f : m.carried_files) std::printf("  %s\n", f.c_str());
  }
  for (const auto& w : m.warnings) std::printf("warning: %s\n", w.c_str());
}

// One quantized tensor of an artifact, as `inspect` lists it.
struct QuantRow {
  std::string name, dtype, kind, algorithm;
  std::vector<uint64_t> shape;
  int64_t axis = 0;
  uint64_t group_size = 0;  // int4_groupwise; 0 for per-channel
  int64_t bits = 0;         // bits of each stored integer
  bool symmetric = false;
  bool has_record = false;  // the manifest has a "quant" record
  double bits_per_weight = 0;  // payload + scale + zero point, per element
};

const char* LayoutKindName(shard::LayoutKind k) {
  switch (k) {
    case shard::LayoutKind::kPlain: return "plain";
    case shard::LayoutKind::kInt8PerChannel: return "int8_per_channel";
    case shard::LayoutKind::kInt4GroupWise: return "int4_groupwise";
    case shard::LayoutKind::kSparse2of4: return "sparse_2_4";
  }
  return "?";
}

// Layouts come from the loader (validated); algorithm / symmetric from the
// optional "quant" records, which the loader does not keep.
absl::StatusOr<std::vector<QuantRow>> QuantRows(const std::string& path) {
  auto opened = loader::ToAbslStatusOr(loader::Artifact::Open(path));
  if (!opened.ok()) return opened.status();
  const loader::Manifest& m = (*opened)->manifest();
  const std::string manifest = path + "/" + std::string(shard::kManifestFileName);
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
    r.kind = LayoutKindName(t.layout.kind);
    r.shape = t.shape;
    r.axis = t.layout.axis;
    r.group_size = t.layout.group_size;
    r.bits = static_cast<int64_t>(shard::DTypeBits(t.dtype));
    r.symmetric = t.layout.zero_point < 0;
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
  std::printf("  %-44s %-5s %-17s %5s %-12s %4s %6s\n", "name", "dtype", "layout", "group",
              "algorithm", "bits", "bpw");
  for (const QuantRow& r : rows) {
    const std::string group =
        r.kind == "int4_groupwise" ? std::to_string(r.group_size) : "chan";
    std::printf("  %-44s %-5s %-17s %5s %-12s %4lld %6.3f%s\n", r.name.c_str(), r.dtype.c_str(),
                r.kind.c_str(), group.c_str(),
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

absl::StatusOr<std::vector<SparseRow>> SparseRows(const std::string& path) {
  auto opened = loader::ToAbslStatusOr(loader::Artifact::Open(path));
  if (!opened.ok()) return opened.status();
  const loader::Manifest& m = (*opened)->manifest();
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

// The artifact summary (cli/verify_command.cc) plus, when the artifact has
// quantized tensors, one row per quantized tensor: dtype, layout, group,
// algorithm, bits per weight including the scale / zero-point overhead.
int InspectArtifact(const std::string& path, bool json) {
  if (!json) {
    const int rc = RunInspectArtifact(path, false);
    if (rc != kExitOk) return rc;
    auto rows = QuantRows(path);
    if (!rows.ok()) {
      std::fprintf(stderr, "slimpack inspect: %s\n", rows.status().ToString().c_str());
      return kExitInputError;
    }
    PrintQuantRows(*rows);
    auto sparse = SparseRows(path);
    if (!sparse.ok()) {
      std::fprintf(stderr, "slimpack inspect: %s\n", sparse.status().ToString().c_str());
      return kExitInputError;
    }
    PrintSparseRows(*sparse);
    return kExitOk;
  }
  // The summary JSON is printed by RunInspectArtifact; capture it to add
  // the quantized tensors to the same document.
  std::stringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  const int rc = RunInspectArtifact(path, true);
  std::cout.rdbuf(saved);
  if (rc != kExitOk) return rc;
  ordered_json j = ordered_json::parse(captured.str(), nullptr, false);
  auto rows = QuantRows(path);
  if (j.is_discarded() || !rows.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n",
                 rows.ok() ? "internal error: artifact summary is not JSON"
                           : rows.status().ToString().c_str());
    return kExitInputError;
  }
  j["quantized_tensors"] = QuantRowsJson(*rows);
  auto sparse = SparseRows(path);
  if (!sparse.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n", sparse.status().ToString().c_str());
    return kExitInputError;
  }
  if (!sparse->empty()) j["sparse_tensors"] = SparseRowsJson(*sparse);
  std::cout << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  return kExitOk;
}

}  // namespace

int RunInspect(const InspectOptions& options) {
  // An artifact directory (written by `slimpack convert`) is summarised from
  // its manifest through the loader.
  if (IsArtifactDirectory(options.path)) {
    return InspectArtifact(options.path, options.json);
  }
  auto model = converter::ImportModel(options.path);
  if (!model.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n", model.status().ToString().c_str());
    return kExitInputError;
  }
  converter::ModelSummary summary = converter::Summarize(*model);
  if (options.json) {
    std::cout << SummaryJson(*model, summary).dump(2) << "\n";
  } else {
    PrintHuman(*model, summary);
  }
  return kExitOk;
}

}  // namespace slimpack::cli
