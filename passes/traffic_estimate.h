// Estimated bytes of intermediate activations a graph reads and writes per
// inference: the memory traffic that fusion exists to cut. Weights
// (initializers) are not counted; graph inputs count as reads, every node
// output as a write, every activation input of a node as a read.
#ifndef SLIMPACK_PASSES_TRAFFIC_ESTIMATE_H_
#define SLIMPACK_PASSES_TRAFFIC_ESTIMATE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::passes {

struct TrafficEstimate {
  int64_t nodes = 0;          // nodes executed (subgraph nodes included)
  int64_t bytes_read = 0;     // activation bytes read by all nodes
  int64_t bytes_written = 0;  // bytes of all node outputs
  int64_t total() const { return bytes_read + bytes_written; }
};

// Shapes are made concrete by running the graph once through the
// interpreter (built-in plus fused kernels) on zero-filled inputs whose
// symbolic dims are `symbolic_dim`, so every value's size is known even
// where the file carries no value_info. `opset` is the model's
// default-domain opset. Errors are the interpreter's (unsupported op,
// missing input), naming the node.
absl::StatusOr<TrafficEstimate> EstimateActivationTraffic(
    const ir::Graph& graph, int64_t opset, int64_t symbolic_dim = 1);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_TRAFFIC_ESTIMATE_H_
