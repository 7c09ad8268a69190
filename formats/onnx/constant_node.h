// ONNX Constant nodes as weights. Paddle2ONNX (and some torch exports) keep
// every weight in a Constant node instead of an initializer; the importer
// turns each into an initializer named after the node's output.
#ifndef SLIMPACK_FORMATS_ONNX_CONSTANT_NODE_H_
#define SLIMPACK_FORMATS_ONNX_CONSTANT_NODE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "formats/onnx/import_context.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// True for op_type "Constant" in the default domain ("" or "ai.onnx").
bool IsOnnxConstant(const onnx::NodeProto& node);

// The tensor a Constant node produces, named after its output, with
// provenance FromNode(`provenance_name`) plus the file (and offset) the
// value came from. Handles `value` (a tensor, possibly
// external) and value_float(s)/value_int(s). Returns nullopt for
// value_string(s): the IR has no string tensors, so such nodes stay nodes.
// InvalidArgument if the node does not have exactly one output and one value
// attribute or has inputs; Unimplemented for sparse_value; tensor errors
// from TensorFromProto. Errors do not name the node (the caller does).
absl::StatusOr<std::optional<ir::Tensor>> ConstantNodeToTensor(
    const onnx::NodeProto& node, const std::string& provenance_name,
    const ImportContext& ctx);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_CONSTANT_NODE_H_
