// RaiseDefaultOpsetTo21 (see onnx_opset21.h).
#include "export/onnx_opset21.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "export/onnx_graph_edit.h"
#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

// Reductions whose axes moved from an attribute to an input in opset 18.
const std::set<std::string>& AxesToInput() {
  static const std::set<std::string> ops = {
      "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",     "ReduceL1",
      "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return ops;
}

// Same meaning at 13..17 and at 21 for the tensors these graphs carry:
// later versions only add types (int4, float8, bfloat16), or attributes
// whose defaults keep the old behaviour (Pad/Resize/Split/AveragePool at
// 18-19, Cast's `saturate` only for float8 targets, DequantizeLinear's
// `block_size` 0 = per tensor / per axis). GroupNormalization (changed at
// 21) and control flow are not here.
const std::set<std::string>& Unchanged() {
  static const std::set<std::string> ops = {
      "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast",
      "Ceil", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Cos", "CumSum",
      "DequantizeLinear", "Div", "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten",
      "Floor", "Gather", "GatherElements", "GatherND", "Gemm", "GlobalAveragePool", "Greater",
      "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "LayerNormalization",
      "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min",
      "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "QuantizeLinear", "Range", "Reciprocal",
      "ReduceSum", "Relu", "Reshape", "Resize", "Shape", "Sigmoid", "Sign", "Sin", "Slice",
      "Softmax", "Softplus", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "TopK",
      "Transpose", "Trilu", "Unsqueeze", "Where", "Xor"};
  return ops;
}

bool DefaultDomain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

}  // namespace

absl::Status RaiseDefaultOpsetTo21(ir::Model& model, const std::string& why) {
  auto it = model.opset_imports.find("");
  const int64_t opset = it == model.opset_imports.end() ? 17 : it->second;
  if (opset >= kBlockedDequantizeOpset) return absl::OkStatus();
  if (opset < 13) {
    return absl::FailedPreconditionError(
        why + " need opset 21; raising the model from opset " + std::to_string(opset) +
        " is done from opset 13 only");
  }
  // Check everything before the first change.
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    const ir::Node& n = model.graph.nodes[i];
    if (!DefaultDomain(n)) continue;
    const ir::Attribute* mode = n.FindAttribute("coordinate_transformation_mode");
    const bool gone_mode =
        n.op_type == "Resize" && mode != nullptr && mode->s == "tf_half_pixel_for_nn";
    if (n.HasSubgraphs() || gone_mode ||
        (!Unchanged().count(n.op_type) && !AxesToInput().count(n.op_type))) {
      return absl::UnimplementedError(
          "node " + ir::DescribeNode(n, i) + ": " + why + " need opset 21, and raising " +
          n.op_type + (gone_mode ? " with coordinate_transformation_mode tf_half_pixel_for_nn" : "") +
          " from opset " + std::to_string(opset) +
          " is not implemented (ONNX 1.12's version converter stops at 17)");
    }
  }
  GraphEditor ed(model.graph);
  for (ir::Node& n : model.graph.nodes) {
    if (!DefaultDomain(n)) continue;
    if (n.op_type == "Split" && (n.inputs.size() < 2 || n.inputs[1].empty()) &&
        n.FindAttribute("num_outputs") == nullptr) {
      n.attributes["num_outputs"] = ir::Attribute::Int(static_cast<int64_t>(n.outputs.size()));
      continue;
    }
    if (!AxesToInput().count(n.op_type)) continue;
    auto axes = n.attributes.find("axes");
    if (axes == n.attributes.end()) continue;  // all axes: the same at 18
    const std::vector<int64_t> values = axes->second.ints;
    ASSIGN_OR_RETURN(std::string name,
                     ed.AddI64(n.name + "_axes", {static_cast<int64_t>(values.size())}, values,
                               n.provenance));
    n.attributes.erase(axes);
    n.inputs.resize(1);
    n.inputs.push_back(name);
  }
  model.opset_imports[""] = kBlockedDequantizeOpset;
  model.ir_version = std::max<int64_t>(model.ir_version, 10);  // opset 21 needs IR 10
  return absl::OkStatus();
}

}  // namespace slimpack::onnx_export
