// fold-static-shapes: shape arithmetic on statically known dims becomes
// constants, so fold-constants can finish the Unsqueeze/Concat chains that
// exporters build Reshape targets with.
//
//   Before: %s = Shape(%x)            (%x: f32[batch, 16, 32])
//           %d = Gather(%s, 2) {axis=0}
//   After:  init %d = i64 {32}        (Shape stays while it has readers)
//
// Folded: Shape(x) when every dim of x in [start, end) is static (opset-15
// start/end honoured); Size(x) when x is fully static; Gather(Shape(x),
// idx) with axis 0 and constant indices (scalar or 1-D) that select only
// static dims, even when other dims of x are symbolic. The node's output
// becomes an i64 initializer of the same name. Shapes come from value_info,
// graph inputs and initializers. Conditions (failures logged): the output
// is not a graph output. Exact (integers).
// Not handled: Slice of a Shape, shapes only known after inference we do
// not run.
#ifndef SLIMPACK_PASSES_FOLD_FOLD_STATIC_SHAPES_H_
#define SLIMPACK_PASSES_FOLD_FOLD_STATIC_SHAPES_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FoldStaticShapesPass final : public Pass {
 public:
  std::string_view name() const override { return "fold-static-shapes"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FOLD_FOLD_STATIC_SHAPES_H_
