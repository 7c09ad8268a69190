// Shared helpers for the passes (see graph_utils.h).
#include "passes/graph_utils.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

namespace slimpack::passes {
namespace {

template <typename T>
std::vector<T> ReadAs(const ir::Tensor& t) {
  std::vector<T> out(t.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), out.size() * sizeof(T));
  return out;
}

bool IsGraphInput(const ir::Graph& graph, const std::string& name) {
  for (const ir::ValueInfo& v : graph.inputs) {
    if (v.name == name) return true;
  }
  return false;
}

// Byte size agrees with dtype x dims (the verifier checks this too, but
// passes may run on unverified graphs).
bool WellFormed(const ir::Tensor& t) {
  auto bytes = t.ExpectedBytes();
  return bytes.ok() && *bytes == t.data.size();
}

}  // namespace

const ir::Tensor* FindConstant(const ir::Graph& graph, const std::string& name) {
  if (name.empty() || IsGraphInput(graph, name)) return nullptr;
  return graph.FindInitializer(name);
}

std::optional<double> ConstantScalar(const ir::Graph& graph,
                                     const std::string& name) {
  const ir::Tensor* t = FindConstant(graph, name);
  if (t == nullptr || !WellFormed(*t)) return std::nullopt;
  auto n = t->NumElements();
  if (!n.ok() || *n != 1) return std::nullopt;
  switch (t->dtype) {
    case ir::DType::kF32: return ReadAs<float>(*t)[0];
    case ir::DType::kF64: return ReadAs<double>(*t)[0];
    case ir::DType::kI32: return ReadAs<int32_t>(*t)[0];
    case ir::DType::kI64: return static_cast<double>(ReadAs<int64_t>(*t)[0]);
    case ir::DType::kBool:
    case ir::DType::kU8: return ReadAs<uint8_t>(*t)[0];
    default: return std::nullopt;
  }
}

std::optional<std::vector<float>> ConstantFloats(const ir::Graph& graph,
                                                 const std::string& name) {
  const ir::Tensor* t = FindConstant(graph, name);
  if (t == nullptr || t->dtype != ir::DType::kF32 || !WellFormed(*t)) {
    return std::nullopt;
  }
  return ReadAs<float>(*t);
}

std::optional<std::vector<int64_t>> ConstantInts(const ir::Graph& graph,
                                                 const std::string& name) {
  const ir::Tensor* t = FindConstant(graph, name);
  if (t == nullptr || !WellFormed(*t)) return std::nullopt;
  if (t->dtype == ir::DType::kI64) return ReadAs<int64_t>(*t);
  if (t->dtype == ir::DType::kI32) {
    std::vector<int64_t> out;
    for (int32_t v : ReadAs<int32_t>(*t)) out.push_back(v);
    return out;
  }
  return std::nullopt;
}

bool IsGraphOutput(const ir::Graph& graph, const std::string& value) {
  for (const ir::ValueInfo& v : graph.outputs) {
    if (v.name == value) return true;
  }
  return false;
}

size_t UseCount(const ir::Graph& graph, const ir::UseDefIndex& index,
                const std::string& value) {
  size_t n = 0;
  auto it = index.consumers.find(value);
  if (it != index.consumers.end()) n += it->second.size();
  for (const ir::ValueInfo& v : graph.outputs) n += v.name == value ? 1 : 0;
  return n;
}

bool HasSingleUse(const ir::Graph& graph, const ir::UseDefIndex& index,
                  const std::string& value) {
  return UseCount(graph, index, value) == 1 && !IsGraphOutput(graph, value);
}

std::optional<size_t> ProducerIndex(const ir::UseDefIndex& index,
                                    const std::string& value) {
  auto it = index.producer.find(value);
  if (it == index.producer.end()) return std::nullopt;
  return it->second;
}

const ir::Node* ProducerOf(const ir::Graph& graph, const ir::UseDefIndex& index,
                           const std::string& value) {
  auto i = ProducerIndex(index, value);
  return i ? &graph.nodes[*i] : nullptr;
}

std::string UniqueValueName(const ir::Graph& graph, const std::string& base) {
  std::unordered_set<std::string> taken;
  for (const ir::ValueInfo& v : graph.inputs) taken.insert(v.name);
  for (const ir::ValueInfo& v : graph.outputs) taken.insert(v.name);
  for (const ir::Tensor& t : graph.initializers()) taken.insert(t.name);
  for (const ir::Node& n : graph.nodes) {
    taken.insert(n.name);
    for (const std::string& o : n.outputs) taken.insert(o);
    for (const std::string& i : n.inputs) taken.insert(i);
  }
  if (!taken.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string name = base + "_" + std::to_string(k);
    if (!taken.count(name)) return name;
  }
}

ir::Tensor MakeF32Tensor(std::string name, std::vector<int64_t> dims,
                         const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DType::kF32;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

int64_t StaticByteSize(const ir::Graph& graph, const std::string& value) {
  std::optional<ir::ValueInfo> info = graph.FindValueInfo(value);
  if (!info) return 0;
  std::optional<uint64_t> n = info->shape.NumElements();
  if (!n) return 0;
  std::optional<uint64_t> bytes = ir::DTypeByteSize(info->dtype, *n);
  return bytes ? static_cast<int64_t>(*bytes) : 0;
}

int64_t EraseNodes(ir::Graph& graph, const std::vector<bool>& dead) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  int64_t removed = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (i < dead.size() && dead[i]) {
      ++removed;
    } else {
      kept.push_back(std::move(graph.nodes[i]));
    }
  }
  graph.nodes = std::move(kept);
  return removed;
}

