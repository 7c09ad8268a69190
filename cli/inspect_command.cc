#include "cli/inspect_command.h"

#include <cstdio>
#include <iostream>

#include "cli/exit_codes.h"
#include "cli/inspect_artifact.h"
#include "cli/verify_command.h"
#include "formats/gguf/gguf_requantized.h"
#include "formats/import.h"
#include "converter/model_summary.h"
#include "nlohmann/json.hpp"

#include "support/format_bytes.h"

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
  j["format"] = m.source_format == ir::SourceFormat::kOnnx   ? "onnx"
                : m.source_format == ir::SourceFormat::kGguf ? "gguf"
                                                             : "safetensors";
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
    std::printf("checkpoint: %s (%s, %zu file%s)\n", m.source_path.c_str(),
                m.source_format == ir::SourceFormat::kGguf ? "GGUF, weights decoded to f32"
                                                           : "safetensors",
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
              Grouped(s.parameter_count).c_str(), support::FormatBytes(s.parameter_bytes).c_str());
  for (const auto& [name, t] : s.by_dtype) {
    std::printf("  %-5s %6s tensors %16s elements %12s\n", name.c_str(),
                Grouped(t.tensors).c_str(), Grouped(t.elements).c_str(), support::FormatBytes(t.bytes).c_str());
  }
  std::printf("files read:\n");
  for (const auto& f : m.input_files) std::printf("  %s\n", f.c_str());
  if (!m.carried_files.empty()) {
    std::printf("carried files:\n");
    for (const auto& f : m.carried_files) std::printf("  %s\n", f.c_str());
  }
  for (const auto& w : m.warnings) std::printf("warning: %s\n", w.c_str());
}

}  // namespace

int RunInspect(const InspectOptions& options) {
  // An artifact directory (written by `slimpack convert`) is summarised from
  // its manifest through the loader.
  if (IsArtifactDirectory(options.path)) {
    return RunInspectArtifact(options.path, options.json);
  }
  auto model = formats::ImportModel(options.path);
  if (!model.ok()) {
    std::fprintf(stderr, "slimpack inspect: %s\n", model.status().ToString().c_str());
    return kExitInputError;
  }
  converter::ModelSummary summary = converter::Summarize(*model);
  // A GGUF slimpack wrote from an already-quantized source records the
  // tensors it had to encode again and the error each gained.
  std::vector<gguf::RequantizedTensor> requantized;
  if (model->source_format == ir::SourceFormat::kGguf) {
    auto file = gguf::OpenGgufFile(options.path);
    auto records = file.ok() ? gguf::ReadRequantizedTensors(*file)
                             : absl::StatusOr<std::vector<gguf::RequantizedTensor>>(file.status());
    if (!records.ok()) {
      std::fprintf(stderr, "slimpack inspect: %s\n", records.status().ToString().c_str());
      return kExitInputError;
    }
    requantized = std::move(*records);
  }
  if (options.json) {
    ordered_json j = SummaryJson(*model, summary);
    if (model->source_format == ir::SourceFormat::kGguf) {
      ordered_json rows = ordered_json::array();
      for (const auto& r : requantized) {
        rows.push_back({{"tensor", r.name}, {"type", r.type}, {"rel_l2", r.rel_l2}});
      }
      j["requantized"] = rows;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    PrintHuman(*model, summary);
    if (!requantized.empty()) {
      std::printf("encoded again (no ggml type holds the source's grid; relative L2 error gained):\n");
      for (const auto& r : requantized) {
        std::printf("  %-36s %-6s %.3e\n", r.name.c_str(), r.type.c_str(), r.rel_l2);
      }
    }
  }
  return kExitOk;
}

}  // namespace slimpack::cli
