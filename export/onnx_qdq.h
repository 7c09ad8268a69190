// Static W8A8 graphs (passes::QuantizeStatic's QOperator form) rewritten in
// the QDQ encoding: float Conv / MatMul between DequantizeLinear and
// QuantizeLinear nodes, the pattern ONNX Runtime's QDQ transformer (and
// the NNAPI / QNN execution providers) fuse back into integer kernels.
// The scales and zero points are the very initializers the interpreter
// used, so the calibrated ranges are carried exactly.
//
//   QLinearConv(xq, sx, zx, Wq, sw, zw, sy, zy[, Bq]) -> yq
//     => Conv(DQ(xq, sx, zx), DQ(Wq, sw, 0[M], axis 0), DQ(Bq, sx*sw, 0[M], axis 0))
//        -> QuantizeLinear(., sy, zy) -> yq
//   MatMulInteger(xq, Wq[K,N], zx) [-> Add(., Bq)] -> Cast(FLOAT) -> Mul(., m[N]) -> y
//     => MatMul(DQ(xq, sx, zx), DQ(Wq, m/sx, 0[N], axis 1)) [-> Add(., DQ(Bq, m, 0[N], axis 0))] -> y
//   where m = sx * sw is the requantization scale QuantizeStatic stored
//   (sx: the scale of whatever quantized xq: QuantizeLinear or QLinearConv).
//
// The bias keeps its int32 codes and its scale is the product the codes
// were computed with, so DQ(Bq) is exactly the bias the integer kernel
// added. Per-axis DequantizeLinear needs default-domain opset 13.
//
// Not handled (FailedPrecondition naming the node): a QLinearConv or
// MatMulInteger that is not in QuantizeStatic's shape (non-constant
// weights, a weight zero point that is not 0, an accumulator read by more
// than its Add/Cast chain, a quantized input whose scale cannot be traced).
#ifndef SLIMPACK_EXPORT_ONNX_QDQ_H_
#define SLIMPACK_EXPORT_ONNX_QDQ_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

// Per-axis DequantizeLinear (per-channel weights) first exists here.
inline constexpr int64_t kQdqPerAxisOpset = 13;

struct QdqReport {
  int64_t convs = 0;     // QLinearConv rewritten
  int64_t matmuls = 0;   // MatMulInteger chains rewritten
};

// Rewrites model.graph in place (unchanged on error). FailedPrecondition
// when the model's opset is below 13 and something needs rewriting, or a
// node is not in the form above (message names the node and the reason).
absl::StatusOr<QdqReport> ConvertToQdq(ir::Model& model);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_QDQ_H_
