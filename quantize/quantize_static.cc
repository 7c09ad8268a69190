// quantize-static (see quantize_static.h): plans every Conv/Gemm/MatMul
// first (integer or float, with the reason), then emits the new node list
// in one sweep so no half-rewritten graph is ever left behind.
// Planning is in quantize_static_plan.cc, the numerics in
// quantize_static_numerics.cc.
#include "quantize/quantize_static.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "passes/graph_utils.h"
#include "quantize/quantize_static_internal.h"
#include "quantize/raise_opset_10.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

using ir::DType;
// Shared with quantize_static_plan.cc and quantize_static_numerics.cc.
using static_quant_internal::ActMode;
using static_quant_internal::ChooseParams;
using static_quant_internal::Kind;
using static_quant_internal::Plan;
using static_quant_internal::PlanNode;
using static_quant_internal::QuantizeBias;
using static_quant_internal::QuantizeRows;
using static_quant_internal::TableRange;

// Scale and zero point of one quantized activation value.
struct QValue {
  std::string q;           // quantized value name
  std::string scale;       // f32 scalar initializer
  std::string zero_point;  // u8/i8 scalar initializer
  float s = 1;
  int32_t zp = 0;
};

ir::Tensor MakeTensor(std::string name, DType dtype, std::vector<int64_t> dims,
                      const void* data, size_t bytes, const ir::Provenance& prov) {
  std::vector<uint8_t> b(bytes);
  if (bytes > 0) std::memcpy(b.data(), data, bytes);
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(b));
  t.provenance = prov;
  return t;
}

