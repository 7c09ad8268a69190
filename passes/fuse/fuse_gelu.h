// fuse-gelu: rewrites the erf and tanh GELU subgraphs exporters emit as one
// Gelu node with the matching `approximate` attribute.
//
//   erf form (PyTorch nn.GELU()):
//     %a = Div(%x, 1.4142135)  (or Mul(%x, 0.70710678))   %e = Erf(%a)
//     %b = Add(%e, 1)   %c = Mul(%x, %b)   %y = Mul(%c, 0.5)
//   tanh form (nn.GELU(approximate="tanh"), GPT-2):
//     %p = Pow(%x, 3)   %q = Mul(%p, 0.044715)   %r = Add(%x, %q)
//     %s = Mul(%r, 0.7978845608)   %t = Tanh(%s)   %b = Add(%t, 1)
//     %c = Mul(%x, %b)  %y = Mul(%c, 0.5)
//   The tail may also be %h = Mul(%x, 0.5); %y = Mul(%h, %b). Binary ops may
//   have their operands in either order.
//   After: %y = Gelu(%x) {approximate="none"|"tanh"}
//
// Gelu is an ONNX op from opset 20; for older models (all we import, up to
// 17) the node is emitted as slimpack.Gelu with the same semantics, which
// the interpreter runs through the same kernel (fused_kernels.h).
// Constants are matched within 1e-6 relative (1e-4 for sqrt(2) and
// sqrt(2/pi), which exporters round differently). Every intermediate must
// have one reader. Not bit-exact; tested within 1e-6.
// Not handled: x*x*x instead of Pow(x, 3), the sigmoid approximation.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_GELU_H_
#define SLIMPACK_PASSES_FUSE_FUSE_GELU_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseGeluPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-gelu"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_GELU_H_
