// widen-f16 (see widen_f16.h).
#include "passes/lower/widen_f16.h"

#include "runtime/widen_f16.h"
#include "support/status_macros.h"

namespace slimpack::passes {

absl::Status WidenF16Pass::Run(ir::Graph& graph, PassContext& context) const {
  if (!runtime::HoldsF16(graph)) {
    context.Log("graph '" + graph.name + "' holds no f16 value");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(runtime::F16Widening done, runtime::WidenF16ToF32(graph));
  if (!done.changed()) return absl::OkStatus();
  // Each entry, exit and rounding Cast is one new node.
  context.stats().nodes_matched += done.inputs + done.outputs + done.roundings;
  context.stats().nodes_rewritten += done.inputs + done.outputs + done.roundings;
  context.Log("graph '" + graph.name + "' " + done.Summary());
  context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
