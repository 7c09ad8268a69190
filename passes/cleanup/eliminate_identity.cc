// eliminate-identity (see eliminate_identity.h).
#include "passes/cleanup/eliminate_identity.h"

#include <algorithm>

#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

std::optional<ir::DType> DTypeOfValue(const ir::Graph& graph,
                                      const std::string& value) {
  if (const ir::Tensor* t = FindConstant(graph, value)) return t->dtype;
  std::optional<ir::ValueInfo> info = graph.FindValueInfo(value);
  if (!info || info->dtype == ir::DType::kUndefined) return std::nullopt;
  return info->dtype;
}

std::optional<std::vector<int64_t>> StaticDimsOf(const ir::Graph& graph,
                                                 const std::string& value) {
  if (const ir::Tensor* t = FindConstant(graph, value)) return t->dims;
  std::optional<ir::ValueInfo> info = graph.FindValueInfo(value);
  if (!info) return std::nullopt;
  return info->shape.StaticDims();
}

// Reshape target `shape` resolved against `in` equals `in`.
bool ReshapeIsNoOp(const std::vector<int64_t>& in,
                   const std::vector<int64_t>& shape, bool allow_zero) {
  if (in.size() != shape.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (shape[i] == in[i]) continue;
    if (shape[i] == 0 && !allow_zero) continue;  // 0 copies the input dim
    // -1 is inferred; it resolves to in[i] when every other dim matched,
    // because the element counts then agree.
    if (shape[i] == -1) continue;
    return false;
  }
  int minus_ones = 0;
  for (int64_t s : shape) minus_ones += s == -1 ? 1 : 0;
  return minus_ones <= 1;
}

// Empty when `node` is a no-op copy of input 0; otherwise why not.
std::string WhyNotNoOp(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.empty() || node.inputs[0].empty()) return "has no data input";
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty() &&
        (node.op_type != "Dropout" || i != 1)) {
      return "has extra outputs";
    }
  }
  const std::string& x = node.inputs[0];
  if (node.op_type == "Identity") return "";
  if (node.op_type == "Dropout") {
    if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
      std::optional<double> training = ConstantScalar(graph, node.inputs[2]);
      if (!training) return "training_mode is not a constant";
      if (*training != 0) return "training_mode is true";
    }
    return "";
  }
  if (node.op_type == "Cast") {
    std::optional<ir::DType> in = DTypeOfValue(graph, x);
    std::optional<ir::DType> out = DTypeOfValue(graph, node.outputs[0]);
    if (!in || !out) return "input or output dtype unknown";
    if (*in != *out) return "casts to another dtype";
    return "";
  }
  if (node.op_type == "Reshape") {
    if (node.inputs.size() < 2) return "has no shape input";
    std::optional<std::vector<int64_t>> target = ConstantInts(graph, node.inputs[1]);
    if (!target) return "shape is not a constant";
    std::optional<std::vector<int64_t>> in = StaticDimsOf(graph, x);
    if (!in) return "input shape is not static";
    if (!ReshapeIsNoOp(*in, *target, IntAttrOr(node, "allowzero", 0) != 0)) {
      return "changes the shape";
    }
    return "";
  }
  return "not a copy op";
}

bool IsCandidateOp(const ir::Node& node) {
  return node.domain.empty() &&
         (node.op_type == "Identity" || node.op_type == "Dropout" ||
          node.op_type == "Cast" || node.op_type == "Reshape");
}

}  // namespace

absl::Status EliminateIdentityPass::Run(ir::Graph& graph,
                                        PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    ir::Node& node = graph.nodes[n];
    if (!IsCandidateOp(node)) continue;
    std::string why = WhyNotNoOp(graph, node);
    if (!why.empty()) {
      context.Log(Describe(node) + ": kept, " + why);
      continue;
    }
    if (node.op_type == "Dropout" && node.outputs.size() > 1 &&
        !node.outputs[1].empty() && UseCount(graph, index, node.outputs[1]) > 0) {
      context.Log(Describe(node) + ": kept, mask output '" + node.outputs[1] +
                  "' is used");
      continue;
    }
    const std::string x = node.inputs[0];
    const std::string y = node.outputs[0];
    const std::vector<size_t>& readers = index.consumers[y];
    bool read_by_subgraph = false;
    for (size_t r : readers) read_by_subgraph |= graph.nodes[r].HasSubgraphs();
    if (read_by_subgraph) {
      context.Log(Describe(node) + ": kept, output '" + y +
                  "' is read by a node with subgraphs");
      continue;
    }
    context.stats().nodes_matched++;
    if (IsGraphOutput(graph, y)) {
      // The graph output name must survive; rename X's producer instead.
      std::optional<size_t> p = ProducerIndex(index, x);
      if (!p || dead[*p] || graph.nodes[*p].HasSubgraphs() ||
          !HasSingleUse(graph, index, x)) {
        context.Log(Describe(node) + ": kept, output '" + y +
                    "' is a graph output and '" + x +
                    "' cannot be renamed to it");
        continue;
      }
      for (std::string& o : graph.nodes[*p].outputs) {
        if (o == x) o = y;
      }
      graph.nodes[*p].provenance =
          ir::Provenance::Merge(graph.nodes[*p].provenance, node.provenance);
      index.producer[y] = *p;
      graph.value_info.erase(x);
    } else {
      for (size_t r : readers) {
        for (std::string& in : graph.nodes[r].inputs) {
          if (in == y) in = x;
        }
        index.consumers[x].push_back(r);
      }
      graph.value_info.erase(y);
    }
    // The node no longer reads x.
    auto& xs = index.consumers[x];
    xs.erase(std::remove(xs.begin(), xs.end(), n), xs.end());
    context.stats().bytes_saved += StaticByteSize(graph, x);
    dead[n] = true;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
