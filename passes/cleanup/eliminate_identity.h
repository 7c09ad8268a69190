// eliminate-identity: removes nodes that copy their input unchanged.
//
//   Before: %y = Identity(%x); %z = Relu(%y)
//   After:  %z = Relu(%x)
//
// Removed: Identity; Dropout in inference (training_mode absent or a false
// constant, mask output unused); Cast to the input's own dtype; Reshape to
// the input's own static shape. Readers of the output are rewired to the
// input. When the output is a graph output the node is kept unless the
// input's producer can be renamed to emit the graph output directly (it is
// a node output read only here). Not handled: nodes whose output is read
// from inside a subgraph, Dropout in training mode, Reshape with symbolic
// dims.
#ifndef SLIMPACK_PASSES_CLEANUP_ELIMINATE_IDENTITY_H_
#define SLIMPACK_PASSES_CLEANUP_ELIMINATE_IDENTITY_H_

#include "passes/pass.h"

namespace slimpack::passes {

class EliminateIdentityPass final : public Pass {
 public:
  std::string_view name() const override { return "eliminate-identity"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_CLEANUP_ELIMINATE_IDENTITY_H_
