// fuse-silu: x * Sigmoid(x) (SiLU / Swish-1, what PyTorch exports for
// nn.SiLU and F.silu) becomes one slimpack.SiLU node.
//
//   Before: %s = Sigmoid(%x)     %y = Mul(%x, %s)   (either operand order)
//   After:  %y = slimpack.SiLU(%x)
//
// Why our own op rather than keeping the ONNX pair: ONNX has no SiLU
// before opset 24 (Swish), and the pair writes and re-reads a full-size
// intermediate (the sigmoid) per activation, which is the traffic the
// fusion removes. The kernel runs the built-in Sigmoid then Mul, so the
// rewrite is bit-exact.
// Conditions: the Sigmoid output is read only by the Mul and is not a
// graph output; the Mul's other operand is the Sigmoid's own input.
// Not handled: Swish with beta != 1 (x * Sigmoid(beta * x)).
#ifndef SLIMPACK_PASSES_FUSE_FUSE_SILU_H_
#define SLIMPACK_PASSES_FUSE_FUSE_SILU_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseSiluPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-silu"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_SILU_H_
