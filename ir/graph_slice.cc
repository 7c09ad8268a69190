#include "ir/graph_slice.h"

#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"

namespace slimpack::ir {

absl::StatusOr<Graph> SliceGraph(const Graph& graph, const std::vector<std::string>& targets,
                                 const std::set<std::string>& given) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& o : graph.nodes[i].outputs) {
      if (!o.empty()) producer.emplace(o, i);
    }
  }
  std::unordered_set<std::string> graph_inputs;
  for (const ValueInfo& v : graph.inputs) graph_inputs.insert(v.name);

  std::vector<bool> keep(graph.nodes.size(), false);
  std::unordered_set<std::string> read_inputs, read_given, read_initializers, seen;
  std::vector<std::string> stack(targets.begin(), targets.end());
  while (!stack.empty()) {
    const std::string v = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (given.count(v)) {
      read_given.insert(v);
    } else if (graph_inputs.count(v)) {
      read_inputs.insert(v);
      // An input with an initializer of its name defaults to it.
      if (graph.FindInitializer(v) != nullptr) read_initializers.insert(v);
    } else if (graph.FindInitializer(v) != nullptr) {
      read_initializers.insert(v);
    } else if (auto it = producer.find(v); it != producer.end()) {
      if (keep[it->second]) continue;
      keep[it->second] = true;
      for (std::string& r : NodeReads(graph.nodes[it->second])) stack.push_back(std::move(r));
    } else {
      return absl::InvalidArgumentError("graph '" + graph.name + "': value '" + v +
                                        "' is needed but no node, input or initializer "
                                        "defines it");
    }
  }

  Graph out;
  out.name = graph.name;
  for (const ValueInfo& v : graph.inputs) {
    if (read_inputs.count(v.name)) out.inputs.push_back(v);
  }
  for (const std::string& g : given) {  // std::set: sorted
    if (read_given.count(g)) out.inputs.push_back(ValueInfo{g, DType::kUndefined, Shape()});
  }
  for (const std::string& t : targets) {
    out.outputs.push_back(ValueInfo{t, DType::kUndefined, Shape()});
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (keep[i]) out.nodes.push_back(graph.nodes[i]);
  }
  for (const Tensor& t : graph.initializers()) {
    if (read_initializers.count(t.name)) {
      absl::Status s = out.AddInitializer(t);
      if (!s.ok()) return s;
    }
  }
  return out;
}

std::set<std::string> ValuesDependingOn(const Graph& graph,
                                        const std::set<std::string>& sources) {
  std::set<std::string> dependent = sources;
  // Nodes are not assumed sorted: sweep until nothing changes (a sorted
  // graph settles in one sweep and confirms in a second).
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : graph.nodes) {
      bool reads = false;
      for (const std::string& r : NodeReads(n)) reads = reads || dependent.count(r) > 0;
      if (!reads) continue;
      for (const std::string& o : n.outputs) {
        if (!o.empty() && dependent.insert(o).second) changed = true;
      }
    }
  }
  return dependent;
}

}  // namespace slimpack::ir
