// fuse-rmsnorm: rewrites the decomposed RMS norm that PyTorch exports for
// Llama/Mistral/T5-style models as one slimpack.RMSNorm.
//
//   Before: [%xc = Cast(%x) {to=FLOAT}]
//           %sq = Pow(%xc, 2)  or  Mul(%xc, %xc)
//           %v  = ReduceMean(%sq) {axes, keepdims=1}
//           %ve = Add(%v, eps)          %s = Sqrt(%ve)
//           %n  = Div(%xc, %s)  or  Mul(%xc, Reciprocal(%s))
//                                or  Mul(%xc, Div(1, %s))   (torch.rsqrt)
//           [%nc = Cast(%n) {to=FLOAT}]
//           %y  = Mul(%nc, weight)
//   After:  %y  = slimpack.RMSNorm(%x, weight) {axis, epsilon=eps}
//
//   RMSNorm(x) = x / sqrt(mean(x^2 over axes) + eps) * weight
//   (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization").
//
// Conditions (each failure is logged with the node it stopped at): the
// ReduceMean reduces trailing contiguous axes (attribute, or constant input
// from opset 18) with keepdims=1; the exponent is the constant 2; eps is a
// scalar constant; weight is an f32 constant of rank <= the normalized
// axes; every intermediate from the square to the weight Mul has one
// reader (%x itself may have others: the residual, a Shape). Operands of
// Mul/Add may come in either order. Casts are absorbed only when they cast
// to FLOAT (the fused op computes in f32 and returns f32, as the unfused
// chain did), and the head Cast only when the square and the normalization
// are its only readers (otherwise it stays and the fused op reads it).
// The Div form is bit-exact (the kernel runs the same built-in kernels);
// the reciprocal forms are within a rounding of it (tested within 1e-5).
// Not handled: a Cast back to f16/bf16 before the weight Mul, no weight.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_RMSNORM_H_
#define SLIMPACK_PASSES_FUSE_FUSE_RMSNORM_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseRmsNormPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-rmsnorm"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_RMSNORM_H_
