// quantize-static (see quantize_static.h): plans every Conv/Gemm/MatMul
// first (integer or float, with the reason), then emits the new node list
// in one sweep so no half-rewritten graph is ever left behind.
#include "passes/quantize_static.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <unordered_set>
#include <utility>

#include "passes/fused_kernels.h"
#include "passes/graph_utils.h"
#include "passes/quant/rtn.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

using ir::DType;

enum class Kind { kFloat, kConv, kLinear };

// How a fused activation is carried out.
enum class ActMode { kNone, kFolded, kFloatAfter };

struct Plan {
  Kind kind = Kind::kFloat;
  std::string reason;        // for kFloat
  ActMode act = ActMode::kNone;
  std::string activation;    // op type of the fused activation
  std::vector<float> act_params;
  // kConv: the value the QLinearConv writes (the node output when folded,
  // the pre-activation table entry otherwise) and its range.
  std::string quant_value;
  double out_lo = 0, out_hi = 0;
  bool trans_b = false;      // kLinear
};

// Scale and zero point of one quantized activation value.
struct QValue {
  std::string q;           // quantized value name
  std::string scale;       // f32 scalar initializer
  std::string zero_point;  // u8/i8 scalar initializer
  float s = 1;
  int32_t zp = 0;
};

int32_t QMin(DType t) { return t == DType::kU8 ? 0 : -128; }
int32_t QMax(DType t) { return t == DType::kU8 ? 255 : 127; }

// Activation scale/zero point for the range [lo, hi] widened to hold 0.
std::pair<float, int32_t> ChooseParams(double lo, double hi, DType t) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  const double span = hi - lo;
  // An all-zero tensor: any scale represents it; zero point 0 is exact.
  if (!(span > 0) || !std::isfinite(span)) return {1.0f, 0};
  const float s = static_cast<float>(span / (QMax(t) - QMin(t)));
  const double z = std::nearbyint(QMin(t) - lo / static_cast<double>(s));
  return {s, static_cast<int32_t>(std::clamp<double>(z, QMin(t), QMax(t)))};
}

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

bool IsOp(const ir::Node& n, const char* op, bool fused_ok) {
  if (n.domain.empty() || n.domain == "ai.onnx") return n.op_type == op;
  return fused_ok && n.domain == kSlimpackDomain && n.op_type == std::string("Fused") + op;
}

std::optional<std::pair<double, double>> TableRange(
    const calibration::CalibrationTable& table, const std::string& value) {
  auto it = table.tensors.find(value);
  if (it == table.tensors.end() || it->second.range.elements == 0) return std::nullopt;
  const auto& r = it->second.range;
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi)) return std::nullopt;
  return std::make_pair(r.lo, r.hi);
}

// The table entry written by the node just before the activation in a
// fused node's provenance ([conv, bn, act] -> bn's output).
std::optional<std::string> PreActivationValue(const calibration::CalibrationTable& table,
                                              const ir::Node& node) {
  const auto& src = node.provenance.source_nodes;
  if (src.size() < 2) return std::nullopt;
  const std::string& producer = src[src.size() - 2];
  for (const auto& [name, entry] : table.tensors) {
    if (entry.producer == producer) return name;
  }
  return std::nullopt;
}

bool KeptByRegex(const ir::Node& node, const std::optional<std::regex>& re) {
  if (!re) return false;
  if (std::regex_search(node.name, *re)) return true;
  for (const auto& s : node.provenance.source_nodes) {
    if (std::regex_search(s, *re)) return true;
  }
  return false;
}