std::vector<float> FloatsOf(const ir::Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

ir::Attribute FloatAttribute(float v) { return ir::Attribute::Float(v); }

// Emits the rewritten graph.
class Emitter {
 public:
  Emitter(ir::Graph& graph, DType act_type, int64_t opset, StaticQuantReport& report)
      : graph_(graph), act_type_(act_type), opset_(opset), report_(report) {
    for (const ir::ValueInfo& v : graph.inputs) taken_.insert(v.name);
    for (const ir::ValueInfo& v : graph.outputs) taken_.insert(v.name);
    for (const ir::Tensor& t : graph.initializers()) taken_.insert(t.name);
    for (const ir::Node& n : graph.nodes) {
      taken_.insert(n.name);
      for (const auto& s : n.inputs) taken_.insert(s);
      for (const auto& s : n.outputs) taken_.insert(s);
    }
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  std::vector<ir::Node>& nodes() { return nodes_; }
  std::map<std::string, QValue>& quantized() { return quantized_; }

  // Scale / zero-point initializers for `value` quantized over [lo, hi].
  absl::StatusOr<QValue> MakeQValue(const std::string& value, double lo, double hi,
                                    const ir::Provenance& prov) {
    QValue qv;
    std::tie(qv.s, qv.zp) = ChooseParams(lo, hi, act_type_);
    qv.q = Fresh(value + "_quantized");
    qv.scale = Fresh(value + "_scale");
    qv.zero_point = Fresh(value + "_zero_point");
    RETURN_IF_ERROR(graph_.AddInitializer(MakeTensor(qv.scale, DType::kF32, {}, &qv.s, 4, prov)));
    const uint8_t zb = static_cast<uint8_t>(qv.zp);  // two's complement for i8
    RETURN_IF_ERROR(graph_.AddInitializer(MakeTensor(qv.zero_point, act_type_, {}, &zb, 1, prov)));
    return qv;
  }

  // The quantized form of float `value`, adding QuantizeLinear on first use.
  absl::StatusOr<QValue> Quantized(const std::string& value,
                                   const calibration::CalibrationTable& table,
                                   const ir::Provenance& prov) {
    auto it = quantized_.find(value);
    if (it != quantized_.end()) return it->second;
    auto r = TableRange(table, value);
    if (!r) return absl::InternalError("no range for '" + value + "' after planning");
    ASSIGN_OR_RETURN(QValue qv, MakeQValue(value, r->first, r->second, prov));
    ir::Node q;
    q.name = Fresh(value + "_QuantizeLinear");
    q.op_type = "QuantizeLinear";
    q.inputs = {value, qv.scale, qv.zero_point};
    q.outputs = {qv.q};
    q.provenance = prov;
    nodes_.push_back(std::move(q));
    ++report_.quantize_nodes;
    quantized_[value] = qv;
    return qv;
  }

  void Dequantize(const QValue& qv, const std::string& out, const ir::Provenance& prov) {
    ir::Node d;
    d.name = Fresh(out + "_DequantizeLinear");
    d.op_type = "DequantizeLinear";
    d.inputs = {qv.q, qv.scale, qv.zero_point};
    d.outputs = {out};
    d.provenance = prov;
    nodes_.push_back(std::move(d));
    ++report_.dequantize_nodes;
  }

  // The standard ONNX node for a fused activation (reading `in`).
  absl::Status EmitActivation(const Plan& plan, const std::string& in,
                              const std::string& out, const ir::Node& origin) {
    ir::Node a;
    a.name = Fresh(origin.name + "_" + plan.activation);
    a.op_type = plan.activation;
    a.inputs = {in};
    a.outputs = {out};
    a.provenance = origin.provenance;
    if (plan.activation == "LeakyRelu" && plan.act_params.size() == 1) {
      a.attributes["alpha"] = FloatAttribute(plan.act_params[0]);
    } else if (plan.activation == "Clip" && plan.act_params.size() == 2 && opset_ < 11) {
      a.attributes["min"] = FloatAttribute(plan.act_params[0]);
      a.attributes["max"] = FloatAttribute(plan.act_params[1]);
    } else if (plan.activation == "Clip" && plan.act_params.size() == 2) {
      // Opset >= 11 Clip takes its bounds as inputs.
      const std::string lo = Fresh(origin.name + "_clip_min");
      const std::string hi = Fresh(origin.name + "_clip_max");
      RETURN_IF_ERROR(graph_.AddInitializer(
          MakeTensor(lo, DType::kF32, {}, &plan.act_params[0], 4, origin.provenance)));
      RETURN_IF_ERROR(graph_.AddInitializer(
          MakeTensor(hi, DType::kF32, {}, &plan.act_params[1], 4, origin.provenance)));
      a.inputs = {in, lo, hi};
    } else if (!plan.act_params.empty()) {
      return absl::UnimplementedError(Describe(origin) + ": activation " + plan.activation +
                                      " with parameters; supported: Relu, Clip, LeakyRelu, "
                                      "HardSwish, Sigmoid");
    }
    nodes_.push_back(std::move(a));
    return absl::OkStatus();
  }

 private:
  ir::Graph& graph_;
  DType act_type_;
  int64_t opset_;
  StaticQuantReport& report_;
  std::unordered_set<std::string> taken_;
  std::vector<ir::Node> nodes_;
  std::map<std::string, QValue> quantized_;
};

absl::Status EmitConv(const ir::Graph& graph, const ir::Node& node, const Plan& plan,
                      const calibration::CalibrationTable& table, bool needs_float,
                      Emitter& em, ir::Graph& out_graph) {
  ASSIGN_OR_RETURN(QValue qx, em.Quantized(node.inputs[0], table, node.provenance));
  const ir::Tensor& w = *FindConstant(graph, node.inputs[1]);
  const int64_t m = w.dims[0];
  int64_t cols = 1;
  for (size_t d = 1; d < w.dims.size(); ++d) cols *= w.dims[d];
  ASSIGN_OR_RETURN(quant::QuantizedMatrix qw, QuantizeRows(FloatsOf(w), m, cols, w.name));
  const std::string wq = em.Fresh(w.name + "_quantized");
  const std::string ws = em.Fresh(w.name + "_scale");
  const std::string wz = em.Fresh(w.name + "_zero_point");
  RETURN_IF_ERROR(out_graph.AddInitializer(
      MakeTensor(wq, DType::kI8, w.dims, qw.q.data(), qw.q.size(), w.provenance)));
  RETURN_IF_ERROR(out_graph.AddInitializer(
      MakeTensor(ws, DType::kF32, {m}, qw.scale.data(), 4 * qw.scale.size(), w.provenance)));
  const int8_t zero = 0;
  RETURN_IF_ERROR(out_graph.AddInitializer(MakeTensor(wz, DType::kI8, {}, &zero, 1, w.provenance)));
  ASSIGN_OR_RETURN(QValue qy, em.MakeQValue(plan.quant_value, plan.out_lo, plan.out_hi,
                                            node.provenance));
  ir::Node c;
  c.name = node.name;
  c.op_type = "QLinearConv";
  c.attributes = node.attributes;
  c.attributes.erase("activation");
  c.attributes.erase("activation_params");
  c.inputs = {qx.q, qx.scale, qx.zero_point, wq, ws, wz, qy.scale, qy.zero_point};
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const ir::Tensor& b = *FindConstant(graph, node.inputs[2]);
    const std::vector<float> bf = FloatsOf(b);
    std::vector<int32_t> bq(m);
    for (int64_t i = 0; i < m; ++i) bq[i] = QuantizeBias(bf[i], qx.s * qw.scale[i]);
    const std::string bn = em.Fresh(b.name + "_quantized");
    RETURN_IF_ERROR(out_graph.AddInitializer(
        MakeTensor(bn, DType::kI32, {m}, bq.data(), 4 * bq.size(), b.provenance)));
    c.inputs.push_back(bn);
  }
  c.outputs = {qy.q};
  c.provenance = node.provenance;
  em.nodes().push_back(std::move(c));
  if (plan.act == ActMode::kFloatAfter) {
    const std::string pre = em.Fresh(plan.quant_value);
    em.Dequantize(qy, pre, node.provenance);
    return em.EmitActivation(plan, pre, node.outputs[0], node);
  }
  em.quantized()[node.outputs[0]] = qy;
  if (needs_float) em.Dequantize(qy, node.outputs[0], node.provenance);
  return absl::OkStatus();
}

absl::Status EmitLinear(const ir::Graph& graph, const ir::Node& node, const Plan& plan,
                        const calibration::CalibrationTable& table, Emitter& em,
                        ir::Graph& out_graph) {
  ASSIGN_OR_RETURN(QValue qx, em.Quantized(node.inputs[0], table, node.provenance));
  const ir::Tensor& w = *FindConstant(graph, node.inputs[1]);
  const std::vector<float> wf = FloatsOf(w);
  const int64_t k = plan.trans_b ? w.dims[1] : w.dims[0];
  const int64_t n = plan.trans_b ? w.dims[0] : w.dims[1];
  // Rows = output columns n, as [N, K].
  std::vector<float> rows(wf.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) rows[i * k + j] = plan.trans_b ? wf[i * k + j] : wf[j * n + i];
  }
  ASSIGN_OR_RETURN(quant::QuantizedMatrix qw, QuantizeRows(rows, n, k, w.name));
  std::vector<int8_t> kn(wf.size());  // MatMulInteger's B is [K, N]
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) kn[j * n + i] = qw.q[i * k + j];
  }
  const std::string wq = em.Fresh(w.name + "_quantized");
  RETURN_IF_ERROR(out_graph.AddInitializer(
      MakeTensor(wq, DType::kI8, {k, n}, kn.data(), kn.size(), w.provenance)));
  std::vector<float> mult(n);
  for (int64_t i = 0; i < n; ++i) mult[i] = qx.s * qw.scale[i];
  const std::string ms = em.Fresh(w.name + "_requant_scale");
  RETURN_IF_ERROR(out_graph.AddInitializer(
      MakeTensor(ms, DType::kF32, {n}, mult.data(), 4 * mult.size(), w.provenance)));

  auto add = [&](const std::string& suffix, const std::string& op,
                 std::vector<std::string> inputs, const std::string& out) {
    ir::Node x;
    x.name = em.Fresh(node.name + suffix);
    x.op_type = op;
    x.inputs = std::move(inputs);
    x.outputs = {out};
    x.provenance = node.provenance;
    em.nodes().push_back(std::move(x));
    return &em.nodes().back();
  };
  const std::string& y = node.outputs[0];
  std::string acc = em.Fresh(y + "_acc");
  add("_MatMulInteger", "MatMulInteger", {qx.q, wq, qx.zero_point}, acc);
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const ir::Tensor& b = *FindConstant(graph, node.inputs[2]);
    const std::vector<float> bf = FloatsOf(b);
    std::vector<int32_t> bq(n);
    for (int64_t i = 0; i < n; ++i) bq[i] = QuantizeBias(bf[bf.size() == 1 ? 0 : i], mult[i]);
    const std::string bn = em.Fresh(b.name + "_quantized");
    RETURN_IF_ERROR(out_graph.AddInitializer(
        MakeTensor(bn, DType::kI32, {n}, bq.data(), 4 * bq.size(), b.provenance)));
    const std::string accb = em.Fresh(y + "_acc_bias");
    add("_bias", "Add", {acc, bn}, accb);
    acc = accb;
  }
  const std::string accf = em.Fresh(y + "_acc_float");
  add("_Cast", "Cast", {acc}, accf)->attributes["to"] = ir::Attribute::Int(1);  // FLOAT
  if (plan.act == ActMode::kNone) {
    add("_scale", "Mul", {accf, ms}, y);
    return absl::OkStatus();
  }
  const std::string pre = em.Fresh(y + "_preact");
  add("_scale", "Mul", {accf, ms}, pre);
  return em.EmitActivation(plan, pre, y, node);
}

}  // namespace

