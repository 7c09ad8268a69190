// Writes the graph IR as an ONNX model, optionally with external data, via
// temp file + rename so a failed export never leaves a half-written model.
#ifndef SLIMPACK_FORMATS_ONNX_ONNX_WRITER_H_
#define SLIMPACK_FORMATS_ONNX_ONNX_WRITER_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::onnx_format {

// Tensor bytes above which external data is forced on: protobuf messages
// must stay under 2 GiB, and this leaves 256 MiB for the graph itself.
inline constexpr uint64_t kDefaultMaxEmbeddedTensorBytes =
    (2ull << 30) - (256ull << 20);

struct OnnxExportOptions {
  // With external data on, tensors of at least this many bytes are stored in
  // the external file.
  uint64_t external_data_threshold = 1024;
  // Forced on when the model's tensors total more than
  // max_embedded_tensor_bytes, i.e. would not fit protobuf's 2 GiB limit.
  bool use_external_data = false;
  uint64_t max_embedded_tensor_bytes = kDefaultMaxEmbeddedTensorBytes;
  // A bare file name beside the .onnx; default "<model stem>.data".
  std::string external_data_file;
  // u8 initializers written as FLOAT8E4M3FN (TensorPlacement::float8_e4m3fn).
  std::set<std::string> float8_e4m3fn;
};

// Writes `model` to `path` (and the external data file, when used). Tensor
// offsets in the data file are 64-byte aligned. Both files are written to
// temporaries in the target directory, fsynced and renamed into place.
//
// Returns the IR verifier's error if the model is malformed,
// InvalidArgument for a bad external_data_file name or a model that does not
// fit 2 GiB even with external data, and NotFound/PermissionDenied/
// ResourceExhausted naming the file for I/O failures.
absl::Status ExportOnnx(const ir::Model& model, const std::string& path,
                        const OnnxExportOptions& options = {});

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_ONNX_WRITER_H_
