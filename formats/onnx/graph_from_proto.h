// GraphProto -> ir::Graph: inputs, initializers, nodes (Constant nodes
// become initializers), outputs and value_info, recursively into subgraphs.
#ifndef SLIMPACK_FORMATS_ONNX_GRAPH_FROM_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_GRAPH_FROM_PROTO_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "formats/onnx/import_context.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Subgraphs nested deeper than this are rejected (bad-inputs.md #12);
// protobuf's own recursion limit would stop at about 33 levels.
inline constexpr int kMaxSubgraphDepth = 16;

// Converts `proto`; `depth` is 0 for the main graph. Errors name the
// initializer, node (and attribute) or value involved; subgraph errors are
// prefixed with the node and attribute that hold the subgraph:
//  - InvalidArgument: duplicate initializer, malformed Constant node,
//    duplicate attribute name, nesting deeper than kMaxSubgraphDepth;
//  - Unimplemented: sparse initializers, unsupported types or attributes;
//  - tensor/external data errors from TensorFromProto.
// Duplicate definitions and undefined inputs are left to ir::VerifyGraph.
absl::StatusOr<ir::Graph> GraphFromProto(const onnx::GraphProto& proto,
                                         const ImportContext& ctx,
                                         int depth = 0);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_GRAPH_FROM_PROTO_H_