absl::StatusOr<StaticQuantReport> QuantizeStatic(ir::Model& model,
                                                 const calibration::CalibrationTable& table,
                                                 const StaticQuantOptions& options) {
  ir::Graph& graph = model.graph;
  if (options.activation_dtype != DType::kU8 && options.activation_dtype != DType::kI8) {
    return absl::InvalidArgumentError(
        "activation dtype " + std::string(ir::DTypeName(options.activation_dtype)) +
        " is not supported; supported: u8, i8");
  }
  std::optional<support::Regex> keep_re;
  if (!options.keep_float_regex.empty()) {
    auto re = support::Regex::Compile(options.keep_float_regex);
    if (!re.ok()) {
      return absl::InvalidArgumentError("keep_float_regex '" + options.keep_float_regex +
                                        "' is not a valid ECMAScript regex: " +
                                        std::string(re.status().message()));
    }
    keep_re = *std::move(re);
  }
  auto opset_it = model.opset_imports.find("");
  const int64_t opset = opset_it == model.opset_imports.end() ? 0 : opset_it->second;
  // The integer operators first exist at opset 10. An opset-9 graph is
  // raised to 10 (raise_opset_10.h) when that changes no node's meaning;
  // older ones do not reach here from ONNX (the importer upgrades them).
  const bool raise = opset == 9;
  const std::string hazard = raise ? OpsetTenHazard(graph) : "";
  if (opset < 9 || !hazard.empty()) {
    return absl::FailedPreconditionError(
        "static quantization needs default-domain opset >= 10 (QuantizeLinear, "
        "QLinearConv, MatMulInteger); the model imports opset " + std::to_string(opset) +
        (hazard.empty() ? std::string(", and only opset 9 is raised")
                        : ", and raising it would change " + hazard));
  }
  ASSIGN_OR_RETURN(std::vector<size_t> order, graph.TopologicalOrder());
  const ir::UseDefIndex index = graph.BuildUseDefIndex();

  // Plan: which candidates become integer. An input without a table range
  // is still fine when an integer Conv produces it quantized.
  StaticQuantReport report;
  std::vector<Plan> plans(graph.nodes.size());
  std::set<std::string> quantized_outputs;
  for (size_t i : order) {
    const ir::Node& node = graph.nodes[i];
    Plan plan = PlanNode(graph, index, node, table, keep_re);
    if (plan.kind != Kind::kFloat && !plan.reason.empty()) {
      if (quantized_outputs.count(node.inputs[0])) {
        plan.reason.clear();
      } else {
        plan.kind = Kind::kFloat;
      }
    }
    if (plan.kind == Kind::kConv && plan.act != ActMode::kFloatAfter) {
      quantized_outputs.insert(node.outputs[0]);
    }
    const bool candidate = plan.kind != Kind::kFloat || !plan.reason.empty();
    if (candidate) {
      std::string what = plan.kind == Kind::kConv ? "QLinearConv"
                         : plan.kind == Kind::kLinear ? "MatMulInteger"
                                                      : "float: " + plan.reason;
      if (plan.kind != Kind::kFloat && plan.act == ActMode::kFloatAfter) {
        what += "+float " + plan.activation;
      }
      report.decisions.push_back({node.name, node.op_type, what});
      ++(plan.kind == Kind::kFloat ? report.float_nodes : report.integer_nodes);
    }
    plans[i] = std::move(plan);
  }
  if (report.integer_nodes == 0) return report;

  // A quantized output also needs its float form when a float node, a
  // non-X input, or a graph output reads it.
  auto needs_float = [&](const std::string& value) {
    if (IsGraphOutput(graph, value)) return true;
    auto it = index.consumers.find(value);
    if (it == index.consumers.end()) return false;
    for (size_t c : it->second) {
      const ir::Node& reader = graph.nodes[c];
      if (plans[c].kind == Kind::kFloat) return true;
      for (size_t j = 1; j < reader.inputs.size(); ++j) {
        if (reader.inputs[j] == value) return true;
      }
    }
    return false;
  };

  // Emit into a copy so an error leaves `model` untouched.
  ir::Graph out = graph;
  Emitter em(out, options.activation_dtype, std::max<int64_t>(opset, 10), report);
  std::set<std::string> replaced_weights;
  for (size_t i : order) {
    const ir::Node& node = graph.nodes[i];
    const Plan& plan = plans[i];
    if (plan.kind == Kind::kFloat) {
      em.nodes().push_back(node);
      continue;
    }
    for (size_t j = 1; j < node.inputs.size(); ++j) replaced_weights.insert(node.inputs[j]);
    if (plan.kind == Kind::kConv) {
      RETURN_IF_ERROR(Annotate(
          EmitConv(graph, node, plan, table, needs_float(node.outputs[0]), em, out),
          Describe(node)));
    } else {
      RETURN_IF_ERROR(Annotate(EmitLinear(graph, node, plan, table, em, out),
                               Describe(node)));
    }
  }
  out.nodes = std::move(em.nodes());
  // Drop float weights nothing reads any more, and shapes of vanished values.
  std::set<std::string> read, produced;
  for (const ir::Node& n : out.nodes) {
    read.insert(n.inputs.begin(), n.inputs.end());
    produced.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const std::string& name : replaced_weights) {
    if (!read.count(name) && !IsGraphOutput(out, name)) out.RemoveInitializer(name);
  }
  for (auto it = out.value_info.begin(); it != out.value_info.end();) {
    it = produced.count(it->first) ? std::next(it) : out.value_info.erase(it);
  }
  if (raise) {
    RETURN_IF_ERROR(RaiseOpset9To10(out));
    report.opset_raised_from = opset;
  }
  // Outer-scope readers inside subgraphs are covered by needs_float above.
  graph = std::move(out);
  if (raise) model.opset_imports[""] = 10;
  return report;
}

}  // namespace slimpack::passes
