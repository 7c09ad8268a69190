// fold-add-into-conv: a per-channel constant Add after a Conv becomes the
// Conv's bias. Paddle2ONNX (and hand-built graphs) emit the conv bias as a
// separate Reshape + Add; once folded, BatchNormalization and activation
// fusion can reach the Conv.
//
//   Before: %c = Conv(%x, %W[, %B])     %y = Add(%c, %b)   (either order)
//   After:  %y = Conv(%x, %W, %B')      B' = B + b (B = 0 when absent)
//
// Conditions (failures logged): W is a constant (it gives the channel count
// C = W.dims[0] and the output rank); b is an f32 constant that broadcasts
// only along channels: [1, C, 1, ...] or [C, 1, ...] (rank = output rank or
// one less) or a single element; an existing B is an f32 constant [C]; the
// Conv output has no other reader. The new bias is a fresh initializer (the
// old B stays for other readers; dead-node elimination drops it).
// Not exact: B + b is rounded once before the accumulation instead of
// after it; tested within 1e-5.
// Not handled: Mul-by-constant into W, ConvTranspose, Gemm (fuse-matmul-add
// handles MatMul + Add).
#ifndef SLIMPACK_PASSES_FOLD_FOLD_ADD_INTO_CONV_H_
#define SLIMPACK_PASSES_FOLD_FOLD_ADD_INTO_CONV_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FoldAddIntoConvPass final : public Pass {
 public:
  std::string_view name() const override { return "fold-add-into-conv"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FOLD_FOLD_ADD_INTO_CONV_H_
