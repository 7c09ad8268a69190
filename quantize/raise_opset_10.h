// Raises a graph from default-domain opset 9 to 10 in our IR, for static
// W8A8, whose integer operators (QuantizeLinear, QLinearConv,
// MatMulInteger) first exist at opset 10.
//
// Between 9 and 10 only these operators changed (onnx/defs, 1.12):
//   Slice   starts/ends/axes attributes -> inputs (rewritten: i64
//           initializers named after the node);
//   TopK    k attribute -> input K (rewritten: an i64 [1] initializer);
//   Dropout its mask output becomes bool (was the input's type): the
//           raise is refused while a mask is read;
//   MaxPool, AveragePool  new attributes whose defaults keep the old
//           meaning (ceil_mode 0, dilations 1);
//   Upsample  deprecated, same meaning.
// Every other operator means the same at 9 and 10.
#ifndef SLIMPACK_QUANTIZE_RAISE_OPSET_10_H_
#define SLIMPACK_QUANTIZE_RAISE_OPSET_10_H_

#include <string>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::passes {

// Why `graph` (opset 9) cannot be raised to 10 without changing what a
// node computes; empty when it can. Checks subgraphs too.
std::string OpsetTenHazard(const ir::Graph& graph);

// Rewrites the Slice and TopK nodes of `graph` and its subgraphs to their
// opset-10 form. InvalidArgument naming the node if an attribute is
// missing or malformed (nothing is changed then). Call only when
// OpsetTenHazard is empty.
absl::Status RaiseOpset9To10(ir::Graph& graph);

}  // namespace slimpack::passes

#endif  // SLIMPACK_QUANTIZE_RAISE_OPSET_10_H_
