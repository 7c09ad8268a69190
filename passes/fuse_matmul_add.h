// fuse-matmul-add: rewrites a 2-D MatMul followed by a constant bias Add as
// one Gemm.
//
//   Before: %m = MatMul(%a, %W); %y = Add(%m, %b)      (or Add(%b, %m))
//   After:  %y = Gemm(%a, %W, %b)                      (alpha = beta = 1)
//
// Gemm computes alpha * A * B + beta * C, which equals MatMul then Add when
// A is 2-D, W is a 2-D constant [K, N] and b a constant of shape [N],
// [1, N] or a scalar. Conditions: A's rank is known to be 2 (value_info),
// the MatMul output is read only by the Add. Batched (rank > 2) MatMuls
// are kept: Gemm is 2-D only. Not bit-exact: the kernel may add the bias
// inside the GEMM accumulation (tested within 1e-6 relative).
#ifndef SLIMPACK_PASSES_FUSE_MATMUL_ADD_H_
#define SLIMPACK_PASSES_FUSE_MATMUL_ADD_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseMatMulAddPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-matmul-add"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_MATMUL_ADD_H_
