// ONNX data type <-> ir::DType table.
#include "formats/onnx/dtype_conversion.h"

#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {
namespace {

struct TypePair {
  int32_t onnx;
  ir::DType ir;
  const char* name;
};

constexpr TypePair kTypes[] = {
    {onnx::TensorProto::FLOAT, ir::DType::kF32, "FLOAT"},
    {onnx::TensorProto::FLOAT16, ir::DType::kF16, "FLOAT16"},
    {onnx::TensorProto::BFLOAT16, ir::DType::kBF16, "BFLOAT16"},
    {onnx::TensorProto::DOUBLE, ir::DType::kF64, "DOUBLE"},
    {onnx::TensorProto::INT64, ir::DType::kI64, "INT64"},
    {onnx::TensorProto::INT32, ir::DType::kI32, "INT32"},
    {onnx::TensorProto::INT16, ir::DType::kI16, "INT16"},
    {onnx::TensorProto::INT8, ir::DType::kI8, "INT8"},
    {onnx::TensorProto::UINT64, ir::DType::kU64, "UINT64"},
    {onnx::TensorProto::UINT32, ir::DType::kU32, "UINT32"},
    {onnx::TensorProto::UINT16, ir::DType::kU16, "UINT16"},
    {onnx::TensorProto::UINT8, ir::DType::kU8, "UINT8"},
    {onnx::TensorProto::BOOL, ir::DType::kBool, "BOOL"},
    {kOnnxInt4, ir::DType::kI4, "INT4"},
    {kOnnxUint4, ir::DType::kU4, "UINT4"},
};

}  // namespace

std::optional<ir::DType> DTypeFromOnnx(int32_t onnx_type) {
  for (const auto& t : kTypes) {
    if (t.onnx == onnx_type) return t.ir;
  }
  return std::nullopt;
}

int32_t DTypeToOnnx(ir::DType dtype) {
  for (const auto& t : kTypes) {
    if (t.ir == dtype) return t.onnx;
  }
  return onnx::TensorProto::UNDEFINED;
}

std::string OnnxTypeName(int32_t onnx_type) {
  for (const auto& t : kTypes) {
    if (t.onnx == onnx_type) return t.name;
  }
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnx_type));
  }
  return "code " + std::to_string(onnx_type);
}

std::string SupportedOnnxTypes() {
  std::string out;
  for (const auto& t : kTypes) {
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

}  // namespace slimpack::onnx_format
