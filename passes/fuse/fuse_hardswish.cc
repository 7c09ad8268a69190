// fuse-hardswish (see fuse_hardswish.h).
#include "passes/fuse/fuse_hardswish.h"

#include <cmath>

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

constexpr int64_t kHardSwishOpset = 14;
constexpr double kRelTol = 1e-6;

bool Near(double v, double want) {
  return want == 0 ? v == 0 : std::fabs(v - want) <= kRelTol * std::fabs(want);
}

// Clip bounds (attributes before opset 11, else inputs 1 and 2).
std::string ClipIsRelu6(const ir::Graph& graph, const ir::Node& clip) {
  double lo = FloatAttrOr(clip, "min", -INFINITY);
  double hi = FloatAttrOr(clip, "max", INFINITY);
  for (size_t i = 1; i < clip.inputs.size() && i < 3; ++i) {
    if (clip.inputs[i].empty()) continue;
    std::optional<double> v = ConstantScalar(graph, clip.inputs[i]);
    if (!v) return "Clip bound '" + clip.inputs[i] + "' is not a scalar constant";
    (i == 1 ? lo : hi) = *v;
  }
  if (!Near(lo, 0) || !Near(hi, 6)) {
    return "Clip bounds are [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "], not [0, 6]";
  }
  return "";
}

struct Match {
  std::vector<size_t> absorbed;  // nodes removed (root excluded)
  std::string x;
};

// Form A rooted at Mul `root`. Empty: matched; "-": not a candidate.
std::string MatchHardSigmoid(const ir::Graph& graph, const ir::UseDefIndex& index,
                             const std::vector<bool>& dead, const ir::Node& root,
                             Match& m) {
  if (root.op_type != "Mul" || root.inputs.size() != 2) return "-";
  for (int side = 0; side < 2; ++side) {
    std::optional<size_t> p = ProducerIndex(index, root.inputs[side]);
    if (!p || dead[*p]) continue;
    const ir::Node& hs = graph.nodes[*p];
    if (!hs.domain.empty() || hs.op_type != "HardSigmoid") continue;
    if (hs.inputs.empty() || hs.inputs[0] != root.inputs[1 - side]) {
      return "the other Mul operand is not the HardSigmoid's input";
    }
    float alpha = FloatAttrOr(hs, "alpha", 0.2f);
    float beta = FloatAttrOr(hs, "beta", 0.5f);
    if (!Near(alpha, 1.0 / 6) || !Near(beta, 0.5)) {
      return "HardSigmoid alpha " + std::to_string(alpha) + " beta " +
             std::to_string(beta) + " are not 1/6 and 0.5";
    }
    if (!HasSingleUse(graph, index, hs.outputs[0])) {
      return "HardSigmoid output '" + hs.outputs[0] + "' has other readers";
    }
    m.absorbed = {*p};
    m.x = hs.inputs[0];
    return "";
  }
  return "-";
}

// Form B rooted at Div(m, 6) or Mul(m, 1/6).
std::string MatchClip(const ir::Graph& graph, const ir::UseDefIndex& index,
                      const std::vector<bool>& dead, const ir::Node& root, Match& m) {
  if (root.inputs.size() != 2) return "-";
  size_t mul_i;
  std::string k;
  if (root.op_type == "Div") {
    auto p = SingleUseProducer(graph, index, dead, root.inputs[0], "Mul");
    if (!p) return "-";
    mul_i = *p;
    k = root.inputs[1];
    if (!IsScalarNear(graph, k, 6.0, kRelTol)) return "-";
  } else if (root.op_type == "Mul") {
    if (!SplitOperands(graph, index, dead, root, "Mul", mul_i, k)) return "-";
    if (!IsScalarNear(graph, k, 1.0 / 6, kRelTol)) return "-";
  } else {
    return "-";
  }
  // From here the chain ends in "/ 6": report why the rest does not match.
  size_t clip_i;
  std::string x;
  if (!SplitOperands(graph, index, dead, graph.nodes[mul_i], "Clip", clip_i, x)) {
    return "-";  // a plain scaled product, not a HardSwish candidate
  }
  const ir::Node& clip = graph.nodes[clip_i];
  std::string why = ClipIsRelu6(graph, clip);
  if (!why.empty()) return why;
  size_t add_i;
  std::string three;
  auto a = SingleUseProducer(graph, index, dead, clip.inputs[0], "Add");
  if (!a) return "Clip input is not a single-use Add";
  add_i = *a;
  const ir::Node& add = graph.nodes[add_i];
  if (add.inputs.size() != 2) return "Add does not have 2 inputs";
  int x_side = add.inputs[0] == x ? 0 : add.inputs[1] == x ? 1 : -1;
  if (x_side < 0) return "the Add does not read the Mul's other operand '" + x + "'";
  three = add.inputs[1 - x_side];
  if (!IsScalarNear(graph, three, 3.0, kRelTol)) return "Add constant is not 3";
  m.absorbed = {add_i, clip_i, mul_i};
  m.x = x;
  return "";
}

}  // namespace

absl::Status FuseHardSwishPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& root = graph.nodes[n];
    if (dead[n] || !root.domain.empty()) continue;
    Match m;
    std::string why = MatchHardSigmoid(graph, index, dead, root, m);
    if (why == "-") why = MatchClip(graph, index, dead, root, m);
    if (why == "-") continue;
    if (!why.empty()) {
      context.Log(Describe(root) + ": not fused, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node fused;
    fused.name = root.name;
    fused.op_type = "HardSwish";
    if (context.opset() < kHardSwishOpset) fused.domain = runtime::kSlimpackDomain;
    fused.inputs = {m.x};
    fused.outputs = {root.outputs[0]};
    // The root (the final Mul) is not in m.absorbed: merged last.
    ReplaceWithFused(graph, n, m.absorbed, std::move(fused), dead, context);
  }
  EraseFusedNodes(graph, dead, context);
  return absl::OkStatus();
}

}  // namespace slimpack::passes
