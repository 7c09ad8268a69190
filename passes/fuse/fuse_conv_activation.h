// fuse-conv-activation: merges an activation into the Conv or Gemm feeding
// it, as one slimpack-domain node carrying the activation as attributes.
//
//   Before: %c = Conv(%x, %W, %B) {...}; %y = Relu(%c)
//   After:  %y = slimpack.FusedConv(%x, %W, %B) {..., activation="Relu",
//                                                activation_params=[]}
//
// Activations: Relu, Sigmoid, HardSwish (no params; also slimpack.HardSwish), LeakyRelu
// (activation_params=[alpha]), Clip ([min, max]; bounds from constant
// inputs or, before opset 11, attributes; an absent bound is +-inf). Gemm
// becomes slimpack.FusedGemm. The interpreter kernel (fused_kernels.h) runs
// the same two kernels, so results are bit-identical.
// Conditions: the Conv/Gemm output is read only by the activation; Clip
// bounds are constants. Not handled: activations of other producers
// (MatMul, ConvTranspose), PRelu (per-channel slope tensor).
#ifndef SLIMPACK_PASSES_FUSE_FUSE_CONV_ACTIVATION_H_
#define SLIMPACK_PASSES_FUSE_FUSE_CONV_ACTIVATION_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseConvActivationPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-conv-activation"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_CONV_ACTIVATION_H_
