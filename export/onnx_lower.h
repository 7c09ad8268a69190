// Lowers the `slimpack` domain ops our passes emit (runtime/kernels/
// fused_kernels.h) to operators ONNX Runtime runs, for `convert --format
// onnx`. Each fused op becomes the standard ONNX nodes it stands for, in the
// order the interpreter's fused kernel runs them, so the exported graph
// computes what `slimpack run` computes (same ops, float rounding aside):
//
//   FusedConv / FusedGemm{activation, activation_params}
//       -> Conv / Gemm, then Relu | Sigmoid | LeakyRelu{alpha} |
//          Clip (bounds as inputs at opset >= 11, else attributes) |
//          HardSwish (opset >= 14, else HardSigmoid{1/6, 1/2} * x)
//   Gelu{approximate}   -> 0.5 x (1 + Erf(x / sqrt 2))           ("none")
//                          0.5 x (1 + Tanh(sqrt(2/pi)(x + 0.044715 x^3)))
//   LayerNormGelu       -> LayerNormalization, then the Gelu above
//   RMSNorm{axis, eps}  -> x / Sqrt(ReduceMean(x * x, axes [axis, rank)) + eps) * scale
//   SiLU                -> x * Sigmoid(x)
//   HardSwish           -> HardSigmoid{1/6, 1/2}(x) * x          (opset < 14)
//   Attention(Q, Kt, V[, mask]){scale | scale_divisor}
//                       -> Softmax(MatMul(Q, Kt) * scale (/ divisor) + mask, -1) @ V
//   MatMulAdd           -> MatMul, Add
//
// With the `ort` profile, ops ONNX Runtime has a contrib kernel for become
// that kernel instead: FusedConv (Relu, Sigmoid, LeakyRelu, Clip) ->
// com.microsoft FusedConv; Gelu -> com.microsoft Gelu / FastGelu (tanh);
// RMSNorm -> SimplifiedLayerNormalization (ORT registers it in the default
// domain). Everything else lowers as above.
//
// Not handled: ops of other domains (the caller's check refuses them,
// naming the node), slimpack.MatMulQ / GatherQ (emitted only inside `run`).
#ifndef SLIMPACK_EXPORT_ONNX_LOWER_H_
#define SLIMPACK_EXPORT_ONNX_LOWER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

enum class OnnxProfile : uint8_t {
  kStandard,  // default-domain ONNX operators only
  kOrt,       // plus ONNX Runtime's contrib operators where they exist
};

struct LowerReport {
  // slimpack op type -> how many nodes were lowered.
  std::map<std::string, int64_t> lowered;
  int64_t contrib_nodes = 0;  // com.microsoft / ORT-only nodes emitted
};

// Rewrites every slimpack-domain node of model.graph (top level) in place.
// Adds the com.microsoft opset import when a contrib op is emitted.
// Errors (model unchanged on error): Unimplemented naming the node and the
// op or activation it cannot lower, listing what is supported;
// InvalidArgument naming the node for malformed attributes.
absl::StatusOr<LowerReport> LowerSlimpackOps(ir::Model& model, OnnxProfile profile);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_LOWER_H_
