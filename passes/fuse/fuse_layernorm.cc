// fuse-layernorm (see fuse_layernorm.h).
#include "passes/fuse/fuse_layernorm.h"

#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

constexpr int64_t kLayerNormOpset = 17;

struct Match {
  std::vector<size_t> nodes;  // pattern nodes, root last
  std::string x, gamma, beta;
  float epsilon = 0;
  int64_t axis = -1;
};

// Walks up from the final Add; empty on success, else the reason.
std::string MatchAt(const ir::Graph& graph, const ir::UseDefIndex& index,
                    const std::vector<bool>& dead, size_t root, Match& m) {
  const ir::Node& add = graph.nodes[root];
  size_t mul_i, div_i, sqrt_i, add_eps_i, rm2_i, pow_i, sub_i, rm1_i;
  std::string beta, gamma, eps, unused;
  if (!SplitOperands(graph, index, dead, add, "Mul", mul_i, beta)) return "no single-use Mul operand";
  if (!SplitOperands(graph, index, dead, graph.nodes[mul_i], "Div", div_i, gamma)) {
    return "Mul has no single-use Div operand";
  }
  const ir::Node& div = graph.nodes[div_i];
  if (div.inputs.size() != 2) return "Div does not have 2 inputs";
  auto sq = SingleUseProducer(graph, index, dead, div.inputs[1], "Sqrt");
  if (!sq) return "Div divisor is not a single-use Sqrt";
  sqrt_i = *sq;
  auto ae = SingleUseProducer(graph, index, dead, graph.nodes[sqrt_i].inputs[0], "Add");
  if (!ae) return "Sqrt input is not a single-use Add";
  add_eps_i = *ae;
  if (!SplitOperands(graph, index, dead, graph.nodes[add_eps_i], "ReduceMean", rm2_i, eps)) {
    return "epsilon Add has no single-use ReduceMean operand";
  }
  std::optional<double> eps_value = ConstantScalar(graph, eps);
  if (!eps_value) return "epsilon '" + eps + "' is not a scalar constant";
  auto pw = SingleUseProducer(graph, index, dead, graph.nodes[rm2_i].inputs[0], "Pow");
  if (!pw) return "variance ReduceMean input is not a single-use Pow";
  pow_i = *pw;
  const ir::Node& pow = graph.nodes[pow_i];
  if (pow.inputs.size() != 2 || !IsScalarNear(graph, pow.inputs[1], 2.0, 0.0)) {
    return "Pow exponent is not the constant 2";
  }
  // %d is read by exactly Pow and Div.
  const std::string& d = pow.inputs[0];
  if (div.inputs[0] != d) return "Div numerator is not the Pow base";
  if (UseCount(graph, index, d) != 2 || IsGraphOutput(graph, d)) {
    return "centered value '" + d + "' has readers besides Pow and Div";
  }
  std::optional<size_t> s = ProducerIndex(index, d);
  if (!s || dead[*s] || graph.nodes[*s].op_type != "Sub" || !graph.nodes[*s].domain.empty()) {
    return "Pow base is not a Sub";
  }
  sub_i = *s;
  const ir::Node& sub = graph.nodes[sub_i];
  if (sub.inputs.size() != 2) return "Sub does not have 2 inputs";
  auto r1 = SingleUseProducer(graph, index, dead, sub.inputs[1], "ReduceMean");
  if (!r1) return "Sub subtrahend is not a single-use ReduceMean";
  rm1_i = *r1;
  const ir::Node& rm1 = graph.nodes[rm1_i];
  const ir::Node& rm2 = graph.nodes[rm2_i];
  if (rm1.inputs.empty() || rm1.inputs[0] != sub.inputs[0]) {
    return "mean ReduceMean does not read the Sub minuend";
  }
  for (const ir::Node* rm : {&rm1, &rm2}) {
    if (IntAttrOr(*rm, "keepdims", 1) != 1) return Describe(*rm) + " has keepdims=0";
  }
  std::optional<std::vector<int64_t>> axes1 = ReduceAxes(graph, rm1);
  std::optional<std::vector<int64_t>> axes2 = ReduceAxes(graph, rm2);
  if (!axes1 || !axes2) return "ReduceMean axes are not constant";
  std::optional<ir::ValueInfo> xinfo = graph.FindValueInfo(sub.inputs[0]);
  int64_t rank = xinfo && xinfo->shape.rank_known() ? static_cast<int64_t>(xinfo->shape.rank()) : -1;
  std::optional<int64_t> axis1 = TrailingAxis(*axes1, rank);
  std::optional<int64_t> axis2 = TrailingAxis(*axes2, rank);
  if (!axis1 || axis1 != axis2) return "ReduceMean axes are not the same trailing axes";
  const ir::Tensor* g = FindConstant(graph, gamma);
  const ir::Tensor* b = FindConstant(graph, beta);
  if (g == nullptr || b == nullptr || g->dtype != ir::DType::kF32 ||
      b->dtype != ir::DType::kF32) {
    return "gamma '" + gamma + "' or beta '" + beta + "' is not an f32 constant";
  }
  if (static_cast<int64_t>(g->dims.size()) > -*axis1 ||
      static_cast<int64_t>(b->dims.size()) > -*axis1) {
    return "gamma/beta have more dims than the normalized axes";
  }
  m.nodes = {rm1_i, sub_i, pow_i, rm2_i, add_eps_i, sqrt_i, div_i, mul_i, root};
  m.x = sub.inputs[0];
  m.gamma = gamma;
  m.beta = beta;
  m.epsilon = static_cast<float>(*eps_value);
  m.axis = *axis1;
  return "";
}

}  // namespace

absl::Status FuseLayerNormPass::Run(ir::Graph& graph,
                                    PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  // LayerNormalization needs opset 17; when the model is older, raising it
  // must not change what the graph's other nodes mean.
  const std::string hazard = context.opset() < kLayerNormOpset
                                 ? OpsetRaiseHazard(graph, context.opset(), kLayerNormOpset)
                                 : "";
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    const ir::Node& root = graph.nodes[n];
    if (!root.domain.empty() || root.op_type != "Add") continue;
    Match m;
    std::string why = MatchAt(graph, index, dead, n, m);
    // (The pattern's own nodes never appear in the hazard: ReduceMean only
    // changes at 18.)
    if (why.empty() && !hazard.empty()) {
      why = "needs opset 17 and the model is opset " + std::to_string(context.opset()) +
            ": " + hazard;
    }
    if (!why.empty()) {
      // Only Adds fed by a Mul(Div) chain are near misses worth reporting.
      if (why.rfind("no single-use", 0) != 0 && why.rfind("Mul has no", 0) != 0) {
        context.Log(Describe(root) + ": not fused, " + why);
      }
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node ln;
    ln.name = root.name;
    ln.op_type = "LayerNormalization";
    ln.inputs = {m.x, m.gamma, m.beta};
    ln.outputs = {root.outputs[0]};
    ln.attributes["axis"] = ir::Attribute::Int(m.axis);
    ln.attributes["epsilon"] = ir::Attribute::Float(m.epsilon);
    for (size_t i : m.nodes) {
      ln.provenance = ir::Provenance::Merge(ln.provenance, graph.nodes[i].provenance);
      if (i == n) continue;
      context.stats().bytes_saved += StaticByteSize(graph, graph.nodes[i].outputs[0]);
      graph.value_info.erase(graph.nodes[i].outputs[0]);
      dead[i] = true;
    }
    graph.nodes[n] = std::move(ln);
    context.stats().nodes_rewritten++;
    if (context.opset() < kLayerNormOpset) context.RequireOpset(kLayerNormOpset);
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
