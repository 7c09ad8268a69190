// ir::Graph -> GraphProto (nodes, attributes, subgraphs, initializers,
// value info), the inverse of graph_from_proto.
#ifndef SLIMPACK_FORMATS_ONNX_GRAPH_TO_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_GRAPH_TO_PROTO_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "formats/onnx/tensor_to_proto.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Writes `graph` into `proto`; tensors (initializers and tensor attributes,
// also inside subgraphs) are placed by `placement`. Errors name the node and
// attribute or the tensor.
absl::Status GraphToProto(const ir::Graph& graph,
                          const TensorPlacement& placement,
                          onnx::GraphProto* proto);

// Bytes of every tensor in `graph`, its attributes and subgraphs.
uint64_t TotalTensorBytes(const ir::Graph& graph);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_GRAPH_TO_PROTO_H_
