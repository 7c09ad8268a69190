// dequantize-integer-ops: ONNX Runtime's dynamic quantization
// (`quantize_dynamic`) turned back into the float op it came from, so
// another scheme can be applied to the float weight.
//
//   Before:  xq, xs, xzp = DynamicQuantizeLinear(x)
//            acc = MatMulInteger(xq, Wq, xzp, wzp)      (or ConvInteger<attrs>)
//            accf = Cast<to=FLOAT>(acc)
//            s = Mul(xs, ws)                             (either order)
//            y = Mul(accf, s)                            (either order)
//   After:   y = MatMul(x, W)                            (or Conv<attrs>(x, W))
//            W = (Wq - wzp) * ws
//
// W is computed as DequantizeLinear does: the integer difference converted
// exactly to f32, then one f32 multiply, so W holds exactly the weights the
// quantized graph multiplies by. The rewrite is not exact end to end: the
// activation is no longer rounded to DynamicQuantizeLinear's 8-bit grid, so
// y moves by up to that rounding (tested within a stated bound).
// Conditions (failures logged, the nodes kept): Wq is a u8/i8 constant
// (MatMulInteger: 2-D [K, N]; ConvInteger: rank >= 3 [M, C/group, k...]);
// wzp absent or a constant of Wq's dtype with 1 element or one per output
// channel (N / M); ws an f32 constant with 1 element, or one per output
// channel for MatMulInteger; xzp is the zero point of the same
// DynamicQuantizeLinear; acc, accf and s have no other reader. The
// DynamicQuantizeLinear goes when nothing reads it any more (ORT shares one
// between Q/K/V projections). The new weight is named after Wq without its
// `_quantized` suffix when that name is free, else `<Wq>_dequantized`.
// Not handled: QLinearMatMul/QLinearConv (static QOperator form), QDQ
// graphs (DequantizeLinear on weights; already float ops), MatMulInteger
// with a batched (rank > 2) weight.
#ifndef SLIMPACK_PASSES_LOWER_DEQUANTIZE_INTEGER_OPS_H_
#define SLIMPACK_PASSES_LOWER_DEQUANTIZE_INTEGER_OPS_H_

#include <string>
#include <vector>

#include "passes/pass.h"

namespace slimpack::passes {

class DequantizeIntegerOpsPass final : public Pass {
 public:
  std::string_view name() const override { return "dequantize-integer-ops"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

// The top-level nodes of `graph` that compute on quantized integers
// (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv,
// DynamicQuantizeLinear) as "'name' (Op)". Convert refuses to quantize a
// graph again while any is left after dequantize-integer-ops.
std::vector<std::string> IntegerComputeNodes(const ir::Graph& graph);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_LOWER_DEQUANTIZE_INTEGER_OPS_H_
