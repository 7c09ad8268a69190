// ir::Tensor -> TensorProto, embedded as raw_data or placed in the external
// data file.
#ifndef SLIMPACK_FORMATS_ONNX_TENSOR_TO_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_TENSOR_TO_PROTO_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "ir/tensor.h"
#include "formats/onnx/external_data_writer.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Where tensor bytes go: with `external` set, tensors of at least
// `threshold` bytes go to the external file; everything else is raw_data.
struct TensorPlacement {
  ExternalDataWriter* external = nullptr;
  uint64_t threshold = 1024;
  // u8 tensors whose bytes are FLOAT8E4M3FN codes, written with that ONNX
  // data_type (the IR has no float8 dtype: codes travel as u8).
  const std::set<std::string>* float8_e4m3fn = nullptr;
};

// InvalidArgument naming the tensor if its dtype is undefined or its byte
// count does not match dtype x dims.
absl::Status TensorToProto(const ir::Tensor& tensor,
                           const TensorPlacement& placement,
                           onnx::TensorProto* proto);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_TENSOR_TO_PROTO_H_
