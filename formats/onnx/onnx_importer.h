// Imports an ONNX model file (opsets 9-17, older ones upgraded with ONNX's
// version converter; embedded or external weights, Constant-node weights)
// into the graph IR.
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
  // A model whose default-domain opset is below this is upgraded to it with
  // ONNX's version converter before anything reads its graph, and
  // Model::warnings says so. Values below kMinSupportedOpset act as
  // kMinSupportedOpset (older opsets are always upgraded, never read as
  // they are); raise it to have e.g. opset-9 models arrive at 10.
  int64_t min_opset = kMinSupportedOpset;
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
//  - Unimplemented: opset above 17 (unless allow_newer_opset), an opset
//    below `min_opset` that the version converter cannot upgrade (the
//    message carries the converter's reason), string/complex tensors,
//    sparse tensors, segmented tensors, type-proto attributes, model
//    functions.
absl::StatusOr<ir::Model> ImportOnnx(const std::string& path,
                                     const OnnxImportOptions& options = {});

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_ONNX_IMPORTER_H_
