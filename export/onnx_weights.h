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
//     AWQ / imatrix codes are carried as they are. An act-order weight read
//     through Gather(x, `<W>.input_perm`, axis=-1) takes x directly, its
//     codes back in checkpoint row order and the checkpoint's g_idx as
//     input 4 (zero points then f32 [N * K/block]: ORT ignores u8 ones
//     beside a g_idx); the Gather goes.
//     Gather(W[V, H], ids) with groups along H (embedding tables)
//     -> com.microsoft GatherBlockQuantized(codes as u8 [V, H/2], ids,
//        scales[, zero_points]){gather_axis 0, quantize_axis 1, bits 4}
//
//   fp8_e4m3_groupwise (E4M3 bytes, groups along one axis of a 2-D weight):
//     W -> DequantizeLinear(W_quantized as FLOAT8E4M3FN, scale f32){axis, block_size}
//     per axis (axis = the other one, scale [rows]) when a group spans the
//     whole axis (per-channel / per-tensor checkpoints), else blocked
//     (block_size = group size, scale [rows, cols/group]); the model is
//     raised to opset 21 for it (onnx_opset21.h). The codes are the
//     checkpoint's bytes; E4M3FN's values are the IR's F8E4M3ToF32.
//
//   int4_groupwise / int8_groupwise without the ort profile, or where those
//   contrib ops cannot take the weight (a group size that is not a power
//   of two >= 16, groups not along K, another reader, rank != 2):
//     W -> DequantizeLinear(W_quantized as INT4/UINT4/INT8/UINT8, scale f32
//          [.., groups, ..][, zero_point as stored]){axis, block_size} -> W
//     (opset 21, the model raised for it: onnx_opset21.h).
//
// Refused (Unimplemented naming the tensor and node): int8 per channel
// below opset 13; a model that cannot be raised to opset 21 when a weight
// needs it.
#ifndef SLIMPACK_EXPORT_ONNX_WEIGHTS_H_
#define SLIMPACK_EXPORT_ONNX_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "export/onnx_lower.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

struct WeightReport {
  int64_t dequantize_weights = 0;  // int8 weights behind DequantizeLinear
  int64_t matmul_nbits = 0;        // MatMulNBits nodes written
  int64_t gather_block_quantized = 0;  // GatherBlockQuantized nodes written
  int64_t blocked_dequantize = 0;  // group-wise weights behind opset-21 DequantizeLinear
  int64_t g_idx_folded = 0;  // act-order input Gathers folded into MatMulNBits' g_idx
  // FP8 weights behind float8 DequantizeLinear: their u8 code initializers,
  // to be written as FLOAT8E4M3FN (onnx_format::OnnxExportOptions).
  std::vector<std::string> float8_e4m3fn;
  int64_t opset_raised_from = 0;  // for them (onnx_opset21.h); 0 = not raised
};

// Rewrites model.graph in place (unchanged on error).
absl::StatusOr<WeightReport> ExportQuantizedWeights(ir::Model& model, OnnxProfile profile);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_WEIGHTS_H_
