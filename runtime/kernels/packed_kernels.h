// Interpreter kernels for slimpack.MatMulQ and slimpack.GatherQ
// (passes/use_packed_weights.h, formats/shard/spec.md section 6.1.1): the
// weight stays packed (i8/u8/i4/u4) and only the slices a product or a
// lookup needs are dequantized, with the spec's x = float32(q - zp) * scale.
//
// MatMulQ runs runtime/gemm.h's products on the dequantized weight, one
// call per tile of output channels, each on a buffer holding just that
// tile's channels. Every output of that GEMM is one fixed chain over k
// whatever the tiling, so the results are bit-identical to the dequantized
// graph and independent of the thread count. A weight that arrives already
// dequantized (f32: another op reads it too) runs as plain Gemm.
#ifndef SLIMPACK_RUNTIME_KERNELS_PACKED_KERNELS_H_
#define SLIMPACK_RUNTIME_KERNELS_PACKED_KERNELS_H_

#include "absl/status/status.h"
#include "runtime/kernel_registry.h"

namespace slimpack::runtime {

// The op types (domain kSlimpackDomain). graph_plan binds their packed
// weight inputs (MatMulQ input 1, GatherQ input 0) without dequantizing;
// passes::UsePackedWeights emits them.
inline constexpr char kMatMulQOp[] = "MatMulQ";
inline constexpr char kGatherQOp[] = "GatherQ";

// Registers slimpack.MatMulQ and slimpack.GatherQ.
absl::Status RegisterPackedKernels(runtime::KernelRegistry& registry);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_PACKED_KERNELS_H_
