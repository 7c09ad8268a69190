// ValueInfoProto <-> ir::ValueInfo: element type plus a shape whose dims are
// static (dim_value), symbolic (dim_param) or unknown (neither).
#ifndef SLIMPACK_FORMATS_ONNX_VALUE_INFO_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_VALUE_INFO_PROTO_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// A missing type gives dtype kUndefined and an unknown-rank shape (legal for
// subgraph inputs/outputs); a missing shape gives unknown rank; a negative
// dim_value is treated as unknown. Unimplemented for non-tensor types
// (sequence, map, optional, sparse) and element types the IR lacks (STRING,
// COMPLEX*), naming the value. InvalidArgument for an empty name.
absl::StatusOr<ir::ValueInfo> ValueInfoFromProto(
    const onnx::ValueInfoProto& proto);

// Inverse of ValueInfoFromProto. An undefined dtype with unknown rank writes
// no type at all.
void ValueInfoToProto(const ir::ValueInfo& info, onnx::ValueInfoProto* proto);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_VALUE_INFO_PROTO_H_