void ReplaceWithFused(ir::Graph& graph, size_t root,
                      const std::vector<size_t>& matched, ir::Node fused,
                      std::vector<bool>& dead, PassContext& context) {
  bool root_merged = false;
  for (size_t i : matched) {
    const ir::Node& node = graph.nodes[i];
    fused.provenance = ir::Provenance::Merge(fused.provenance, node.provenance);
    if (i == root) {
      root_merged = true;
      continue;
    }
    context.stats().bytes_saved += StaticByteSize(graph, node.outputs[0]);
    graph.value_info.erase(node.outputs[0]);
    dead[i] = true;
  }
  if (!root_merged) {
    fused.provenance =
        ir::Provenance::Merge(fused.provenance, graph.nodes[root].provenance);
  }
  graph.nodes[root] = std::move(fused);
  context.stats().nodes_rewritten++;
}

void EraseFusedNodes(ir::Graph& graph, const std::vector<bool>& dead,
                     PassContext& context) {
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
}


float FloatAttrOr(const ir::Node& node, const std::string& name, float def) {
  const ir::Attribute* a = node.FindAttribute(name);
  return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : def;
}

std::optional<size_t> SingleUseProducer(const ir::Graph& graph,
                                        const ir::UseDefIndex& index,
                                        const std::vector<bool>& dead,
                                        const std::string& value,
                                        std::string_view op_type) {
  std::optional<size_t> p = ProducerIndex(index, value);
  if (!p || (*p < dead.size() && dead[*p])) return std::nullopt;
  const ir::Node& node = graph.nodes[*p];
  if (!node.domain.empty() || node.op_type != op_type) return std::nullopt;
  if (!HasSingleUse(graph, index, value)) return std::nullopt;
  return p;
}

bool IsScalarNear(const ir::Graph& graph, const std::string& name, double want,
                  double rel_tol) {
  std::optional<double> v = ConstantScalar(graph, name);
  return v && std::fabs(*v - want) <= rel_tol * std::fabs(want);
}

std::optional<std::vector<int64_t>> ReduceAxes(const ir::Graph& graph,
                                               const ir::Node& reduce) {
  if (const ir::Attribute* a = reduce.FindAttribute("axes")) {
    if (a->kind == ir::Attribute::Kind::kInts) return a->ints;
    return std::nullopt;
  }
  if (reduce.inputs.size() > 1 && !reduce.inputs[1].empty()) {
    return ConstantInts(graph, reduce.inputs[1]);
  }
  return std::nullopt;
}

std::optional<int64_t> TrailingAxis(std::vector<int64_t> axes, int64_t rank) {
  if (axes.empty()) return std::nullopt;
  for (int64_t& a : axes) {
    if (a >= 0) {
      if (rank < 0) return std::nullopt;
      a -= rank;
    }
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != -static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) {
      return std::nullopt;
    }
  }
  return axes.front();
}

int64_t RankOf(const ir::Graph& graph, const std::string& value) {
  if (const ir::Tensor* t = FindConstant(graph, value)) {
    return static_cast<int64_t>(t->dims.size());
  }
  std::optional<ir::ValueInfo> info = graph.FindValueInfo(value);
  return info && info->shape.rank_known() ? static_cast<int64_t>(info->shape.rank()) : -1;
}

bool SplitOperands(const ir::Graph& graph, const ir::UseDefIndex& index,
                   const std::vector<bool>& dead, const ir::Node& node,
                   std::string_view op_type, size_t& producer,
                   std::string& other) {
  if (node.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    if (auto p = SingleUseProducer(graph, index, dead, node.inputs[side], op_type)) {
      producer = *p;
      other = node.inputs[1 - side];
      return true;
    }
  }
  return false;
}

std::string OpsetRaiseHazard(const ir::Graph& graph, int64_t from, int64_t to) {
  // Default-domain ops whose signature or meaning changed at an opset.
  static const struct {
    int64_t opset;
    const char* ops[8];
  } kChanges[] = {
      {13, {"Squeeze", "Unsqueeze", "ReduceSum", "Split", "Softmax", "LogSoftmax",
            "Hardmax", nullptr}},
      {18, {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
            "ReduceLogSumExp", nullptr}},
  };
  for (const ir::Node& node : graph.nodes) {
    for (const auto& change : kChanges) {
      if (!(from < change.opset && change.opset <= to) || !node.domain.empty()) continue;
      for (const char* const* op = change.ops; *op != nullptr; ++op) {
        if (node.op_type == *op) {
          return Describe(node) + " changes meaning at opset " + std::to_string(change.opset);
        }
      }
    }
    for (const auto& [name, attr] : node.attributes) {
      std::vector<std::shared_ptr<ir::Graph>> subgraphs = attr.graphs;
      if (attr.g) subgraphs.push_back(attr.g);
      for (const auto& g : subgraphs) {
        std::string why = OpsetRaiseHazard(*g, from, to);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

std::string Describe(const ir::Node& node) {
  return "node '" + node.name + "' (" +
         (node.domain.empty() ? "" : node.domain + ".") + node.op_type + ")";
}

}  // namespace slimpack::passes
