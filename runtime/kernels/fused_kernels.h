// Interpreter kernels for the ops our passes emit in the "slimpack" domain;
// BuiltinKernels() registers them, so every interpreter runs them.
//
//   slimpack.FusedConv / slimpack.FusedGemm: Conv / Gemm (same inputs and
//     attributes) followed by `activation` (string: Relu, Clip, LeakyRelu,
//     HardSwish, Sigmoid) with `activation_params` (floats: Clip [min, max],
//     LeakyRelu [alpha], otherwise empty).
//   slimpack.Gelu: ONNX Gelu (opset 20) semantics for models whose opset
//     predates it; attribute `approximate` ("none" or "tanh").
//   slimpack.LayerNormGelu: LayerNormalization (same inputs/attributes)
//     followed by Gelu with attribute `approximate`.
//   slimpack.RMSNorm(X, scale) {axis, epsilon}: X / sqrt(mean(X^2 over
//     axes [axis, rank)) + epsilon) * scale, f32.
//   slimpack.SiLU(X): X * Sigmoid(X).
//   slimpack.HardSwish(X): ONNX HardSwish for models below opset 14.
//   slimpack.Attention(Q, Kt, V[, mask]) {scale | scale_divisor}:
//     Softmax(MatMul(Q, Kt) * scale (or / scale_divisor) + mask, axis=-1)
//     then MatMul with V.
//   slimpack.MatMulAdd(A, W, bias): Add(MatMul(A, W), bias), any rank.
//   slimpack.MatMulQ / slimpack.GatherQ: linears and lookups on packed
//   quantized weights (runtime/kernels/packed_kernels.h, registered from here).
// Each fused kernel runs the interpreter's own kernels back to back, so a
// fused graph computes bit-identical values to the unfused one.
#ifndef SLIMPACK_RUNTIME_KERNELS_FUSED_KERNELS_H_
#define SLIMPACK_RUNTIME_KERNELS_FUSED_KERNELS_H_

#include <memory>

#include "absl/status/status.h"
#include "runtime/kernel_registry.h"

namespace slimpack::runtime {

inline constexpr char kSlimpackDomain[] = "slimpack";

// Adds the kernels above. AlreadyExists if one is registered already.
absl::Status RegisterFusedKernels(KernelRegistry& registry);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_FUSED_KERNELS_H_
