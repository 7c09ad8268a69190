// LowerSlimpackOps (see onnx_lower.h): one function per slimpack op, each
// appending the nodes it lowers to; the graph is edited as a copy and
// swapped in only when every node lowered.
#include "export/onnx_lower.h"

#include <cmath>
#include <optional>
#include <vector>

#include "export/onnx_graph_edit.h"
#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

constexpr char kSlimpackDomain[] = "slimpack";
// Opsets where operators used below changed form.
constexpr int64_t kClipInputsOpset = 11;
constexpr int64_t kHardSwishOpset = 14;
constexpr int64_t kReduceAxesInputOpset = 18;

std::string Describe(const ir::Node& n) { return "node '" + n.name + "' (slimpack." + n.op_type + ")"; }

class Lowerer {
 public:
  Lowerer(ir::Graph& graph, int64_t opset, OnnxProfile profile)
      : ed_(graph), opset_(opset), profile_(profile) {}

  std::vector<ir::Node>& nodes() { return nodes_; }
  int64_t contrib_nodes() const { return contrib_; }

  absl::Status Lower(const ir::Node& n) {
    const std::string& op = n.op_type;
    if (op == "FusedConv") return LowerFused(n, "Conv");
    if (op == "FusedGemm") return LowerFused(n, "Gemm");
    if (op == "Gelu") return LowerGelu(n, n.inputs.at(0), n.outputs.at(0));
    if (op == "LayerNormGelu") return LowerLayerNormGelu(n);
    if (op == "RMSNorm") return LowerRmsNorm(n);
    if (op == "SiLU") return LowerSiLU(n);
    if (op == "HardSwish") return Activation(n, "HardSwish", {}, n.inputs.at(0), n.outputs.at(0));
    if (op == "Attention") return LowerAttention(n);
    if (op == "MatMulAdd") return LowerMatMulAdd(n);
    return absl::UnimplementedError(
        Describe(n) + " has no ONNX lowering; lowered: Attention, FusedConv, FusedGemm, Gelu, "
                      "HardSwish, LayerNormGelu, MatMulAdd, RMSNorm, SiLU");
  }

 private:
  std::string Fresh(const ir::Node& n, const std::string& suffix) {
    return ed_.Fresh(n.name + "/" + suffix);
  }
  ir::Node& Emit(const ir::Node& origin, const std::string& op, std::vector<std::string> inputs,
                 std::vector<std::string> outputs, const std::string& domain = "") {
    nodes_.push_back(MakeNode(Fresh(origin, op), op, std::move(inputs), std::move(outputs),
                              origin.provenance, domain));
    if (!domain.empty()) ++contrib_;
    return nodes_.back();
  }
  absl::StatusOr<std::string> Scalar(const ir::Node& n, const std::string& what, float v) {
    return ed_.AddF32(n.name + "/" + what, {}, {v}, n.provenance);
  }

  // Binary op `op`(a, b) into a fresh value (or `out` when given).
  std::string Binary(const ir::Node& n, const std::string& op, const std::string& a,
                     const std::string& b, std::string out = "") {
    if (out.empty()) out = Fresh(n, op + "_out");
    Emit(n, op, {a, b}, {out});
    return out;
  }

