// Maps ONNX TensorProto.DataType codes to ir::DType and back.
#ifndef SLIMPACK_FORMATS_ONNX_DTYPE_CONVERSION_H_
#define SLIMPACK_FORMATS_ONNX_DTYPE_CONVERSION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "ir/dtype.h"

namespace slimpack::onnx_format {

// ONNX codes for the packed 4-bit types (added in ONNX 1.16; not in the
// 1.12 enum, but TensorProto.data_type is a plain int32 so they survive).
inline constexpr int32_t kOnnxUint4 = 21;
inline constexpr int32_t kOnnxInt4 = 22;

// nullopt for UNDEFINED and for types the IR cannot hold (STRING, COMPLEX*,
// FLOAT8*, unknown codes).
std::optional<ir::DType> DTypeFromOnnx(int32_t onnx_type);
// 0 (UNDEFINED) for ir::DType::kUndefined.
int32_t DTypeToOnnx(ir::DType dtype);
// "FLOAT", "STRING", "INT4", or "code 99" for unknown codes.
std::string OnnxTypeName(int32_t onnx_type);
// Comma-separated ONNX names of every type DTypeFromOnnx accepts.
std::string SupportedOnnxTypes();

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_DTYPE_CONVERSION_H_
