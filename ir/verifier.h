// Structural verifier for the graph IR, run after import and (under
// --verify-each) after every pass.
#ifndef SLIMPACK_IR_VERIFIER_H_
#define SLIMPACK_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::ir {

// Checks, recursively into subgraphs:
//  - every value is defined once (graph input, initializer or node output):
//    InvalidArgument naming the value and both definers;
//  - non-empty node names are unique: InvalidArgument naming the node;
//  - every node input and graph output is defined in the graph or an
//    enclosing scope: InvalidArgument naming the node and the input;
//  - the graph has no cycle: FailedPrecondition naming a node on it;
//  - every initializer's byte size matches dtype x shape: InvalidArgument
//    with expected and found sizes;
//  - every node has an op type;
//  - every quantized initializer's layout agrees with its scale / zero
//    point initializers of the same graph (ValidateQuantLayout,
//    ir/quant.h).
absl::Status VerifyGraph(const Graph& graph);
absl::Status VerifyModel(const Model& model);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_VERIFIER_H_
