// The part of a graph that computes some of its values from others. GPTQ's
// layer-by-layer calibration (quantize/layer_cut.h) runs one decoder layer
// at a time on values kept from the run of the layer before, instead of the
// whole model once per layer.
#ifndef SLIMPACK_IR_GRAPH_SLICE_H_
#define SLIMPACK_IR_GRAPH_SLICE_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::ir {

// A graph of the nodes of `graph` that `targets` need when the values in
// `given` are supplied. The walk back from the targets stops at `given`
// values, graph inputs and initializers; nodes keep their order.
//   inputs:  the graph inputs the slice reads (as declared), then the
//            `given` values it reads, sorted, untyped: a caller feeds what
//            an earlier run returned, which may be the f32 plan of an f16
//            value (runtime/widen_f16.h);
//   outputs: `targets`, in order, untyped;
//   initializers: those the slice reads (they share the bytes).
// InvalidArgument naming the value when a target, or a value the slice
// reads, is defined by nothing.
absl::StatusOr<Graph> SliceGraph(const Graph& graph, const std::vector<std::string>& targets,
                                 const std::set<std::string>& given);

// Which nodes of `graph` `targets` need (by node index): the walk back
// through producers stops at the values in `stop`, and at graph inputs,
// initializers and values nothing defines (SliceGraph reports those).
std::vector<bool> NodesNeeded(const Graph& graph, const std::vector<std::string>& targets,
                              const std::set<std::string>& stop);

// Whether each value of `graph` depends on any of `sources` (values or
// initializers): a node's outputs do when any value it reads does. The
// result holds exactly the dependent value names, `sources` included.
std::set<std::string> ValuesDependingOn(const Graph& graph,
                                        const std::set<std::string>& sources);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_GRAPH_SLICE_H_
