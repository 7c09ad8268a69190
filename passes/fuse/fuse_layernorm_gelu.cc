// fuse-layernorm-gelu (see fuse_layernorm_gelu.h).
#include "passes/fuse/fuse_layernorm_gelu.h"

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {

absl::Status FuseLayerNormGeluPass::Run(ir::Graph& graph,
                                        PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    ir::Node& gelu = graph.nodes[n];
    bool is_gelu = gelu.op_type == "Gelu" &&
                   (gelu.domain.empty() || gelu.domain == runtime::kSlimpackDomain);
    if (!is_gelu || gelu.inputs.size() != 1) continue;
    std::optional<size_t> p = ProducerIndex(index, gelu.inputs[0]);
    if (!p || dead[*p]) continue;
    ir::Node& ln = graph.nodes[*p];
    if (!ln.domain.empty() || ln.op_type != "LayerNormalization") continue;
    std::string why;
    if (!HasSingleUse(graph, index, gelu.inputs[0])) {
      why = "LayerNormalization output has other readers";
    }
    for (size_t i = 1; i < ln.outputs.size(); ++i) {
      if (!ln.outputs[i].empty() && UseCount(graph, index, ln.outputs[i]) > 0) {
        why = "LayerNormalization output '" + ln.outputs[i] + "' is used";
      }
    }
    if (!why.empty()) {
      context.Log(Describe(gelu) + ": not fused, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    context.stats().bytes_saved += StaticByteSize(graph, ln.outputs[0]);
    graph.value_info.erase(ln.outputs[0]);
    ir::Node fused = ln;
    fused.domain = runtime::kSlimpackDomain;
    fused.op_type = "LayerNormGelu";
    fused.outputs = {gelu.outputs[0]};
    const ir::Attribute* approx = gelu.FindAttribute("approximate");
    fused.attributes["approximate"] =
        approx ? *approx : ir::Attribute::String("none");
    fused.provenance = ir::Provenance::Merge(ln.provenance, gelu.provenance);
    dead[*p] = true;
    gelu = std::move(fused);
    context.stats().nodes_rewritten++;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
