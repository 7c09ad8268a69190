#include "formats/shard/writer/model_json.h"

#include <algorithm>
#include <cmath>

#include "formats/shard/format.h"
#include "formats/shard/writer/artifact_tensors.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

using nlohmann::json;

json ShapeJson(const ir::Shape& shape) {
  if (!shape.rank_known()) return nullptr;
  json dims = json::array();
  for (const ir::Dim& d : shape.dims()) {
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

json ValueJson(const ir::ValueInfo& v) {
  return {{"dtype", std::string(ir::DTypeName(v.dtype))},
          {"name", v.name},
          {"shape", ShapeJson(v.shape)}};
}

json FloatJson(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  return static_cast<double>(f);
}

bool AllUtf8(const std::vector<std::string>& v) {
  for (const auto& s : v) {
    if (FindInvalidUtf8(s) >= 0) return false;
  }
  return true;
}

json GraphJson(const ir::Graph& g);

json AttributeJson(const ir::Node& node, const std::string& name,
                   const ir::Attribute& a) {
  using Kind = ir::Attribute::Kind;
  json out = {{"type", std::string(ir::AttributeKindName(a.kind))}};
  switch (a.kind) {
    case Kind::kFloat:
      out["value"] = FloatJson(a.f);
      break;
    case Kind::kInt:
      out["value"] = a.i;
      break;
    case Kind::kString:
      if (FindInvalidUtf8(a.s) >= 0) {
        out["value_hex"] = HexBytes(a.s);
      } else {
        out["value"] = a.s;
      }
      break;
    case Kind::kTensor:
      out["value"] = AttributeTensorName(node.name, name);
      break;
    case Kind::kGraph:
      out["value"] = GraphJson(*a.g);
      break;
    case Kind::kFloats: {
      json v = json::array();
      for (float f : a.floats) v.push_back(FloatJson(f));
      out["value"] = std::move(v);
      break;
    }
    case Kind::kInts:
      out["value"] = a.ints;
      break;
    case Kind::kStrings: {
      json v = json::array();
      const bool utf8 = AllUtf8(a.strings);
      for (const auto& s : a.strings) v.push_back(utf8 ? s : HexBytes(s));
      out[utf8 ? "value" : "value_hex"] = std::move(v);
      break;
    }
    case Kind::kTensors: {
      json v = json::array();
      for (size_t i = 0; i < a.tensors.size(); ++i) {
        v.push_back(AttributeTensorName(node.name, name, static_cast<int>(i)));
      }
      out["value"] = std::move(v);
      break;
    }
    case Kind::kGraphs: {
      json v = json::array();
      for (const auto& sub : a.graphs) v.push_back(GraphJson(*sub));
      out["value"] = std::move(v);
      break;
    }
  }
  return out;
}

json NodeJson(const ir::Node& node) {
  json attributes = json::object();
  for (const auto& [name, a] : node.attributes) {
    attributes[name] = AttributeJson(node, name, a);
  }
  json out = {{"attributes", std::move(attributes)},
              {"domain", node.domain},
              {"inputs", node.inputs},
              {"name", node.name},
              {"op_type", node.op_type},
              {"outputs", node.outputs}};
  if (!node.provenance.source_nodes.empty()) {
    out["source"] = node.provenance.source_nodes;
  }
  return out;
}

// CollectArtifactTensors has already rejected attributes without a value,
// so every a.g / a.graphs[i] dereferenced here is non-null.
json GraphJson(const ir::Graph& g) {
  std::vector<std::string> initializers;
  for (const ir::Tensor& t : g.initializers()) initializers.push_back(t.name);
  std::sort(initializers.begin(), initializers.end());
  json inputs = json::array(), outputs = json::array(), nodes = json::array(),
       value_info = json::array();
  for (const auto& v : g.inputs) inputs.push_back(ValueJson(v));
  for (const auto& v : g.outputs) outputs.push_back(ValueJson(v));
  for (const auto& [name, v] : g.value_info) value_info.push_back(ValueJson(v));
  // The spec stores nodes in topological order and the loader refuses any
  // other; passes may leave a valid graph in another order, so write the
  // IR's order (which keeps the stored order wherever dependencies allow).
  // The verifier has rejected cycles before any write.
  auto order = g.TopologicalOrder();
  if (order.ok()) {
    for (size_t i : *order) nodes.push_back(NodeJson(g.nodes[i]));
  } else {
    for (const auto& n : g.nodes) nodes.push_back(NodeJson(n));
  }
  return {{"initializers", std::move(initializers)},
          {"inputs", std::move(inputs)},
          {"name", g.name},
          {"nodes", std::move(nodes)},
          {"outputs", std::move(outputs)},
          {"value_info", std::move(value_info)}};
}

json OnnxJson(const ir::Model& m) {
  json opsets = json::object();
  for (const auto& [domain, version] : m.opset_imports) opsets[domain] = version;
  json metadata = json::object();
  for (const auto& [k, v] : m.metadata_props) metadata[k] = v;
  return {{"doc_string", m.doc_string},
          {"domain", m.model_domain},
          {"graph", GraphJson(m.graph)},
          {"ir_version", m.ir_version},
          {"metadata_props", std::move(metadata)},
          {"model_version", m.model_version},
          {"opset_imports", std::move(opsets)},
          {"producer_name", m.producer_name},
          {"producer_version", m.producer_version}};
}

// The loader's range rule (shard::IsManifestUint) for every static dim of
// a graph's inputs, outputs and value_info, subgraphs included: ONNX shape
// fields are int64, so an imported model can declare dims the manifest
// cannot hold (bad-inputs issue 16 item 8: 2^62 passed convert and failed
// the loader).
absl::Status CheckGraphDims(const ir::Graph& g, const std::string& graph) {
  auto check = [&](const ir::ValueInfo& v, const char* kind) -> absl::Status {
    if (!v.shape.rank_known()) return absl::OkStatus();
    const std::vector<ir::Dim>& dims = v.shape.dims();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!dims[i].is_static() || shard::IsManifestUint(dims[i].value)) continue;
      return absl::InvalidArgumentError(
          graph + ": " + kind + " '" + v.name + "': dim " + std::to_string(i) +
          " is " + std::to_string(dims[i].value) +
          "; the manifest stores dims in [0, 2^53] (" +
          std::to_string(shard::kMaxSafeInteger) +
          "), so the loader would reject the artifact");
    }
    return absl::OkStatus();
  };
  for (const auto& v : g.inputs) RETURN_IF_ERROR(check(v, "input"));
  for (const auto& v : g.outputs) RETURN_IF_ERROR(check(v, "output"));
  for (const auto& [name, v] : g.value_info) RETURN_IF_ERROR(check(v, "value_info"));
  for (const ir::Node& node : g.nodes) {
    for (const auto& [attr, a] : node.attributes) {
      const std::string sub = "graph '" + node.name + "/" + attr + "'";
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
        RETURN_IF_ERROR(CheckGraphDims(*a.g, sub));
      }
      if (a.kind == ir::Attribute::Kind::kGraphs) {
        for (size_t i = 0; i < a.graphs.size(); ++i) {
          if (a.graphs[i]) {
            RETURN_IF_ERROR(CheckGraphDims(*a.graphs[i], sub + "[" + std::to_string(i) + "]"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<json> ArchitectureJson(const ir::ArchitectureInfo& a) {
  if (!std::isfinite(a.rope_theta) || !std::isfinite(a.norm_eps)) {
    return absl::InvalidArgumentError(
        "config.json: rope_theta " + std::to_string(a.rope_theta) +
        " / norm_eps " + std::to_string(a.norm_eps) +
        " must be finite numbers to be recorded in the manifest");
  }
  const struct {
    const char* key;
    int64_t value;
  } counts[] = {
      {"head_dim", a.head_dim},
      {"hidden_size", a.hidden_size},
      {"intermediate_size", a.intermediate_size},
      {"max_position_embeddings", a.max_position_embeddings},
      {"num_heads", a.num_heads},
      {"num_kv_heads", a.num_kv_heads},
      {"num_layers", a.num_layers},
      {"vocab_size", a.vocab_size},
  };
  for (const auto& c : counts) {
    if (!shard::IsManifestUint(c.value)) {
      return absl::InvalidArgumentError(
          "config.json: " + std::string(c.key) + " is " + std::to_string(c.value) +
          "; the manifest stores it in [0, 2^53], so the loader would reject "
          "the artifact");
    }
  }
  return json{{"architectures", a.architectures},
              {"config_file", "config.json"},
              {"head_dim", a.head_dim},
              {"hidden_size", a.hidden_size},
              {"intermediate_size", a.intermediate_size},
              {"max_position_embeddings", a.max_position_embeddings},
              {"model_type", a.model_type},
              {"norm_eps", a.norm_eps},
              {"num_heads", a.num_heads},
              {"num_kv_heads", a.num_kv_heads},
              {"num_layers", a.num_layers},
              {"rope_theta", a.rope_theta},
              {"tie_word_embeddings", a.tie_word_embeddings},
              {"torch_dtype", a.torch_dtype},
              {"vocab_size", a.vocab_size}};
}

}  // namespace

std::string HexBytes(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

long FindInvalidUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return static_cast<long>(i);
    }
    if (i + len > n) return static_cast<long>(i);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return static_cast<long>(i);
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong 3/4-byte forms, UTF-16 surrogates, beyond U+10FFFF.
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      return static_cast<long>(i);
    }
    i += len;
  }
  return -1;
}

absl::StatusOr<json> ModelJson(const ir::Model& model) {
  json out = json::object();
  if (model.source_format == ir::SourceFormat::kOnnx) {
    RETURN_IF_ERROR(CheckGraphDims(model.graph, model.graph.name.empty()
                                                    ? std::string("main graph")
                                                    : "graph '" + model.graph.name + "'"));
    out["source_format"] = "onnx";
    out["onnx"] = OnnxJson(model);
  } else {
    out["source_format"] = "safetensors";
    if (model.architecture) {
      ASSIGN_OR_RETURN(out["architecture"],
                       ArchitectureJson(*model.architecture));
    }
  }
  return out;
}

}  // namespace slimpack::shard_writer
