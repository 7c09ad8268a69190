// Weight-only quantized initializers (ir::QuantLayout, from --quant int8 /
// int4 ...) written so ONNX Runtime multiplies with exactly the values the
// interpreter dequantizes, x = float32(q - zp) * scale:
//
//   int8_per_channel (i8/u8, scale [dims[axis]]):
//     W -> DequantizeLinear(W_quantized, scale[, zero_point]){axis} -> W
//     for any reader (Gemm, MatMul, Conv, Gather). Needs opset 13.
//   int4_groupwise (i4/u4, --onnx-profile ort only):
//     Gemm(x, W[N,K], transB=1) / MatMul(x, W[K,N]) with groups along K
//     -> com.microsoft MatMulNBits(x, B, scales[, zero_points])
//        {K, N, bits 4, block_size = group size} [-> Add(bias)]
//     B is the codes re-packed row by row [N, K/block, block/2] as unsigned
//     nibbles (signed codes +8, with the default zero point 8), scales
//     [N * K/block], zero points (asymmetric) packed two per byte. GPTQ /
//     AWQ / imatrix codes are carried as they are.
//     Gather(W[V, H], ids) with groups along H (embedding tables)
//     -> com.microsoft GatherBlockQuantized(codes as u8 [V, H/2], ids,
//        scales[, zero_points]){gather_axis 0, quantize_axis 1, bits 4}
//
// Refused (Unimplemented naming the tensor and node): int4 without the ort
// profile (standard ONNX has blocked DequantizeLinear only from opset 21),
// an int4 weight read by anything else (Conv, a Gather along another axis),
// groups not along K, a group size those ops do not take (a power of two
// >= 16), int8 below opset 13.
#ifndef SLIMPACK_EXPORT_ONNX_WEIGHTS_H_
#define SLIMPACK_EXPORT_ONNX_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "export/onnx_lower.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

struct WeightReport {
  int64_t dequantize_weights = 0;  // int8 weights behind DequantizeLinear
  int64_t matmul_nbits = 0;        // MatMulNBits nodes written
  int64_t gather_block_quantized = 0;  // GatherBlockQuantized nodes written
};

// Rewrites model.graph in place (unchanged on error).
absl::StatusOr<WeightReport> ExportQuantizedWeights(ir::Model& model, OnnxProfile profile);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_WEIGHTS_H_
