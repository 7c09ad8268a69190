// fuse-layernorm-gelu: merges a LayerNormalization whose only reader is a
// Gelu into one slimpack.LayerNormGelu node.
//
//   Before: %n = LayerNormalization(%x, %g, %b) {axis, epsilon}
//           %y = Gelu(%n) {approximate}          (ONNX or slimpack domain)
//   After:  %y = slimpack.LayerNormGelu(%x, %g, %b) {axis, epsilon,
//                                                    approximate}
//
// The interpreter kernel (fused_kernels.h) runs the LayerNormalization and
// Gelu kernels back to back, so results are bit-identical. Conditions: the
// norm's Mean/InvStdDev outputs are unused and its output is read only by
// the Gelu. Run after fuse-layernorm and fuse-gelu.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_GELU_H_
#define SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_GELU_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseLayerNormGeluPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-layernorm-gelu"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_LAYERNORM_GELU_H_
