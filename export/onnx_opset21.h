// Raises a model's default-domain opset to 21, the first with blocked
// DequantizeLinear and INT4 (and, from 19, float8 inputs), which FP8 and
// group-wise weights need (export/onnx_weights.cc). Debian's ONNX 1.12
// version converter stops at opset 17, so this does the rewrites itself:
//
//   Reduce{Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare}(x){axes}
//     -> the same op with axes as an i64 input (opset 18)
//   Split(x) without a `split` input (equal parts)
//     -> Split(x){num_outputs = its output count} (required from 18)
//
// and keeps every other node of an allow-list of ops whose meaning for
// these graphs did not change between the model's opset (>= 13) and 21
// (type additions only, or new attributes whose defaults keep the old
// behaviour). Other domains are left alone.
//
// A missing default-domain entry counts as opset 17 (the IR's default).
// Errors (nothing changed), each saying `why` (what needs opset 21):
// FailedPrecondition for an opset below 13; Unimplemented naming the first
// node outside the allow-list (or holding a subgraph, or a Resize with
// coordinate_transformation_mode tf_half_pixel_for_nn, gone at 18).
#ifndef SLIMPACK_EXPORT_ONNX_OPSET21_H_
#define SLIMPACK_EXPORT_ONNX_OPSET21_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

inline constexpr int64_t kBlockedDequantizeOpset = 21;

// No-op when the model is already at 21 or above.
absl::Status RaiseDefaultOpsetTo21(ir::Model& model, const std::string& why);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_OPSET21_H_
