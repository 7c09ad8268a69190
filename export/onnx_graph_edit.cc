#include "export/onnx_graph_edit.h"

#include <cstring>
#include <set>

#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

void CollectNames(const ir::Graph& graph, std::unordered_set<std::string>& taken) {
  for (const ir::ValueInfo& v : graph.inputs) taken.insert(v.name);
  for (const ir::ValueInfo& v : graph.outputs) taken.insert(v.name);
  for (const ir::Tensor& t : graph.initializers()) taken.insert(t.name);
  for (const ir::Node& n : graph.nodes) {
    taken.insert(n.name);
    for (const std::string& s : n.inputs) taken.insert(s);
    for (const std::string& s : n.outputs) taken.insert(s);
    for (const auto& [key, attr] : n.attributes) {
      if (attr.g) CollectNames(*attr.g, taken);
      for (const auto& g : attr.graphs) CollectNames(*g, taken);
    }
  }
}

template <typename T>
absl::StatusOr<std::string> AddTyped(GraphEditor& ed, const std::string& base, ir::DType dtype,
                                     std::vector<int64_t> dims, const std::vector<T>& values,
                                     const ir::Provenance& prov) {
  ir::Tensor t;
  t.name = ed.Fresh(base);
  t.dtype = dtype;
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  t.provenance = prov;
  std::string name = t.name;
  RETURN_IF_ERROR(ed.graph().AddInitializer(std::move(t)));
  return name;
}

void CollectReads(const ir::Graph& graph, std::set<std::string>& read) {
  for (const ir::Node& n : graph.nodes) {
    for (const std::string& s : n.inputs) read.insert(s);
    for (const auto& [key, attr] : n.attributes) {
      if (attr.g) CollectReads(*attr.g, read);
      for (const auto& g : attr.graphs) CollectReads(*g, read);
    }
  }
  for (const ir::ValueInfo& v : graph.outputs) read.insert(v.name);
  for (const ir::ValueInfo& v : graph.inputs) read.insert(v.name);  // overridable defaults
}

}  // namespace

GraphEditor::GraphEditor(ir::Graph& graph) : graph_(graph) { CollectNames(graph, taken_); }

std::string GraphEditor::Fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
  taken_.insert(name);
  return name;
}

absl::StatusOr<std::string> GraphEditor::AddF32(const std::string& base, std::vector<int64_t> dims,
                                                const std::vector<float>& values,
                                                const ir::Provenance& prov) {
  return AddTyped(*this, base, ir::DType::kF32, std::move(dims), values, prov);
}

absl::StatusOr<std::string> GraphEditor::AddI64(const std::string& base, std::vector<int64_t> dims,
                                                const std::vector<int64_t>& values,
                                                const ir::Provenance& prov) {
  return AddTyped(*this, base, ir::DType::kI64, std::move(dims), values, prov);
}

absl::StatusOr<std::string> GraphEditor::AddI32(const std::string& base, std::vector<int64_t> dims,
                                                const std::vector<int32_t>& values,
                                                const ir::Provenance& prov) {
  return AddTyped(*this, base, ir::DType::kI32, std::move(dims), values, prov);
}

absl::StatusOr<std::string> GraphEditor::AddZeros8(const std::string& base, ir::DType dtype,
                                                   std::vector<int64_t> dims,
                                                   const ir::Provenance& prov) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return AddTyped(*this, base, dtype, std::move(dims), std::vector<uint8_t>(n, 0), prov);
}

ir::Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, const ir::Provenance& prov,
                  std::string domain) {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op_type);
  n.domain = std::move(domain);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.provenance = prov;
  return n;
}

absl::StatusOr<std::vector<float>> ReadF32Initializer(const ir::Graph& graph,
                                                      const std::string& name,
                                                      const std::string& what) {
  const ir::Tensor* t = graph.FindInitializer(name);
  if (t == nullptr || t->dtype != ir::DType::kF32 || t->quant.quantized()) {
    return absl::InvalidArgumentError(what + ": '" + name +
                                      "' is not a constant f32 tensor (an initializer)");
  }
  std::vector<float> v(t->data.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), t->data.data(), v.size() * sizeof(float));
  return v;
}

void RemoveUnusedInitializers(ir::Graph& graph) {
  std::set<std::string> read;
  CollectReads(graph, read);
  std::vector<std::string> unused;
  for (const ir::Tensor& t : graph.initializers()) {
    if (!read.count(t.name)) unused.push_back(t.name);
  }
  // A quantized weight's scale / zero point are read through its layout.
  for (const ir::Tensor& t : graph.initializers()) {
    if (t.quant.quantized() && read.count(t.name)) {
      read.insert(t.quant.scale);
      if (!t.quant.zero_point.empty()) read.insert(t.quant.zero_point);
    }
  }
  for (const std::string& n : unused) {
    if (!read.count(n)) graph.RemoveInitializer(n);
  }
}

}  // namespace slimpack::onnx_export
