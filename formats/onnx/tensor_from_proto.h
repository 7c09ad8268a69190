// Converts an ONNX TensorProto (raw_data, typed fields or external data) to
// an ir::Tensor after validating data type, dims and byte counts.
#ifndef SLIMPACK_FORMATS_ONNX_TENSOR_FROM_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_TENSOR_FROM_PROTO_H_

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "formats/onnx/import_context.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// raw_data becomes a zero-copy view owned by ctx.proto_owner; typed fields
// (float_data, int32_data, int64_data, double_data, uint64_data) become owned
// little-endian bytes; external data is resolved through ctx.external_data.
// The tensor's provenance is the file (and offset, for external data).
//
// Errors do not name the tensor (callers know whether it is an initializer
// or an attribute and add that):
//  - InvalidArgument: data type missing/UNDEFINED, negative dim, element or
//    byte count overflow, raw_data size != numel * element size, both raw
//    and typed (or external and embedded) data, typed data in the wrong
//    field, wrong value count or out-of-range values, no data at all;
//  - Unimplemented: STRING/COMPLEX/FLOAT8 types, segments, typed 4-bit data;
//  - external data errors from ExternalDataResolver::Resolve.
absl::StatusOr<ir::Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                           const ImportContext& ctx);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_TENSOR_FROM_PROTO_H_
