// fuse-rmsnorm (see fuse_rmsnorm.h).
#include "passes/fuse/fuse_rmsnorm.h"

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

constexpr int64_t kOnnxFloat = 1;  // TensorProto.FLOAT

struct Match {
  std::vector<size_t> nodes;  // pattern nodes, root last
  std::string x, weight;
  float epsilon = 0;
  int64_t axis = -1;
};

bool IsCastToFloat(const ir::Node& node) {
  return node.domain.empty() && node.op_type == "Cast" && node.inputs.size() == 1 &&
         IntAttrOr(node, "to", -1) == kOnnxFloat;
}

// The normalized value %n (Div form or Reciprocal form): its node, the
// numerator %xc and the Sqrt it divides by. Empty on success, else why not.
std::string MatchNormalize(const ir::Graph& graph, const ir::UseDefIndex& index,
                           const std::vector<bool>& dead, size_t n_i,
                           std::vector<size_t>& nodes, std::string& xc,
                           size_t& sqrt_i) {
  const ir::Node& n = graph.nodes[n_i];
  if (n.inputs.size() != 2) return Describe(n) + " does not have 2 inputs";
  if (n.op_type == "Div") {
    auto s = SingleUseProducer(graph, index, dead, n.inputs[1], "Sqrt");
    if (!s) return "Div divisor is not a single-use Sqrt";
    xc = n.inputs[0];
    sqrt_i = *s;
    nodes.push_back(n_i);
    return "";
  }
  // 1/s as Reciprocal(s), or Div(1, s) (torch.rsqrt at opset <= 17).
  size_t r_i;
  bool found = SplitOperands(graph, index, dead, n, "Reciprocal", r_i, xc);
  if (!found && SplitOperands(graph, index, dead, n, "Div", r_i, xc)) {
    const ir::Node& d = graph.nodes[r_i];
    found = d.inputs.size() == 2 && IsScalarNear(graph, d.inputs[0], 1.0, 0.0);
  }
  if (!found) return "Mul has no single-use Reciprocal or Div(1, .) operand";
  const std::string& s_in = graph.nodes[r_i].inputs.back();
  auto s = SingleUseProducer(graph, index, dead, s_in, "Sqrt");
  if (!s) return "reciprocal input is not a single-use Sqrt";
  sqrt_i = *s;
  nodes.push_back(r_i);
  nodes.push_back(n_i);
  return "";
}

