// Imports an ONNX model file (opsets 9-17, embedded or external weights,
// Constant-node weights) into the graph IR.
#ifndef SLIMPACK_FORMATS_ONNX_ONNX_IMPORTER_H_
#define SLIMPACK_FORMATS_ONNX_ONNX_IMPORTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::onnx_format {

// Default-domain opsets whose operator semantics the rest of the toolchain
// implements.
inline constexpr int64_t kMinSupportedOpset = 9;
inline constexpr int64_t kMaxSupportedOpset = 17;

struct OnnxImportOptions {
  // Runs ONNX shape inference on a copy of the model and records the
  // inferred types in Graph::value_info. Failures become Model::warnings.
  bool run_shape_inference = true;
  // Imports default-domain opsets above kMaxSupportedOpset with a warning
  // instead of failing. Ops whose semantics changed after opset 17 (e.g. the
  // Reduce* `axes` input of opset 18) are then not understood by passes.
  bool allow_newer_opset = false;
  // Verifies the SHA-1 `checksum` key of external data (a digest of the
  // whole external file, as onnx.proto defines it) when present.
  bool verify_external_checksums = true;
};

// Reads the ONNX model at `path`. Tensors stored in raw_data are zero-copy
// views into the parsed protobuf; external data is mmapped once per file and
// viewed, and every such file is listed in Model::input_files. Constant
// nodes become initializers named after their output.
//
// Errors name the file and the tensor/node/attribute:
//  - NotFound: the model or an external data file does not exist;
//  - InvalidArgument: empty or unparsable file, malformed tensor (size
//    mismatch, bad dims, missing data type), unsafe external location
//    (absolute, `..`, symlink, hard link), malformed graph (IR verifier),
//    bad Conv/pool window attributes (zero stride or dilation, negative
//    pad, inconsistent lengths, overflowing extents: window_attributes.h;
//    checked before shape inference, which would crash on them);
//  - OutOfRange: external data offset+length past the end of its file;
//  - DataLoss: external data checksum mismatch;
//  - Unimplemented: opset outside [9, 17], string/complex tensors, sparse
//    tensors, segmented tensors, type-proto attributes, model functions.
absl::StatusOr<ir::Model> ImportOnnx(const std::string& path,
                                     const OnnxImportOptions& options = {});

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_ONNX_IMPORTER_H_