  // The standard node(s) for activation `act` from `in` into `out`.
  absl::Status Activation(const ir::Node& n, const std::string& act,
                          const std::vector<float>& params, const std::string& in,
                          const std::string& out) {
    const size_t want = act == "Clip" ? 2 : act == "LeakyRelu" ? 1 : 0;
    if (params.size() != want) {
      return absl::InvalidArgumentError(Describe(n) + ": activation " + act + " expects " +
                                        std::to_string(want) + " activation_params, found " +
                                        std::to_string(params.size()));
    }
    if (act == "Relu" || act == "Sigmoid") {
      Emit(n, act, {in}, {out});
    } else if (act == "LeakyRelu") {
      Emit(n, act, {in}, {out}).attributes["alpha"] = ir::Attribute::Float(params[0]);
    } else if (act == "Clip" && opset_ >= kClipInputsOpset) {
      ASSIGN_OR_RETURN(std::string lo, Scalar(n, "clip_min", params[0]));
      ASSIGN_OR_RETURN(std::string hi, Scalar(n, "clip_max", params[1]));
      Emit(n, act, {in, lo, hi}, {out});
    } else if (act == "Clip") {
      ir::Node& c = Emit(n, act, {in}, {out});
      c.attributes["min"] = ir::Attribute::Float(params[0]);
      c.attributes["max"] = ir::Attribute::Float(params[1]);
    } else if (act == "HardSwish" && opset_ >= kHardSwishOpset) {
      Emit(n, act, {in}, {out});
    } else if (act == "HardSwish") {
      const std::string hs = Fresh(n, "hard_sigmoid");
      ir::Node& h = Emit(n, "HardSigmoid", {in}, {hs});
      h.attributes["alpha"] = ir::Attribute::Float(1.0f / 6.0f);
      h.attributes["beta"] = ir::Attribute::Float(0.5f);
      Binary(n, "Mul", in, hs, out);
    } else {
      return absl::UnimplementedError(Describe(n) + ": activation '" + act +
                                      "' has no ONNX lowering; supported: Clip, HardSwish, "
                                      "LeakyRelu, Relu, Sigmoid");
    }
    return absl::OkStatus();
  }

  absl::Status LowerFused(const ir::Node& n, const std::string& base) {
    const ir::Attribute* act_attr = n.FindAttribute("activation");
    const std::string act = act_attr ? act_attr->s : "";
    const ir::Attribute* params_attr = n.FindAttribute("activation_params");
    const std::vector<float> params = params_attr ? params_attr->floats : std::vector<float>{};
    ir::Node core = n;
    core.domain.clear();
    core.op_type = base;
    core.attributes.erase("activation");
    core.attributes.erase("activation_params");
    const bool contrib = profile_ == OnnxProfile::kOrt && base == "Conv" &&
                         (act == "Relu" || act == "Sigmoid" || act == "LeakyRelu" || act == "Clip");
    if (contrib) {
      // com.microsoft FusedConv: Conv's inputs and attributes plus
      // activation / activation_params (Clip [min, max], LeakyRelu [alpha]).
      core.op_type = "FusedConv";
      core.domain = kMicrosoftDomain;
      core.attributes["activation"] = ir::Attribute::String(act);
      if (!params.empty()) core.attributes["activation_params"] = ir::Attribute::Floats(params);
      nodes_.push_back(std::move(core));
      ++contrib_;
      return absl::OkStatus();
    }
    if (act.empty()) {
      nodes_.push_back(std::move(core));
      return absl::OkStatus();
    }
    const std::string pre = Fresh(n, base + "_out");
    core.outputs = {pre};
    nodes_.push_back(std::move(core));
    return Activation(n, act, params, pre, n.outputs.at(0));
  }

