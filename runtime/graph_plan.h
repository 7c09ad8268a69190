// Execution plan of one graph (and, recursively, of its subgraphs): node
// order, value slots, kernels, and which slots die after which node.
#ifndef SLIMPACK_RUNTIME_GRAPH_PLAN_H_
#define SLIMPACK_RUNTIME_GRAPH_PLAN_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/kernel_registry.h"
#include "runtime/node_cache.h"
#include "runtime/rt_tensor.h"
#include "ir/graph.h"

namespace slimpack::runtime {

struct NodeStep {
  const ir::Node* node = nullptr;
  KernelFn fn = nullptr;
  std::vector<int> inputs;   // slot per input, -1 when omitted
  // Per input: true when it is an initializer no graph input overrides, so
  // its value is the same on every run (KernelContext::input_is_constant).
  std::vector<bool> constant_inputs;
  std::shared_ptr<NodeCache> cache;  // sharing its plan's CacheBudget
  std::vector<int> outputs;  // slot per output, -1 when unnamed
  std::vector<int> release_after;  // slots whose last reader is this node
  // Per input: its slot is released after this node and read by no other
  // input of it, so the kernel may write its output into that value's
  // buffer (KernelContext::AllocateUninitializedOrReuse).
  std::vector<bool> last_reader;
};

struct GraphPlan {
  const ir::Graph* graph = nullptr;
  std::unordered_map<std::string, int> slot_of;
  int num_slots = 0;
  std::vector<std::pair<int, RtTensor>> constants;  // initializers
  // Graph inputs: name, slot, and whether an initializer provides a default.
  struct Input {
    std::string name;
    int slot;
    bool has_default;
    const ir::ValueInfo* info;
  };
  std::vector<Input> inputs;
  // Values read from enclosing graphs, filled when a subgraph starts.
  std::vector<std::pair<std::string, int>> outer_refs;
  std::vector<int> outputs;
  std::vector<std::string> output_names;
  std::vector<NodeStep> steps;
  // Plans of the subgraphs of this graph's nodes.
  std::map<const ir::Graph*, std::unique_ptr<GraphPlan>> subgraphs;
};

// Builds the plan for `graph`. `outer_names` are the values visible from
// enclosing scopes (empty for the main graph).
absl::StatusOr<std::unique_ptr<GraphPlan>> BuildGraphPlan(
    const ir::Graph& graph, const KernelRegistry& kernels,
    const std::set<std::string>& outer_names);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_GRAPH_PLAN_H_
