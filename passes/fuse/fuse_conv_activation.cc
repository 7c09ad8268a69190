// fuse-conv-activation (see fuse_conv_activation.h).
#include "passes/fuse/fuse_conv_activation.h"

#include <cmath>
#include <set>

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

bool IsActivation(const ir::Node& node) {
  static const std::set<std::string> kActivations = {
      "Relu", "Sigmoid", "HardSwish", "LeakyRelu", "Clip"};
  // fuse-hardswish emits slimpack.HardSwish below opset 14: same function.
  if (node.domain == runtime::kSlimpackDomain) return node.op_type == "HardSwish";
  return node.domain.empty() && kActivations.count(node.op_type) > 0;
}

// The activation_params of `act`, or why they cannot be read.
std::string ActivationParams(const ir::Graph& graph, const ir::Node& act,
                             std::vector<float>& params) {
  params.clear();
  if (act.op_type == "LeakyRelu") params.push_back(FloatAttrOr(act, "alpha", 0.01f));
  if (act.op_type != "Clip") return "";
  float lo = FloatAttrOr(act, "min", -INFINITY);
  float hi = FloatAttrOr(act, "max", INFINITY);
  for (size_t i = 1; i < act.inputs.size() && i < 3; ++i) {
    if (act.inputs[i].empty()) continue;
    std::optional<double> v = ConstantScalar(graph, act.inputs[i]);
    if (!v) return "Clip bound '" + act.inputs[i] + "' is not a scalar constant";
    (i == 1 ? lo : hi) = static_cast<float>(*v);
  }
  params = {lo, hi};
  return "";
}

}  // namespace

absl::Status FuseConvActivationPass::Run(ir::Graph& graph,
                                         PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    const ir::Node& act = graph.nodes[n];
    if (!IsActivation(act) || act.inputs.empty()) continue;
    std::optional<size_t> p = ProducerIndex(index, act.inputs[0]);
    if (!p || dead[*p]) continue;
    ir::Node& prod = graph.nodes[*p];
    if (!prod.domain.empty() || (prod.op_type != "Conv" && prod.op_type != "Gemm")) {
      continue;  // not a candidate: nothing worth logging
    }
    std::string why;
    std::vector<float> params;
    if (!HasSingleUse(graph, index, act.inputs[0])) {
      why = "output of " + Describe(prod) + " has other readers";
    } else {
      why = ActivationParams(graph, act, params);
    }
    if (!why.empty()) {
      context.Log(Describe(act) + ": not fused, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    context.stats().bytes_saved += StaticByteSize(graph, prod.outputs[0]);
    graph.value_info.erase(prod.outputs[0]);
    prod.domain = runtime::kSlimpackDomain;
    prod.op_type = prod.op_type == "Conv" ? "FusedConv" : "FusedGemm";
    prod.attributes["activation"] = ir::Attribute::String(act.op_type);
    // Parameterless activations carry no activation_params (the kernel
    // defaults it to empty), so printed graphs stay unambiguous.
    if (!params.empty()) {
      prod.attributes["activation_params"] = ir::Attribute::Floats(params);
    }
    prod.outputs.resize(1);
    prod.outputs[0] = act.outputs[0];
    prod.provenance = ir::Provenance::Merge(prod.provenance, act.provenance);
    context.stats().nodes_rewritten++;
    dead[n] = true;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