// Decides the activation handling of a Conv/FusedConv and its output range.
void PlanActivation(const ir::Node& node, const calibration::CalibrationTable& table,
                    Plan& plan) {
  const ir::Attribute* act = node.FindAttribute("activation");
  const ir::Attribute* params = node.FindAttribute("activation_params");
  plan.activation = act != nullptr ? act->s : "";
  if (params != nullptr) plan.act_params = params->floats;
  const bool clip_folds = plan.activation == "Clip" && plan.act_params.size() == 2 &&
                          plan.act_params[0] <= 0 && plan.act_params[1] >= 0;
  if (plan.activation.empty() || plan.activation == "Relu" || clip_folds) {
    plan.act = plan.activation.empty() ? ActMode::kNone : ActMode::kFolded;
    auto r = TableRange(table, node.outputs[0]);
    if (!r) {
      plan.reason = "no calibrated range for output '" + node.outputs[0] + "'";
      return;
    }
    plan.quant_value = node.outputs[0];
    plan.out_lo = r->first;
    plan.out_hi = r->second;
    if (plan.activation == "Relu") plan.out_lo = 0;
    if (clip_folds) {
      plan.out_lo = std::max<double>(plan.out_lo, plan.act_params[0]);
      plan.out_hi = std::min<double>(plan.out_hi, plan.act_params[1]);
    }
    plan.kind = Kind::kConv;
    return;
  }
  auto pre = PreActivationValue(table, node);
  auto r = pre ? TableRange(table, *pre) : std::nullopt;
  if (!r) {
    plan.reason = "activation " + plan.activation +
                  " has no integer form and the table has no pre-activation range";
    return;
  }
  plan.act = ActMode::kFloatAfter;
  plan.quant_value = *pre;
  plan.out_lo = r->first;
  plan.out_hi = r->second;
  plan.kind = Kind::kConv;
}

// An activation op reading `value`: quantizing `value` would put Q/DQ
// between the Conv and its activation.
std::optional<std::string> UnfusedActivation(const ir::Graph& graph,
                                             const ir::UseDefIndex& index,
                                             const std::string& value) {
  static const char* const kActivations[] = {"Relu", "Clip", "LeakyRelu", "HardSwish",
                                             "Sigmoid", "HardSigmoid", "PRelu", "Elu"};
  auto it = index.consumers.find(value);
  if (it == index.consumers.end()) return std::nullopt;
  for (size_t c : it->second) {
    for (const char* op : kActivations) {
      if (IsOp(graph.nodes[c], op, false)) return std::string(op);
    }
  }
  return std::nullopt;
}

Plan PlanNode(const ir::Graph& graph, const ir::UseDefIndex& index, const ir::Node& node,
              const calibration::CalibrationTable& table,
              const std::optional<std::regex>& keep_re) {
  Plan plan;
  const bool conv = IsOp(node, "Conv", true);
  const bool gemm = IsOp(node, "Gemm", true);
  const bool matmul = IsOp(node, "MatMul", false);
  if (!conv && !gemm && !matmul) return plan;
  if (KeptByRegex(node, keep_re)) {
    plan.reason = "kept float by keep_float_regex";
    return plan;
  }
  if (node.inputs.size() < 2 || node.outputs.size() != 1) {
    plan.reason = "unexpected input/output count";
    return plan;
  }
  // Byte sizes are checked here too: the pass may run on unverified graphs.
  auto f32_constant = [&](const std::string& name) -> const ir::Tensor* {
    const ir::Tensor* t = FindConstant(graph, name);
    if (t == nullptr || t->dtype != DType::kF32) return nullptr;
    auto bytes = t->ExpectedBytes();
    return bytes.ok() && *bytes == t->data.size() ? t : nullptr;
  };
  const ir::Tensor* w = f32_constant(node.inputs[1]);
  if (w == nullptr) {
    plan.reason = "weight '" + node.inputs[1] + "' is not a constant f32 initializer";
    return plan;
  }
  const std::string bias = node.inputs.size() > 2 ? node.inputs[2] : "";
  const ir::Tensor* b = bias.empty() ? nullptr : f32_constant(bias);
  if (!bias.empty() && b == nullptr) {
    plan.reason = "bias '" + bias + "' is not a constant f32 initializer";
    return plan;
  }
  if (conv) {
    if (w->dims.size() < 3) {
      plan.reason = "weight rank below 3";
      return plan;
    }
    if (b != nullptr && b->data.size() != sizeof(float) * static_cast<uint64_t>(w->dims[0])) {
      plan.reason = "bias does not have one value per output channel";
      return plan;
    }
    if (auto act = UnfusedActivation(graph, index, node.outputs[0])) {
      plan.reason = "output feeds an unfused " + *act + " (run fuse-conv-activation first)";
      return plan;
    }
    PlanActivation(node, table, plan);
  } else {
    if (w->dims.size() != 2) {
      plan.reason = "weight is not 2-D";
      return plan;
    }
    if (gemm) {
      plan.trans_b = IntAttrOr(node, "transB", 0) != 0;
      const int64_t n = plan.trans_b ? w->dims[0] : w->dims[1];
      auto belems = b != nullptr ? b->NumElements() : absl::StatusOr<uint64_t>(0);
      if (IntAttrOr(node, "transA", 0) != 0 || FloatAttrOr(node, "alpha", 1) != 1.0f ||
          (b != nullptr && FloatAttrOr(node, "beta", 1) != 1.0f)) {
        plan.reason = "transA, alpha or beta differ from 0, 1, 1";
        return plan;
      }
      if (b != nullptr && (!belems.ok() || (*belems != 1 && *belems != uint64_t(n)) ||
                           (b->dims.size() == 2 && b->dims[0] != 1))) {
        plan.reason = "bias is neither [N] nor a scalar";
        return plan;
      }
      const ir::Attribute* act = node.FindAttribute("activation");
      plan.activation = act != nullptr ? act->s : "";
      if (const ir::Attribute* p = node.FindAttribute("activation_params")) {
        plan.act_params = p->floats;
      }
      plan.act = plan.activation.empty() ? ActMode::kNone : ActMode::kFloatAfter;
    }
    plan.kind = Kind::kLinear;
  }
  if (plan.kind != Kind::kFloat && !TableRange(table, node.inputs[0])) {
    // The input may still be quantized by an integer producer; the caller
    // checks that case before settling on float.
    plan.reason = "no calibrated range for input '" + node.inputs[0] + "'";
  }
  return plan;
}