  absl::Status LowerGelu(const ir::Node& n, const std::string& x, const std::string& out) {
    const ir::Attribute* a = n.FindAttribute("approximate");
    const std::string approx = a ? a->s : "none";
    if (approx != "none" && approx != "tanh") {
      return absl::UnimplementedError(Describe(n) + ": Gelu approximate='" + approx +
                                      "'; supported: none, tanh");
    }
    if (profile_ == OnnxProfile::kOrt) {
      Emit(n, approx == "none" ? "Gelu" : "FastGelu", {x}, {out}, kMicrosoftDomain);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(std::string half, Scalar(n, "half", 0.5f));
    ASSIGN_OR_RETURN(std::string one, Scalar(n, "one", 1.0f));
    std::string inner;
    if (approx == "none") {
      ASSIGN_OR_RETURN(std::string r2, Scalar(n, "inv_sqrt2", static_cast<float>(M_SQRT1_2)));
      const std::string scaled = Binary(n, "Mul", x, r2);
      inner = Fresh(n, "erf");
      Emit(n, "Erf", {scaled}, {inner});
    } else {
      ASSIGN_OR_RETURN(std::string c, Scalar(n, "gelu_c", 0.044715f));
      ASSIGN_OR_RETURN(std::string k, Scalar(n, "sqrt_2_over_pi",
                                             static_cast<float>(std::sqrt(2.0 / M_PI))));
      const std::string x2 = Binary(n, "Mul", x, x);
      const std::string x3 = Binary(n, "Mul", x2, x);
      const std::string cx3 = Binary(n, "Mul", x3, c);
      const std::string sum = Binary(n, "Add", x, cx3);
      const std::string arg = Binary(n, "Mul", sum, k);
      inner = Fresh(n, "tanh");
      Emit(n, "Tanh", {arg}, {inner});
    }
    const std::string onep = Binary(n, "Add", inner, one);
    const std::string hx = Binary(n, "Mul", x, half);
    Binary(n, "Mul", hx, onep, out);
    return absl::OkStatus();
  }

  absl::Status LowerLayerNormGelu(const ir::Node& n) {
    ir::Node norm = n;
    norm.domain.clear();
    norm.op_type = "LayerNormalization";
    norm.name = Fresh(n, "LayerNormalization");
    norm.attributes.erase("approximate");
    const std::string y = Fresh(n, "norm_out");
    norm.outputs = {y};
    nodes_.push_back(std::move(norm));
    return LowerGelu(n, y, n.outputs.at(0));
  }

  absl::Status LowerRmsNorm(const ir::Node& n) {
    if (n.inputs.size() < 2) {
      return absl::InvalidArgumentError(Describe(n) + ": expects inputs (X, scale)");
    }
    const ir::Attribute* axis_attr = n.FindAttribute("axis");
    const ir::Attribute* eps_attr = n.FindAttribute("epsilon");
    const int64_t axis = axis_attr ? axis_attr->i : -1;
    const float eps = eps_attr ? eps_attr->f : 1e-5f;
    const std::string& x = n.inputs[0];
    if (profile_ == OnnxProfile::kOrt) {
      // ORT's contrib schema lives in the default domain.
      ir::Node& s = Emit(n, "SimplifiedLayerNormalization", {x, n.inputs[1]}, {n.outputs.at(0)});
      s.attributes["axis"] = ir::Attribute::Int(axis);
      s.attributes["epsilon"] = ir::Attribute::Float(eps);
      ++contrib_;
      return absl::OkStatus();
    }
    // ReduceMean over [axis, rank) needs the rank when axis >= 0; a
    // negative axis names the trailing dims directly.
    std::vector<int64_t> axes;
    if (axis < 0) {
      for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
    } else {
      std::optional<ir::ValueInfo> vi = ed_.graph().FindValueInfo(x);
      if (!vi || !vi->shape.rank_known()) {
        return absl::UnimplementedError(Describe(n) + ": axis " + std::to_string(axis) +
                                        " on input '" + x + "' of unknown rank");
      }
      for (int64_t a = axis; a < static_cast<int64_t>(vi->shape.rank()); ++a) axes.push_back(a);
    }
    const std::string sq = Binary(n, "Mul", x, x);
    const std::string mean = Fresh(n, "mean");
    if (opset_ >= kReduceAxesInputOpset) {
      ASSIGN_OR_RETURN(std::string ax, ed_.AddI64(n.name + "/axes", {static_cast<int64_t>(axes.size())},
                                                  axes, n.provenance));
      Emit(n, "ReduceMean", {sq, ax}, {mean}).attributes["keepdims"] = ir::Attribute::Int(1);
    } else {
      ir::Node& r = Emit(n, "ReduceMean", {sq}, {mean});
      r.attributes["axes"] = ir::Attribute::Ints(axes);
      r.attributes["keepdims"] = ir::Attribute::Int(1);
    }
    ASSIGN_OR_RETURN(std::string e, Scalar(n, "epsilon", eps));
    const std::string ve = Binary(n, "Add", mean, e);
    const std::string s = Fresh(n, "sqrt");
    Emit(n, "Sqrt", {ve}, {s});
    const std::string normed = Binary(n, "Div", x, s);
    Binary(n, "Mul", normed, n.inputs[1], n.outputs.at(0));
    return absl::OkStatus();
  }

  absl::Status LowerSiLU(const ir::Node& n) {
    const std::string sig = Fresh(n, "sigmoid");
    Emit(n, "Sigmoid", {n.inputs.at(0)}, {sig});
    Binary(n, "Mul", n.inputs.at(0), sig, n.outputs.at(0));
    return absl::OkStatus();
  }

  absl::Status LowerAttention(const ir::Node& n) {
    if (n.inputs.size() < 3) {
      return absl::InvalidArgumentError(Describe(n) + ": expects inputs (Q, Kt, V[, mask])");
    }
    const ir::Attribute* scale = n.FindAttribute("scale");
    const ir::Attribute* divisor = n.FindAttribute("scale_divisor");
    if (scale && divisor) {
      return absl::InvalidArgumentError(Describe(n) + ": has both scale and scale_divisor");
    }
    std::string s = Binary(n, "MatMul", n.inputs[0], n.inputs[1]);
    if (scale || divisor) {
      ASSIGN_OR_RETURN(std::string c, Scalar(n, divisor ? "scale_divisor" : "scale",
                                             divisor ? divisor->f : scale->f));
      s = Binary(n, divisor ? "Div" : "Mul", s, c);
    }
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) s = Binary(n, "Add", s, n.inputs[3]);
    const std::string p = Fresh(n, "probs");
    Emit(n, "Softmax", {s}, {p}).attributes["axis"] = ir::Attribute::Int(-1);
    Binary(n, "MatMul", p, n.inputs[2], n.outputs.at(0));
    return absl::OkStatus();
  }

