// fuse-silu (see fuse_silu.h).
#include "passes/fuse/fuse_silu.h"

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {

absl::Status FuseSiluPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& mul = graph.nodes[n];
    if (dead[n] || !mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2) {
      continue;
    }
    // Find a Sigmoid operand (single use or not: a multi-use one is a near
    // miss worth reporting).
    std::optional<size_t> sig_i;
    std::string other;
    for (int side = 0; side < 2 && !sig_i; ++side) {
      std::optional<size_t> p = ProducerIndex(index, mul.inputs[side]);
      if (p && !dead[*p] && graph.nodes[*p].domain.empty() &&
          graph.nodes[*p].op_type == "Sigmoid") {
        sig_i = p;
        other = mul.inputs[1 - side];
      }
    }
    if (!sig_i) continue;
    const ir::Node& sig = graph.nodes[*sig_i];
    if (sig.inputs.empty() || sig.inputs[0] != other) {
      context.Log(Describe(mul) + ": not fused, the other operand '" + other +
                  "' is not the Sigmoid's input");
      continue;
    }
    if (!HasSingleUse(graph, index, sig.outputs[0])) {
      context.Log(Describe(mul) + ": not fused, Sigmoid output '" + sig.outputs[0] +
                  "' has other readers");
      continue;
    }
    context.stats().nodes_matched++;
    ir::Node fused;
    fused.name = mul.name;
    fused.domain = runtime::kSlimpackDomain;
    fused.op_type = "SiLU";
    fused.inputs = {other};
    fused.outputs = {mul.outputs[0]};
    fused.provenance = ir::Provenance::Merge(sig.provenance, mul.provenance);
    context.stats().bytes_saved += StaticByteSize(graph, sig.outputs[0]);
    graph.value_info.erase(sig.outputs[0]);
    dead[*sig_i] = true;
    graph.nodes[n] = std::move(fused);
    context.stats().nodes_rewritten++;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
