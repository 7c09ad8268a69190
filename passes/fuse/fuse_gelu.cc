// fuse-gelu (see fuse_gelu.h).
#include "passes/fuse/fuse_gelu.h"

#include <cmath>

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

constexpr int64_t kGeluOpset = 20;
constexpr double kExact = 1e-6;
constexpr double kRounded = 1e-4;

struct Match {
  std::vector<size_t> nodes;
  std::string x;
  std::string approximate;
};

// Operand of binary `node` that is the constant `want`; the other operand
// goes to `other`.
bool ConstOperand(const ir::Graph& graph, const ir::Node& node, double want,
                  double tol, std::string& other) {
  if (node.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    if (IsScalarNear(graph, node.inputs[side], want, tol)) {
      other = node.inputs[1 - side];
      return true;
    }
  }
  return false;
}

// %b = Add(f(%x), 1) with f the erf or tanh head. Empty on success.
std::string MatchHead(const ir::Graph& graph, const ir::UseDefIndex& index,
                      const std::vector<bool>& dead, size_t b_i,
                      const std::string& x, Match& m) {
  std::string g;
  if (!ConstOperand(graph, graph.nodes[b_i], 1.0, kExact, g)) return "Add is not 1 + f(x)";
  if (auto erf = SingleUseProducer(graph, index, dead, g, "Erf")) {
    const std::string& a = graph.nodes[*erf].inputs[0];
    std::string base;
    auto div = SingleUseProducer(graph, index, dead, a, "Div");
    auto mul = SingleUseProducer(graph, index, dead, a, "Mul");
    if (div && graph.nodes[*div].inputs.size() == 2 &&
        IsScalarNear(graph, graph.nodes[*div].inputs[1], std::sqrt(2.0), kRounded)) {
      base = graph.nodes[*div].inputs[0];
    } else if (mul && ConstOperand(graph, graph.nodes[*mul], std::sqrt(0.5), kRounded, base)) {
    } else {
      return "Erf input is not x / sqrt(2)";
    }
    if (base != x) return "Erf reads '" + base + "', not the GELU input '" + x + "'";
    m.nodes.insert(m.nodes.end(), {div ? *div : *mul, *erf, b_i});
    m.approximate = "none";
    return "";
  }
  auto tanh = SingleUseProducer(graph, index, dead, g, "Tanh");
  if (!tanh) return "1 + f(x) with f neither a single-use Erf nor Tanh";
  auto s = SingleUseProducer(graph, index, dead, graph.nodes[*tanh].inputs[0], "Mul");
  std::string r_name, q_name, p_name, base;
  if (!s || !ConstOperand(graph, graph.nodes[*s], std::sqrt(2.0 / M_PI), kRounded, r_name)) {
    return "Tanh input is not sqrt(2/pi) * (...)";
  }
  auto r = SingleUseProducer(graph, index, dead, r_name, "Add");
  if (!r || graph.nodes[*r].inputs.size() != 2) return "tanh argument is not x + 0.044715 x^3";
  const ir::Node& add = graph.nodes[*r];
  q_name = add.inputs[0] == x ? add.inputs[1] : add.inputs[0];
  if (add.inputs[0] != x && add.inputs[1] != x) return "tanh argument does not add x";
  auto q = SingleUseProducer(graph, index, dead, q_name, "Mul");
  if (!q || !ConstOperand(graph, graph.nodes[*q], 0.044715, kExact, p_name)) {
    return "tanh argument has no 0.044715 * x^3 term";
  }
  auto p = SingleUseProducer(graph, index, dead, p_name, "Pow");
  if (!p || graph.nodes[*p].inputs.size() != 2 || graph.nodes[*p].inputs[0] != x ||
      !IsScalarNear(graph, graph.nodes[*p].inputs[1], 3.0, 0.0)) {
    return "cube is not Pow(x, 3)";
  }
  m.nodes.insert(m.nodes.end(), {*p, *q, *r, *s, *tanh, b_i});
  m.approximate = "tanh";
  return "";
}

// Root %y = Mul(...): finds x and %b = 1 + f(x) through either tail.
std::string MatchAt(const ir::Graph& graph, const ir::UseDefIndex& index,
                    const std::vector<bool>& dead, size_t root, Match& m) {
  const ir::Node& y = graph.nodes[root];
  if (y.inputs.size() != 2) return "not binary";
  std::string c_name;
  if (ConstOperand(graph, y, 0.5, kExact, c_name)) {
    // y = (x * b) * 0.5
    auto c = SingleUseProducer(graph, index, dead, c_name, "Mul");
    if (!c || graph.nodes[*c].inputs.size() != 2) return "0.5 * v with v not a single-use Mul";
    for (int side = 0; side < 2; ++side) {
      auto b = SingleUseProducer(graph, index, dead, graph.nodes[*c].inputs[side], "Add");
      if (!b) continue;
      m.nodes.clear();
      m.x = graph.nodes[*c].inputs[1 - side];
      if (MatchHead(graph, index, dead, *b, m.x, m).empty()) {
        m.nodes.insert(m.nodes.end(), {*c, root});
        return "";
      }
    }
    return "0.5 * x * b with b not 1 + erf/tanh(x)";
  }
  // y = (x * 0.5) * b
  for (int side = 0; side < 2; ++side) {
    auto h = SingleUseProducer(graph, index, dead, y.inputs[side], "Mul");
    auto b = SingleUseProducer(graph, index, dead, y.inputs[1 - side], "Add");
    std::string x;
    if (!h || !b || !ConstOperand(graph, graph.nodes[*h], 0.5, kExact, x)) continue;
    m.nodes.clear();
    m.x = x;
    std::string why = MatchHead(graph, index, dead, *b, x, m);
    if (why.empty()) {
      m.nodes.insert(m.nodes.end(), {*h, root});
      return "";
    }
    return why;
  }
  return "not a GELU tail";
}

}  // namespace

absl::Status FuseGeluPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    const ir::Node& root = graph.nodes[n];
    if (!root.domain.empty() || root.op_type != "Mul") continue;
    Match m;
    std::string why = MatchAt(graph, index, dead, n, m);
    if (!why.empty()) {
      if (why != "not a GELU tail" && why != "not binary") {
        context.Log(Describe(root) + ": not fused, " + why);
      }
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node gelu;
    gelu.name = root.name;
    gelu.op_type = "Gelu";
    if (context.opset() < kGeluOpset) gelu.domain = runtime::kSlimpackDomain;
    gelu.inputs = {m.x};
    gelu.outputs = {root.outputs[0]};
    gelu.attributes["approximate"] = ir::Attribute::String(m.approximate);
    ReplaceWithFused(graph, n, m.nodes, std::move(gelu), dead, context);
  }
  EraseFusedNodes(graph, dead, context);
  return absl::OkStatus();
}

}  // namespace slimpack::passes
