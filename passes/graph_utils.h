// Small queries and edits shared by the passes: constants, use counts,
// fresh names, node removal, committing a fusion.
#ifndef SLIMPACK_PASSES_GRAPH_UTILS_H_
#define SLIMPACK_PASSES_GRAPH_UTILS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace slimpack::passes {

// The initializer `name` if it is a true constant: an initializer that is
// not also a graph input (inputs may override initializers at run time).
const ir::Tensor* FindConstant(const ir::Graph& graph, const std::string& name);
// A one-element f32/f64/i32/i64/u8/bool constant as double.
std::optional<double> ConstantScalar(const ir::Graph& graph,
                                     const std::string& name);
// All elements of an f32 constant.
std::optional<std::vector<float>> ConstantFloats(const ir::Graph& graph,
                                                 const std::string& name);
// All elements of an i32/i64 constant.
std::optional<std::vector<int64_t>> ConstantInts(const ir::Graph& graph,
                                                 const std::string& name);

bool IsGraphOutput(const ir::Graph& graph, const std::string& value);
// Readers of `value`: consuming nodes plus one per graph-output use.
size_t UseCount(const ir::Graph& graph, const ir::UseDefIndex& index,
                const std::string& value);
// True when `value` is read by exactly one node and is not a graph output,
// so the pattern that reads it may absorb its producer.
bool HasSingleUse(const ir::Graph& graph, const ir::UseDefIndex& index,
                  const std::string& value);
// The node producing `value`, or null (graph input, initializer, unknown).
const ir::Node* ProducerOf(const ir::Graph& graph, const ir::UseDefIndex& index,
                           const std::string& value);
std::optional<size_t> ProducerIndex(const ir::UseDefIndex& index,
                                    const std::string& value);

// A value/initializer name not yet used anywhere in `graph`: `base`, or
// `base_1`, `base_2`, ...
std::string UniqueValueName(const ir::Graph& graph, const std::string& base);
// A tensor owning a copy of `values`.
ir::Tensor MakeF32Tensor(std::string name, std::vector<int64_t> dims,
                         const std::vector<float>& values);

// Byte size of `value` when its dtype and shape are statically known
// (value_info / inputs / outputs), else 0.
int64_t StaticByteSize(const ir::Graph& graph, const std::string& value);

// Removes the nodes whose `dead` flag is set, keeping the others' order.
// Returns how many were removed.
int64_t EraseNodes(ir::Graph& graph, const std::vector<bool>& dead);

// Commits one match of a fusion pass: `fused` takes the place of the root
// node graph.nodes[root] (which keeps its output name), every other node in
// `matched` is marked dead, its output's value_info dropped and its static
// size counted as bytes saved. `fused` gets the provenance of all `matched`
// nodes merged in the order given, root included wherever it appears
// there (an absent root is merged last). Counts one rewritten node.
void ReplaceWithFused(ir::Graph& graph, size_t root,
                      const std::vector<size_t>& matched, ir::Node fused,
                      std::vector<bool>& dead, PassContext& context);
// Ends a fusion pass: erases the dead nodes, counts them as removed and
// marks the graph changed when any were.
void EraseFusedNodes(ir::Graph& graph, const std::vector<bool>& dead,
                     PassContext& context);

// The int attribute `name` of `node`, or `def` (ir::Node::IntAttrOr).
inline int64_t IntAttrOr(const ir::Node& node, const std::string& name, int64_t def) {
  return node.IntAttrOr(name, def);
}
float FloatAttrOr(const ir::Node& node, const std::string& name, float def);

// Index of the live default-domain `op_type` node producing `value`, if
// `value` is read exactly once (so a fusion may absorb that node).
std::optional<size_t> SingleUseProducer(const ir::Graph& graph,
                                        const ir::UseDefIndex& index,
                                        const std::vector<bool>& dead,
                                        const std::string& value,
                                        std::string_view op_type);
// True when `name` is a one-element constant within `rel_tol` of `want`.
bool IsScalarNear(const ir::Graph& graph, const std::string& name, double want,
                  double rel_tol);

// The reduced axes of a Reduce* node (attribute, or constant input 1).
std::optional<std::vector<int64_t>> ReduceAxes(const ir::Graph& graph,
                                               const ir::Node& reduce);
// Turns `axes` into the first normalized axis (negative) when they are the
// trailing contiguous axes of a rank-`rank` tensor (rank < 0: unknown, then
// only negative axes are accepted).
std::optional<int64_t> TrailingAxis(std::vector<int64_t> axes, int64_t rank);
// Rank of `value` if known, else -1.
int64_t RankOf(const ir::Graph& graph, const std::string& value);

// For a binary node: the input produced by a live single-use default-domain
// `op_type` node (its index in `producer`) and the other input.
bool SplitOperands(const ir::Graph& graph, const ir::UseDefIndex& index,
                   const std::vector<bool>& dead, const ir::Node& node,
                   std::string_view op_type, size_t& producer,
                   std::string& other);

// Why raising the model's default-domain opset from `from` to `to` would
// change the meaning of a node already in `graph` (empty when it would
// not): ops whose inputs or semantics changed in between, e.g. Unsqueeze
// and ReduceSum take axes as an input from opset 13, Softmax stops
// coercing to 2-D at 13. Checks the top-level graph and subgraphs.
std::string OpsetRaiseHazard(const ir::Graph& graph, int64_t from, int64_t to);

// "node 'conv1' (Conv)" for messages.
std::string Describe(const ir::Node& node);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_GRAPH_UTILS_H_
