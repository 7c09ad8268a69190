// quantize-static: static W8A8 quantization of a float graph from a
// calibration table, rewritten into standard ONNX integer operators.
//
// Run after the float pipeline (BN folded into Conv, activations fused:
// registry.cc DefaultPipeline). Per node, in topological order:
//
//   Conv / slimpack.FusedConv (activation none, Relu, or Clip with
//   min <= 0 <= max):
//     Before: %y = FusedConv(%x, %W, %B) {activation="Relu"}
//     After:  %x_quantized = QuantizeLinear(%x, %x_scale, %x_zero_point)
//             %y_quantized = QLinearConv(%x_quantized, %x_scale, %x_zero_point,
//                              %W_quantized, %W_scale, %W_zero_point,
//                              %y_scale, %y_zero_point, %B_quantized)
//             %y = DequantizeLinear(%y_quantized, %y_scale, %y_zero_point)
//                                        (only if a float reader needs %y)
//   The activation is applied by the output saturation: %y's range (taken
//   after the activation, so quantization never sits between Conv and
//   Relu) is clamped to [0, hi] (Relu) or [min, max] (Clip), so the lowest
//   code is 0 (Relu exactly; Clip to within half a step).
//   Other fused activations (HardSwish, Sigmoid, LeakyRelu, Clip not
//   containing 0): QLinearConv to the pre-activation value (its range is
//   the table entry produced by the node just before the activation in the
//   fused node's provenance, e.g. the folded BatchNormalization), then
//   DequantizeLinear and the activation as a standard float op.
//
//   Gemm / slimpack.FusedGemm (transA=0, alpha=1, beta=1, constant B and
//   a constant bias of N or 1 elements) and MatMul with a constant 2-D B:
//     %acc = MatMulInteger(%x_quantized, %W_quantized, %x_zero_point)   i32
//     %accb = Add(%acc, %B_quantized)                    i32 (if bias)
//     %accf = Cast<to=FLOAT>(%accb)
//     %y = Mul(%accf, %W_requant_scale)      f32[N] = s_x * s_w[n] (f32)
//     [%y = Relu/Clip/... (%y) for FusedGemm]
//   QLinearMatMul has no bias input, and requantising the logits only to
//   dequantize them again loses accuracy, so the integer result is scaled
//   straight back to f32; a later integer reader quantizes it with its own
//   calibrated range.
//
// Numerics (formats/shard/spec.md "Integer execution (static W8A8)"):
// weights int8 symmetric per output channel (quant::QuantizeRtn, bits 8,
// group 0: s_w = max|w|/127, codes in [-127, 127], zero point 0); bias
// int32 = saturate(rint(b / f32(s_x * s_w))); activations u8 (or i8)
// per tensor, asymmetric, range [min(lo, 0), max(hi, 0)] from the table:
// scale = (hi - lo) / (qmax - qmin), zero point = saturate(rint(qmin -
// lo / scale)).
//
// Fallback (node stays float, reason in the report): name or a provenance
// source name matches `keep_float_regex`; weights or bias not constant;
// a needed range missing from the table; unsupported attributes. Every
// other op stays float; DequantizeLinear feeds it wherever its input only
// exists quantized. Not handled: int16 activations, ConvTranspose,
// quantized pass-through of MaxPool/Reshape (they run float between a
// DequantizeLinear and the next QuantizeLinear).
#ifndef SLIMPACK_QUANTIZE_QUANTIZE_STATIC_H_
#define SLIMPACK_QUANTIZE_QUANTIZE_STATIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/calibration_table.h"
#include "ir/graph.h"

namespace slimpack::passes {

struct StaticQuantOptions {
  // Activation integer type: kU8 (default) or kI8.
  ir::DType activation_dtype = ir::DType::kU8;
  // ECMAScript regex; a Conv/Gemm/MatMul whose node name or any provenance
  // source node name matches (std::regex_search) stays FP32. Empty: none.
  std::string keep_float_regex;
};

// What happened to one Conv/Gemm/MatMul candidate.
struct StaticQuantDecision {
  std::string node;     // node name
  std::string op_type;  // as before the rewrite (e.g. "FusedConv")
  // "QLinearConv", "QLinearConv+float HardSwish", "MatMulInteger",
  // or "float: <reason>".
  std::string decision;
};

struct StaticQuantReport {
  int64_t integer_nodes = 0;  // candidates rewritten
  int64_t float_nodes = 0;    // candidates kept float
  int64_t quantize_nodes = 0;
  int64_t dequantize_nodes = 0;
  std::vector<StaticQuantDecision> decisions;
  // The default-domain opset the model had when it was raised to 10 for
  // the integer operators (0 when it was not raised).
  int64_t opset_raised_from = 0;
};

// Rewrites `model` in place (see above). The graph keeps its inputs and
// outputs (f32). Errors, checked before the first mutation:
// InvalidArgument for a bad regex or activation dtype (naming it);
// FailedPrecondition when the default-domain opset is below 9, or 9 with
// a node whose meaning changes at 10 (a Dropout mask that is read), or the
// graph has a cycle. An opset-9 model is otherwise raised to 10 (Slice and
// TopK take their attributes as inputs; opset_raised_from says so), but
// only when something is rewritten. Idempotent: a second run with
// the same table finds nothing new to rewrite (kept-float nodes get the
// same decision) and changes nothing.
absl::StatusOr<StaticQuantReport> QuantizeStatic(
    ir::Model& model, const calibration::CalibrationTable& table,
    const StaticQuantOptions& options);

}  // namespace slimpack::passes

#endif  // SLIMPACK_QUANTIZE_QUANTIZE_STATIC_H_
