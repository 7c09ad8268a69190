// Reads and parses an ONNX file into a ModelProto with protobuf's limits set
// for models up to 2 GiB.
#ifndef SLIMPACK_FORMATS_ONNX_MODEL_PROTO_READER_H_
#define SLIMPACK_FORMATS_ONNX_MODEL_PROTO_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// NotFound/PermissionDenied if `path` cannot be opened; InvalidArgument
// naming `path` if it is not a regular file, is empty, is 2 GiB or larger
// (protobuf's hard limit: weights must be external data), or does not parse
// as a ModelProto.
absl::StatusOr<std::unique_ptr<onnx::ModelProto>> ReadModelProto(
    const std::string& path);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_MODEL_PROTO_READER_H_
