// fuse-attention: scaled dot-product attention as exporters decompose it
// becomes one slimpack.Attention, so the [.., S, S] score, masked-score and
// probability tensors are never materialised between kernels.
//
//   Before: %qk = MatMul(%q, %kt)
//           [%s = Div(%qk, d)  or  Mul(%qk, c)]      scale, optional
//           [%sm = Add(%s, %mask)]                   mask, optional
//           %p = Softmax(%sm) {axis=-1}
//           %y = MatMul(%p, %v)
//   After:  %y = slimpack.Attention(%q, %kt, %v[, %mask])
//                  {scale=c | scale_divisor=d}
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V
//   (Vaswani et al. 2017, "Attention Is All You Need", eq. 1)
//
// %kt is K already transposed, as the exporter feeds it to MatMul. The
// kernel runs the built-in MatMul, Div/Mul, Add, Softmax and MatMul in the
// original order, so the rewrite is bit-exact.
// Conditions (failures logged): every intermediate (%qk, %s, %sm, %p) has
// one reader; the scale is a scalar constant; Softmax normalises the last
// axis (axis -1 or rank-1; before opset 13 the attribute must be given).
// Not handled: scale applied to Q or K before the MatMul (left as is, the
// rest still fuses), Where/masked_fill masks, dropout on probabilities.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_ATTENTION_H_
#define SLIMPACK_PASSES_FUSE_FUSE_ATTENTION_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseAttentionPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-attention"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_ATTENTION_H_
