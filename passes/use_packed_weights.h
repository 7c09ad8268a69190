// use-packed-weights: lets the interpreter run quantized weights without
// materialising their f32 values. Not a registry pass: it is applied to
// graphs about to be run (eval / run on artifacts), never stored.
//
//   Gemm(A, W_q[, C])  {transA=0, alpha=1, beta=1, transB=t}
//     -> slimpack.MatMulQ(A, W_q, scale, zero_point|"", C|"") {trans_b=t, ...}
//   MatMul(A, W_q)     (W_q rank 2)
//     -> slimpack.MatMulQ(A, W_q, scale, zero_point|"", "") {trans_b=0, ...}
//   Gather(T_q, ids)   {axis=0, T_q rank 2}
//     -> slimpack.GatherQ(T_q, scale, zero_point|"", ids)
//
// W_q / T_q is a quantized initializer (ir::QuantLayout); the layout is
// copied into attributes kind (string), axis, group_size (and block_type,
// ggml's type number, for ggml_blocks, which has no scale or zero point). Gemm's C must be
// an initializer of dims [N] or [1, N] (else the node is left alone). The
// node keeps its name, outputs and provenance. The kernels
// (runtime/kernels/packed_kernels.h) compute bit-identical values to the dequantized
// graph; runtime/graph_plan.cc then binds W_q packed when only these
// ops read it. Spec: formats/shard/spec.md section 6.1.1.
#ifndef SLIMPACK_PASSES_USE_PACKED_WEIGHTS_H_
#define SLIMPACK_PASSES_USE_PACKED_WEIGHTS_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::passes {

// Rewrites the top-level graph's nodes in place; returns how many were
// rewritten. InvalidArgument naming the tensor if a quantized weight's
// layout does not match its scale / zero point.
absl::StatusOr<int> UsePackedWeights(ir::Graph& graph);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_USE_PACKED_WEIGHTS_H_
