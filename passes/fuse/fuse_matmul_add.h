// fuse-matmul-add: rewrites a MatMul followed by a constant bias Add as
// one Gemm (2-D) or one slimpack.MatMulAdd (batched or unknown rank).
//
//   Before: %m = MatMul(%a, %W); %y = Add(%m, %b)      (or Add(%b, %m))
//   After:  %y = Gemm(%a, %W, %b)                      (A known 2-D)
//           %y = slimpack.MatMulAdd(%a, %W, %b)        (otherwise, with
//                                                       option batched=true)
//
// Gemm computes alpha * A * B + beta * C, which equals MatMul then Add when
// A is 2-D, W is a 2-D constant [K, N] and b a constant of shape [N],
// [1, N] or a scalar. Conditions: W and b as above, the MatMul output is
// read only by the Add. The Gemm form is not bit-exact (the kernel may add
// the bias inside the GEMM accumulation; tested within 1e-6 relative);
// MatMulAdd runs the built-in MatMul then Add, so it is bit-exact. It
// covers the 3-D [batch, seq, hidden] linears transformers export, which
// Gemm (2-D only) cannot. It is off by default (option `batched`) because
// the weight quantizers (quantize/quantize_weights, linear_capture) look for
// MatMul/Gemm and would no longer see those linears.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_MATMUL_ADD_H_
#define SLIMPACK_PASSES_FUSE_FUSE_MATMUL_ADD_H_

#include "passes/pass.h"

namespace slimpack::passes {

struct FuseMatMulAddOptions {
  // Also fuse MatMuls whose A is not known to be 2-D, as slimpack.MatMulAdd.
  bool batched = false;
};

class FuseMatMulAddPass final : public Pass {
 public:
  explicit FuseMatMulAddPass(FuseMatMulAddOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "fuse-matmul-add"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;

 private:
  FuseMatMulAddOptions options_;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_MATMUL_ADD_H_