// Int8 symmetric per-row quantization of row-major [rows, cols] through
// quant::QuantizeRtn (bits 8, one group per row).
absl::StatusOr<quant::QuantizedMatrix> QuantizeRows(const std::vector<float>& w,
                                                    int64_t rows, int64_t cols,
                                                    const std::string& name) {
  quant::Scheme scheme;
  scheme.bits = 8;
  scheme.group_size = 0;
  scheme.symmetric = true;
  quant::RtnOptions options;
  options.restricted_range = true;  // spec: s_w = max|w| / 127, codes in [-127, 127]
  auto q = quant::QuantizeRtn(w.data(), rows, cols, scheme, options);
  if (!q.ok()) {
    return absl::Status(q.status().code(),
                        "weight '" + name + "': " + std::string(q.status().message()));
  }
  return q;
}

std::vector<float> FloatsOf(const ir::Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

int32_t QuantizeBias(float b, float scale) {
  const double q = std::nearbyint(static_cast<double>(b) / static_cast<double>(scale));
  if (std::isnan(q)) return 0;  // 0 / 0 when both scales underflow
  return static_cast<int32_t>(std::clamp<double>(q, std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::max()));
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
  std::optional<std::regex> keep_re;
  if (!options.keep_float_regex.empty()) {
    try {
      keep_re.emplace(options.keep_float_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("keep_float_regex '" + options.keep_float_regex +
                                        "' is not a valid ECMAScript regex: " + e.what());
    }
  }
  auto opset_it = model.opset_imports.find("");
  const int64_t opset = opset_it == model.opset_imports.end() ? 0 : opset_it->second;
  if (opset < 10) {
    return absl::FailedPreconditionError(
        "static quantization needs default-domain opset >= 10 (QuantizeLinear, "
        "QLinearConv, MatMulInteger); the model imports opset " + std::to_string(opset));
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
  Emitter em(out, options.activation_dtype, opset, report);
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
  // Outer-scope readers inside subgraphs are covered by needs_float above.
  graph = std::move(out);
  return report;
}

}  // namespace slimpack::passes
