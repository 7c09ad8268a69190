// Prepares a converted model (after passes, pruning and quantization) to be
// written as ONNX that stock ONNX Runtime loads: slimpack ops lowered
// (onnx_lower.h), weight-only quantized weights as DequantizeLinear or
// MatMulNBits (onnx_weights.h), static W8A8 in the requested encoding
// (QOperator as QuantizeStatic emits it, or QDQ: onnx_qdq.h), then every
// node checked against the domains ONNX Runtime runs. Anything it cannot is
// refused with the node or tensor named, so no file ONNX Runtime rejects
// is ever written. The caller writes the model (formats/onnx/onnx_writer).
#ifndef SLIMPACK_EXPORT_ONNX_EXPORT_H_
#define SLIMPACK_EXPORT_ONNX_EXPORT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "export/onnx_lower.h"
#include "export/onnx_qdq.h"
#include "export/onnx_weights.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

enum class QuantFormat : uint8_t {
  kQOperator,  // QLinearConv, MatMulInteger (QuantizeStatic's own form)
  kQdq,        // QuantizeLinear / DequantizeLinear around float Conv / MatMul
};

struct OnnxExportOptions {
  OnnxProfile profile = OnnxProfile::kStandard;
  QuantFormat quant_format = QuantFormat::kQdq;
  // f16/bf16 initializers become f32 (the values the interpreter computes
  // with): set for graphs built from decoder checkpoints, whose ops run
  // in f32.
  bool widen_half_initializers = false;
  // QDQ writes per-channel weights as per-axis DequantizeLinear (opset 13).
  // For a W8A8 model below that, this raises the model to `opset` with
  // ONNX's version converter (the converter supplies it: it round-trips the
  // lowered model through formats/onnx, which this room does not include).
  // Null: such a model is refused, naming the opset.
  std::function<absl::Status(ir::Model& model, int64_t opset)> raise_opset;
};

struct OnnxExportReport {
  LowerReport lower;
  QdqReport qdq;
  WeightReport weights;
  int64_t widened = 0;  // f16/bf16 initializers written as f32
  int64_t opset_raised_from = 0;  // > 0: the opset raise_opset raised
  int64_t nodes = 0;
  int64_t initializers = 0;
};

// "standard" / "ort"; "qdq" / "qoperator". InvalidArgument listing the
// accepted names otherwise.
absl::StatusOr<OnnxProfile> ParseOnnxProfile(const std::string& name);
absl::StatusOr<QuantFormat> ParseQuantFormat(const std::string& name);

// Rewrites `model` in place. Errors: Unimplemented naming a node of a
// domain ONNX Runtime does not run (with the profile's accepted domains);
// the lowering's, the weights' and the QDQ rewrite's own errors
// (onnx_lower.h, onnx_weights.h, onnx_qdq.h). `model` may be partly
// rewritten on error; callers discard it.
absl::StatusOr<OnnxExportReport> PrepareForOnnxRuntime(ir::Model& model,
                                                       const OnnxExportOptions& options);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_EXPORT_H_
