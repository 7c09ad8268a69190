// eliminate-dead-nodes (see eliminate_dead_nodes.h).
#include "passes/cleanup/eliminate_dead_nodes.h"

#include <unordered_set>

#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {

absl::Status EliminateDeadNodesPass::Run(ir::Graph& graph,
                                         PassContext& context) const {
  ASSIGN_OR_RETURN(std::vector<size_t> order, graph.TopologicalOrder());
  std::unordered_set<std::string> live;
  for (const ir::ValueInfo& v : graph.outputs) live.insert(v.name);
  std::vector<bool> dead(graph.nodes.size(), true);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node& node = graph.nodes[*it];
    bool needed = false;
    for (const std::string& o : node.outputs) needed |= !o.empty() && live.count(o);
    if (!needed) continue;
    dead[*it] = false;
    for (const std::string& in : node.inputs) {
      if (!in.empty()) live.insert(in);
    }
    for (const auto& [attr_name, attr] : node.attributes) {
      std::vector<std::shared_ptr<ir::Graph>> subgraphs = attr.graphs;
      if (attr.g) subgraphs.push_back(attr.g);
      for (const auto& g : subgraphs) {
        for (const std::string& ref : g->OuterScopeReferences()) live.insert(ref);
      }
    }
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!dead[i]) continue;
    context.stats().nodes_matched++;
    for (const std::string& o : graph.nodes[i].outputs) {
      context.stats().bytes_saved += StaticByteSize(graph, o);
      graph.value_info.erase(o);
    }
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;

  std::vector<std::string> unused;
  for (const ir::Tensor& t : graph.initializers()) {
    if (!live.count(t.name) && FindConstant(graph, t.name) != nullptr) {
      unused.push_back(t.name);
      context.stats().bytes_saved += static_cast<int64_t>(t.data.size());
    }
  }
  for (const std::string& name : unused) graph.RemoveInitializer(name);
  if (removed > 0 || !unused.empty()) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
