#include "quantize/layer_cut.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/status/status.h"
#include "ir/graph_slice.h"

namespace slimpack::quantize {
namespace {

bool ReadsAny(const ir::Node& n, const std::set<std::string>& values) {
  for (const std::string& r : ir::NodeReads(n)) {
    if (values.count(r)) return true;
  }
  return false;
}

struct Producers {
  std::unordered_map<std::string, size_t> of;  // value -> node index
  explicit Producers(const ir::Graph& g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& o : g.nodes[i].outputs) {
        if (!o.empty()) of.emplace(o, i);
      }
    }
  }
  std::optional<size_t> Find(const std::string& v) const {
    auto it = of.find(v);
    if (it == of.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace

std::vector<std::string> OutputsOfNodesReading(const ir::Graph& graph,
                                               const std::vector<std::string>& weights) {
  const std::set<std::string> w(weights.begin(), weights.end());
  std::vector<std::string> out;
  for (const ir::Node& n : graph.nodes) {
    if (!ReadsAny(n, w)) continue;
    for (const std::string& o : n.outputs) {
      if (!o.empty()) out.push_back(o);
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<std::string>>> CachedValuesPerGroup(
    const ir::Graph& graph, const std::vector<std::vector<std::string>>& groups) {
  const Producers producers(graph);
  std::set<std::string> all_weights;
  for (const auto& ws : groups) all_weights.insert(ws.begin(), ws.end());
  std::vector<std::vector<std::string>> cached(groups.size());
  std::set<std::string> earlier;  // weights of groups < g
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<std::string> targets = OutputsOfNodesReading(graph, groups[g]);
    if (targets.empty() && !groups[g].empty()) {
      return absl::InvalidArgumentError("weight '" + groups[g][0] +
                                        "' is read by no node of graph '" + graph.name + "'");
    }
    if (g > 0) {
      const std::vector<bool> needed = ir::NodesNeeded(graph, targets, {});
      const std::set<std::string> own(groups[g].begin(), groups[g].end());
      const std::set<std::string> after_own = ir::ValuesDependingOn(graph, own);
      const std::set<std::string> tainted = ir::ValuesDependingOn(graph, earlier);
      // Candidates: what the nodes depending on this group's weights read
      // from needed nodes that do not.
      std::set<std::string> keep;
      for (size_t i = 0; i < graph.nodes.size(); ++i) {
        if (!needed[i]) continue;
        const ir::Node& n = graph.nodes[i];
        const bool own_part = std::any_of(n.outputs.begin(), n.outputs.end(),
                                          [&](const std::string& o) { return after_own.count(o); });
        if (!own_part) continue;
        for (const std::string& r : ir::NodeReads(n)) {
          const std::optional<size_t> p = producers.Find(r);
          if (p && needed[*p] && !after_own.count(r) && tainted.count(r)) keep.insert(r);
        }
      }
      // Latest first: a value recomputable from the others without reading
      // any group's weight is dropped (its recomputation is cheap and its
      // cache would cost as much as the residual stream's).
      std::vector<std::string> order(keep.begin(), keep.end());
      std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
        return *producers.Find(a) > *producers.Find(b);
      });
      for (const std::string& v : order) {
        std::set<std::string> others = keep;
        others.erase(v);
        const std::vector<bool> redo = ir::NodesNeeded(graph, {v}, others);
        bool reads_weight = false;
        for (size_t i = 0; i < graph.nodes.size() && !reads_weight; ++i) {
          reads_weight = redo[i] && ReadsAny(graph.nodes[i], all_weights);
        }
        if (!reads_weight) keep.erase(v);
      }
      cached[g].assign(keep.begin(), keep.end());
      // The runs must be able to start from these values.
      std::set<std::string> given(keep.begin(), keep.end());
      auto slice = ir::SliceGraph(graph, targets, given);
      if (!slice.ok()) return slice.status();
    }
    earlier.insert(groups[g].begin(), groups[g].end());
  }
  return cached;
}

std::vector<std::string> CaptureTargets(const ir::Graph& graph,
                                        const std::vector<calibration::LinearLayer>& linears,
                                        const std::vector<std::string>& weights) {
  const ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<std::string> targets;
  std::set<std::string> seen;
  auto add = [&](const std::string& v) {
    if (seen.insert(v).second) targets.push_back(v);
  };
  for (const std::string& w : weights) {
    auto l = std::find_if(linears.begin(), linears.end(),
                          [&](const calibration::LinearLayer& x) { return x.weight == w; });
    if (l != linears.end() && index.producer.count(l->input)) {
      add(l->input);
      continue;
    }
    // Fed to the run, or no linear's weight (the capture names it).
    for (const std::string& v : OutputsOfNodesReading(graph, {w})) add(v);
  }
  return targets;
}

}  // namespace slimpack::quantize
