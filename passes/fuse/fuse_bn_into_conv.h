// fuse-bn-into-conv: folds an inference BatchNormalization into the
// Conv / ConvTranspose / Gemm that feeds it.
//
//   Before: %c = Conv(%x, %W, %B); %y = BatchNormalization(%c, %g, %b, %m, %v)
//   After:  %y = Conv(%x, %W', %B')
//
// For output channel k (Conv: W axis 0; ConvTranspose: W axis 1 within each
// group; Gemm: column k of op(B)), computed in double and stored as f32:
//   s[k]  = g[k] / sqrt(v[k] + epsilon)
//   W'[k] = W[k] * s[k]
//   B'[k] = (B[k] - m[k]) * s[k] + b[k]          (B = 0 when absent)
// Gemm: B'[k] = (beta * C[k] - m[k]) * s[k] + b[k] and beta becomes 1.
// Ioffe & Szegedy 2015, "Batch Normalization", eq. in Alg. 2 (inference).
//
// Conditions (each failure is logged): BN in inference (training_mode 0,
// no running-stat outputs used), every BN parameter an f32 constant with
// one value per output channel, the producer's output read only by the BN,
// W (and B/C) f32 constants. A weight shared with another node is not
// modified; the fused node gets a new initializer. Not handled: Gemm whose
// C is a full [N, M] matrix, f16 weights.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_BN_INTO_CONV_H_
#define SLIMPACK_PASSES_FUSE_FUSE_BN_INTO_CONV_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseBnIntoConvPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-bn-into-conv"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_BN_INTO_CONV_H_
