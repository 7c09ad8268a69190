// fuse-attention (see fuse_attention.h).
#include "passes/fuse/fuse_attention.h"

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

// Softmax's default axis became -1 at opset 13 (before: 1, over a 2-D
// coercion, which equals the last axis only for rank 2).
constexpr int64_t kSoftmaxLastAxisDefaultOpset = 13;

struct Match {
  std::vector<size_t> absorbed;  // root excluded
  std::string q, kt, v, mask;
  std::optional<float> scale, scale_divisor;
};

bool IsOp(const ir::Node& node, std::string_view op) {
  return node.domain.empty() && node.op_type == op;
}

// Empty: matched; "-": not a candidate; else the near-miss reason.
std::string MatchAt(const ir::Graph& graph, const ir::UseDefIndex& index,
                    const std::vector<bool>& dead, int64_t opset, size_t root,
                    Match& m) {
  const ir::Node& out = graph.nodes[root];
  if (!IsOp(out, "MatMul") || out.inputs.size() != 2) return "-";
  std::optional<size_t> sm_i = ProducerIndex(index, out.inputs[0]);
  if (!sm_i || dead[*sm_i] || !IsOp(graph.nodes[*sm_i], "Softmax")) return "-";
  const ir::Node& softmax = graph.nodes[*sm_i];
  // From here it looks like attention: report why it does not fuse.
  if (!HasSingleUse(graph, index, out.inputs[0])) return "Softmax output has other readers";
  const ir::Attribute* axis_attr = softmax.FindAttribute("axis");
  int64_t rank = RankOf(graph, softmax.inputs[0]);
  int64_t axis = axis_attr ? axis_attr->i : (opset >= kSoftmaxLastAxisDefaultOpset ? -1 : 1);
  if (!(axis == -1 || (rank > 0 && axis == rank - 1))) {
    return "Softmax axis " + std::to_string(axis) + " is not the last axis";
  }
  m.absorbed.push_back(*sm_i);
  std::string s = softmax.inputs[0];
  // Optional mask Add: the operand produced by a single-use scale node or
  // the scores MatMul is the score side.
  std::optional<size_t> p = ProducerIndex(index, s);
  if (!p || dead[*p] || !HasSingleUse(graph, index, s)) {
    return "Softmax input is not a single-use node output";
  }
  if (IsOp(graph.nodes[*p], "Add")) {
    const ir::Node& add = graph.nodes[*p];
    if (add.inputs.size() != 2) return "mask Add does not have 2 inputs";
    int side = -1;
    for (int k = 0; k < 2 && side < 0; ++k) {
      for (std::string_view op : {"Div", "Mul", "MatMul"}) {
        if (SingleUseProducer(graph, index, dead, add.inputs[k], op)) side = k;
      }
    }
    if (side < 0) return "Add before Softmax has no single-use score operand";
    m.mask = add.inputs[1 - side];
    m.absorbed.push_back(*p);
    s = add.inputs[side];
    p = ProducerIndex(index, s);
  }
  const ir::Node* scale = &graph.nodes[*p];
  if (IsOp(*scale, "Div") || IsOp(*scale, "Mul")) {
    if (scale->inputs.size() != 2) return "scale node does not have 2 inputs";
    int qk_side = SingleUseProducer(graph, index, dead, scale->inputs[0], "MatMul") ? 0
                  : (IsOp(*scale, "Mul") &&
                     SingleUseProducer(graph, index, dead, scale->inputs[1], "MatMul"))
                      ? 1
                      : -1;
    if (qk_side < 0) return "scale " + Describe(*scale) + " has no single-use MatMul operand";
    std::optional<double> c = ConstantScalar(graph, scale->inputs[1 - qk_side]);
    if (!c) return "scale '" + scale->inputs[1 - qk_side] + "' is not a scalar constant";
    (IsOp(*scale, "Div") ? m.scale_divisor : m.scale) = static_cast<float>(*c);
    m.absorbed.push_back(*p);
    s = scale->inputs[qk_side];
    p = ProducerIndex(index, s);
  }
  if (!IsOp(graph.nodes[*p], "MatMul") || !HasSingleUse(graph, index, s)) {
    return "scores are not a single-use MatMul";
  }
  const ir::Node& qk = graph.nodes[*p];
  if (qk.inputs.size() != 2) return "scores MatMul does not have 2 inputs";
  m.absorbed.push_back(*p);
  m.q = qk.inputs[0];
  m.kt = qk.inputs[1];
  m.v = out.inputs[1];
  return "";
}

}  // namespace

absl::Status FuseAttentionPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;
    Match m;
    std::string why = MatchAt(graph, index, dead, context.opset(), n, m);
    if (why == "-") continue;
    const ir::Node& root = graph.nodes[n];
    if (!why.empty()) {
      context.Log(Describe(root) + ": not fused, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node fused;
    fused.name = root.name;
    fused.domain = runtime::kSlimpackDomain;
    fused.op_type = "Attention";
    fused.inputs = {m.q, m.kt, m.v};
    if (!m.mask.empty()) fused.inputs.push_back(m.mask);
    fused.outputs = {root.outputs[0]};
    if (m.scale) fused.attributes["scale"] = ir::Attribute::Float(*m.scale);
    if (m.scale_divisor) {
      fused.attributes["scale_divisor"] = ir::Attribute::Float(*m.scale_divisor);
    }
    // Provenance in graph order: scores first, the output MatMul (the
    // root, not in m.absorbed) last.
    std::vector<size_t> matched(m.absorbed.rbegin(), m.absorbed.rend());
    ReplaceWithFused(graph, n, matched, std::move(fused), dead, context);
  }
  EraseFusedNodes(graph, dead, context);
  return absl::OkStatus();
}

}  // namespace slimpack::passes
