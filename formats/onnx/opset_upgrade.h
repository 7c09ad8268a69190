// Raises a ModelProto's default-domain opset with ONNX's version converter
// (onnx/version_converter), so models exported at opsets older than the
// importer reads (or older than an integer rewrite needs) still come in.
#ifndef SLIMPACK_FORMATS_ONNX_OPSET_UPGRADE_H_
#define SLIMPACK_FORMATS_ONNX_OPSET_UPGRADE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Rewrites `model` in place to default-domain opset `target` (nothing to do
// when it is already there or above). Operators whose signature changed in
// between are rewritten by the converter's adapters (e.g. Add's `broadcast`
// attribute dropped at 7, Reshape's `shape` attribute becomes an input at 5,
// Slice's starts/ends at 10). Top-level initializers never pass through the
// converter: they are moved out, shown to it as typed graph inputs, and put
// back untouched afterwards, so weights are neither copied nor re-encoded
// and external data keeps its location. Lines the converter prints (it
// warns on non-default-domain nodes) are appended to `warnings`.
// Opset <= 6 broadcasting (`broadcast=1` with an `axis`), which ONNX
// 1.12's adapter mistranslates, is rewritten here first as an Unsqueeze of
// the broadcast operand (ranks from ONNX shape inference).
//
// Errors, with `model` left unchanged: Unimplemented when the converter
// refuses or fails (no adapter, unknown op, malformed node for its opset:
// the model is checked with onnx.checker first, since the adapters assume
// valid nodes), carrying the converter's own message, or when an opset-6
// broadcast has an operand of unknown rank or sits in a subgraph;
// InvalidArgument when the model has no default-domain opset_import or an
// opset-6 broadcast axis does not fit its operands.
absl::Status UpgradeOpset(onnx::ModelProto* model, int64_t target,
                          std::vector<std::string>* warnings);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_OPSET_UPGRADE_H_
