#include "ir/graph_slice.h"

#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"

namespace slimpack::ir {

std::vector<bool> NodesNeeded(const Graph& graph, const std::vector<std::string>& targets,
                              const std::set<std::string>& stop) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& o : graph.nodes[i].outputs) {
      if (!o.empty()) producer.emplace(o, i);
    }
  }
  std::vector<bool> need(graph.nodes.size(), false);
  std::vector<std::string> stack(targets.begin(), targets.end());
  while (!stack.empty()) {
    const std::string v = std::move(stack.back());
    stack.pop_back();
    if (stop.count(v) || graph.FindInitializer(v) != nullptr) continue;
    auto it = producer.find(v);
    if (it == producer.end() || need[it->second]) continue;
    need[it->second] = true;
    for (std::string& r : NodeReads(graph.nodes[it->second])) stack.push_back(std::move(r));
  }
  return need;
}

absl::StatusOr<Graph> SliceGraph(const Graph& graph, const std::vector<std::string>& targets,
                                 const std::set<std::string>& given) {
  std::unordered_set<std::string> graph_inputs, produced;
  for (const ValueInfo& v : graph.inputs) graph_inputs.insert(v.name);
  for (const Node& n : graph.nodes) produced.insert(n.outputs.begin(), n.outputs.end());
  // A graph input is a source even when a node also writes it; given values too.
  std::set<std::string> stop = given;
  stop.insert(graph_inputs.begin(), graph_inputs.end());
  const std::vector<bool> keep = NodesNeeded(graph, targets, stop);

  // Every value the slice reads, classified.
  std::unordered_set<std::string> read_inputs, read_given, read_initializers;
  auto classify = [&](const std::string& v) -> absl::Status {
    if (given.count(v)) {
      read_given.insert(v);
    } else if (graph_inputs.count(v)) {
      read_inputs.insert(v);
      // An input with an initializer of its name defaults to it.
      if (graph.FindInitializer(v) != nullptr) read_initializers.insert(v);
    } else if (graph.FindInitializer(v) != nullptr) {
      read_initializers.insert(v);
    } else if (!produced.count(v)) {
      return absl::InvalidArgumentError("graph '" + graph.name + "': value '" + v +
                                        "' is needed but no node, input or initializer "
                                        "defines it");
    }
    return absl::OkStatus();
  };
  for (const std::string& t : targets) {
    absl::Status s = classify(t);
    if (!s.ok()) return s;
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!keep[i]) continue;
    for (const std::string& r : NodeReads(graph.nodes[i])) {
      absl::Status s = classify(r);
      if (!s.ok()) return s;
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