  absl::Status LowerMatMulAdd(const ir::Node& n) {
    if (n.inputs.size() != 3) {
      return absl::InvalidArgumentError(Describe(n) + ": expects inputs (A, W, bias)");
    }
    const std::string m = Binary(n, "MatMul", n.inputs[0], n.inputs[1]);
    Binary(n, "Add", m, n.inputs[2], n.outputs.at(0));
    return absl::OkStatus();
  }

  GraphEditor ed_;
  int64_t opset_;
  OnnxProfile profile_;
  std::vector<ir::Node> nodes_;
  int64_t contrib_ = 0;
};

}  // namespace

absl::StatusOr<LowerReport> LowerSlimpackOps(ir::Model& model, OnnxProfile profile) {
  auto it = model.opset_imports.find("");
  const int64_t opset = it == model.opset_imports.end() ? 17 : it->second;
  ir::Graph graph = model.graph;
  LowerReport report;
  Lowerer lowerer(graph, opset, profile);
  for (const ir::Node& n : model.graph.nodes) {
    if (n.domain != kSlimpackDomain) {
      lowerer.nodes().push_back(n);
      continue;
    }
    if (n.outputs.empty() || n.inputs.empty()) {
      return absl::InvalidArgumentError(Describe(n) + ": has no inputs or outputs");
    }
    RETURN_IF_ERROR(lowerer.Lower(n));
    ++report.lowered[n.op_type];
  }
  graph.nodes = std::move(lowerer.nodes());
  model.graph = std::move(graph);
  report.contrib_nodes = lowerer.contrib_nodes();
  if (report.contrib_nodes > 0 && !model.opset_imports.count(kMicrosoftDomain)) {
    model.opset_imports[kMicrosoftDomain] = 1;
  }
  return report;
}

}  // namespace slimpack::onnx_export
