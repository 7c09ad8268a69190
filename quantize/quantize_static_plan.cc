// quantize-static planning: for every Conv/Gemm/MatMul, whether it can
// become integer (and how its fused activation is carried out) or stays float
// and why. Decided before anything is emitted, so the rewrite in
// quantize_static.cc never has to undo half a graph.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "quantize/quantize_static_internal.h"
#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes::static_quant_internal {

using ir::DType;

std::optional<std::pair<double, double>> TableRange(
    const calibration::CalibrationTable& table, const std::string& value) {
  auto it = table.tensors.find(value);
  if (it == table.tensors.end() || it->second.range.elements == 0) return std::nullopt;
  const auto& r = it->second.range;
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi)) return std::nullopt;
  return std::make_pair(r.lo, r.hi);
}

namespace {

bool IsOp(const ir::Node& n, const char* op, bool fused_ok) {
  if (n.domain.empty() || n.domain == "ai.onnx") return n.op_type == op;
  return fused_ok && n.domain == runtime::kSlimpackDomain && n.op_type == std::string("Fused") + op;
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

bool KeptByRegex(const ir::Node& node, const std::optional<support::Regex>& re) {
  if (!re) return false;
  if (re->Search(node.name)) return true;
  for (const auto& s : node.provenance.source_nodes) {
    if (re->Search(s)) return true;
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

}  // namespace

Plan PlanNode(const ir::Graph& graph, const ir::UseDefIndex& index, const ir::Node& node,
              const calibration::CalibrationTable& table,
              const std::optional<support::Regex>& keep_re) {
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

}  // namespace slimpack::passes::static_quant_internal
