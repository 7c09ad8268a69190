// fuse-layernorm: rewrites the decomposed layer norm that PyTorch's ONNX
// exporter emits as one LayerNormalization (opset 17).
//
//   Before: %m  = ReduceMean(%x) {axes}       %d  = Sub(%x, %m)
//           %p  = Pow(%d, 2)                  %v  = ReduceMean(%p) {axes}
//           %ve = Add(%v, eps)                %s  = Sqrt(%ve)
//           %n  = Div(%d, %s)                 %g  = Mul(%n, gamma)
//           %y  = Add(%g, beta)
//   After:  %y  = LayerNormalization(%x, gamma, beta) {axis, epsilon=eps}
//
// Conditions (each failure is logged with the node it stopped at): both
// ReduceMeans reduce the same trailing, contiguous axes with keepdims=1
// (axes as attribute, or as a constant input from opset 18); the exponent
// is the constant 2; eps is a scalar constant; gamma and beta are f32
// constants of rank <= the number of normalized axes; %d feeds exactly the
// Pow and the Div and every other intermediate has one reader. Mul and the
// Adds may have their operands in either order. The rewrite needs opset 17;
// a lower model opset is reported through PassContext::RequireOpset, unless
// raising it would change another node's meaning (e.g. an opset-12
// Unsqueeze with axes as attribute): then nothing is fused and the reason
// is logged.
// Not bit-exact (one kernel instead of nine); tested within 1e-5.
// Not handled: Mul(d, d) instead of Pow, no affine (Div root), no beta.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_H_
#define SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseLayerNormPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-layernorm"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_H_
