// eliminate-dead-nodes: removes nodes none of whose outputs reach a graph
// output, then initializers no remaining node reads.
//
//   Before: %a = Relu(%x); %b = Sigmoid(%x)   (graph output: %a)
//   After:  %a = Relu(%x)
//
// Liveness flows backwards from the graph outputs through node inputs and
// through the outer-scope reads of subgraphs. Initializers that are also
// graph inputs are kept (they are part of the interface). Subgraph bodies
// themselves are not pruned.
#ifndef SLIMPACK_PASSES_CLEANUP_ELIMINATE_DEAD_NODES_H_
#define SLIMPACK_PASSES_CLEANUP_ELIMINATE_DEAD_NODES_H_

#include "passes/pass.h"

namespace slimpack::passes {

class EliminateDeadNodesPass final : public Pass {
 public:
  std::string_view name() const override { return "eliminate-dead-nodes"; }
  // FailedPrecondition naming a node on a cycle.
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_CLEANUP_ELIMINATE_DEAD_NODES_H_