// Walks up from the weight Mul; empty on success, else the reason.
std::string MatchAt(const ir::Graph& graph, const ir::UseDefIndex& index,
                    const std::vector<bool>& dead, size_t root, Match& m) {
  const ir::Node& mul = graph.nodes[root];
  if (mul.inputs.size() != 2) return "not binary";
  // The operand that is not the weight constant, optionally through a Cast.
  std::string weight, n;
  for (int side = 0; side < 2 && weight.empty(); ++side) {
    if (FindConstant(graph, mul.inputs[side]) != nullptr) {
      weight = mul.inputs[side];
      n = mul.inputs[1 - side];
    }
  }
  if (weight.empty()) return "no constant weight operand";
  std::vector<size_t> tail;
  std::optional<size_t> n_i = ProducerIndex(index, n);
  if (!n_i || dead[*n_i] || !HasSingleUse(graph, index, n)) return "no single-use normalized operand";
  if (IsCastToFloat(graph.nodes[*n_i])) {
    tail.push_back(*n_i);
    n = graph.nodes[*n_i].inputs[0];
    n_i = ProducerIndex(index, n);
    if (!n_i || dead[*n_i] || !HasSingleUse(graph, index, n)) return "no single-use normalized operand";
  }
  const ir::Node& norm = graph.nodes[*n_i];
  if (!norm.domain.empty() || (norm.op_type != "Div" && norm.op_type != "Mul")) {
    return "no single-use normalized operand";
  }
  std::vector<size_t> nodes;
  std::string xc;
  size_t sqrt_i = 0;  // set by MatchNormalize when it matches
  std::string why = MatchNormalize(graph, index, dead, *n_i, nodes, xc, sqrt_i);
  // Past this point the chain looks like an RMS norm: failures are near
  // misses worth logging.
  if (!why.empty()) return "near miss: " + why;
  auto ae = SingleUseProducer(graph, index, dead, graph.nodes[sqrt_i].inputs[0], "Add");
  if (!ae) return "near miss: Sqrt input is not a single-use Add";
  size_t rm_i;
  std::string eps;
  if (!SplitOperands(graph, index, dead, graph.nodes[*ae], "ReduceMean", rm_i, eps)) {
    return "near miss: epsilon Add has no single-use ReduceMean operand";
  }
  std::optional<double> eps_value = ConstantScalar(graph, eps);
  if (!eps_value) return "near miss: epsilon '" + eps + "' is not a scalar constant";
  const ir::Node& rm = graph.nodes[rm_i];
  if (rm.inputs.empty()) return "near miss: ReduceMean has no input";
  std::optional<size_t> sq_i = ProducerIndex(index, rm.inputs[0]);
  if (!sq_i || dead[*sq_i] || !HasSingleUse(graph, index, rm.inputs[0])) {
    return "near miss: mean input is not a single-use square";
  }
  const ir::Node& sq = graph.nodes[*sq_i];
  if (!sq.domain.empty() || sq.inputs.size() != 2 || sq.inputs[0] != xc) {
    return "near miss: mean input is not a square of '" + xc + "'";
  }
  if (sq.op_type == "Pow") {
    if (!IsScalarNear(graph, sq.inputs[1], 2.0, 0.0)) {
      return "near miss: Pow exponent is not the constant 2";
    }
  } else if (sq.op_type != "Mul" || sq.inputs[1] != xc) {
    return "near miss: mean input is not Pow(x, 2) or Mul(x, x)";
  }
  if (IntAttrOr(rm, "keepdims", 1) != 1) return "near miss: " + Describe(rm) + " has keepdims=0";
  std::optional<std::vector<int64_t>> axes = ReduceAxes(graph, rm);
  if (!axes) return "near miss: ReduceMean axes are not constant";
  // The input of the chain: %x, or the Cast's input when %xc is a Cast
  // read only by the square and the normalization (a Cast with other
  // readers stays, and the fused op reads its output).
  std::vector<size_t> head;
  std::string x = xc;
  std::optional<size_t> c = ProducerIndex(index, xc);
  if (c && !dead[*c] && IsCastToFloat(graph.nodes[*c]) &&
      UseCount(graph, index, xc) == 2 && !IsGraphOutput(graph, xc)) {
    head.push_back(*c);
    x = graph.nodes[*c].inputs[0];
  }
  int64_t rank = RankOf(graph, xc);
  if (rank < 0) rank = RankOf(graph, x);
  std::optional<int64_t> axis = TrailingAxis(*axes, rank);
  if (!axis) return "near miss: ReduceMean axes are not trailing contiguous axes";
  const ir::Tensor* w = FindConstant(graph, weight);
  if (w->dtype != ir::DType::kF32) return "near miss: weight '" + weight + "' is not f32";
  if (static_cast<int64_t>(w->dims.size()) > -*axis) {
    return "near miss: weight has more dims than the normalized axes";
  }
  m.nodes = head;
  for (size_t i : {*sq_i, rm_i, *ae, sqrt_i}) m.nodes.push_back(i);
  for (size_t i : nodes) m.nodes.push_back(i);
  for (size_t i : tail) m.nodes.push_back(i);
  m.nodes.push_back(root);
  m.x = x;
  m.weight = weight;
  m.epsilon = static_cast<float>(*eps_value);
  m.axis = *axis;
  return "";
}

}  // namespace

absl::Status FuseRmsNormPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    const ir::Node& root = graph.nodes[n];
    if (!root.domain.empty() || root.op_type != "Mul") continue;
    Match m;
    std::string why = MatchAt(graph, index, dead, n, m);
    if (!why.empty()) {
      const std::string kNear = "near miss: ";
      if (why.rfind(kNear, 0) == 0) {
        context.Log(Describe(root) + ": not fused, " + why.substr(kNear.size()));
      }
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node fused;
    fused.name = root.name;
    fused.domain = runtime::kSlimpackDomain;
    fused.op_type = "RMSNorm";
    fused.inputs = {m.x, m.weight};
    fused.outputs = {root.outputs[0]};
    fused.attributes["axis"] = ir::Attribute::Int(m.axis);
    fused.attributes["epsilon"] = ir::Attribute::Float(m.epsilon);
    ReplaceWithFused(graph, n, m.nodes, std::move(fused), dead, context);
  }
  EraseFusedNodes(graph, dead, context);
  return absl::OkStatus();
}

}  // namespace slimpack::passes
