// Tensor writing. raw_data is used for every type: it is the compact form
// and the only one that keeps float16/bfloat16 bit patterns as stored.
#include "formats/onnx/tensor_to_proto.h"

#include <string>

#include "formats/onnx/dtype_conversion.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {

absl::Status TensorToProto(const ir::Tensor& tensor,
                           const TensorPlacement& placement,
                           onnx::TensorProto* proto) {
  if (tensor.dtype == ir::DType::kUndefined) {
    return absl::InvalidArgumentError("tensor '" + tensor.name +
                                      "' has no data type");
  }
  ASSIGN_OR_RETURN(uint64_t expected, tensor.ExpectedBytes());
  if (expected != tensor.data.size()) {
    return absl::InvalidArgumentError(
        "tensor '" + tensor.name + "' holds " +
        std::to_string(tensor.data.size()) + " bytes, expected " +
        std::to_string(expected));
  }
  proto->set_name(tensor.name);
  proto->set_data_type(DTypeToOnnx(tensor.dtype));
  if (placement.float8_e4m3fn != nullptr && placement.float8_e4m3fn->count(tensor.name)) {
    if (tensor.dtype != ir::DType::kU8) {
      return absl::InvalidArgumentError("tensor '" + tensor.name + "' is listed as FLOAT8E4M3FN codes but has dtype " +
                                        std::string(ir::DTypeName(tensor.dtype)) + ", not u8");
    }
    // TensorProto.FLOAT8E4M3FN (ONNX 1.14+; Debian's onnx 1.12 headers
    // predate it, and data_type is a plain int32 field).
    constexpr int32_t kFloat8E4M3FN = 17;
    proto->set_data_type(kFloat8E4M3FN);
  }
  for (int64_t d : tensor.dims) proto->add_dims(d);
  if (placement.external != nullptr && expected >= placement.threshold) {
    ASSIGN_OR_RETURN(uint64_t offset, placement.external->Add(tensor.data));
    proto->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [proto](const char* key, const std::string& value) {
      auto* entry = proto->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", placement.external->location());
    add("offset", std::to_string(offset));
    add("length", std::to_string(expected));
    return absl::OkStatus();
  }
  if (tensor.data.empty()) {
    proto->set_raw_data(std::string());
  } else {
    proto->set_raw_data(reinterpret_cast<const char*>(tensor.data.data()),
                        tensor.data.size());
  }
  return absl::OkStatus();
}

}  // namespace slimpack::onnx_format
