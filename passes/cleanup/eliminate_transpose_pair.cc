// eliminate-transpose-pair (see eliminate_transpose_pair.h).
#include "passes/cleanup/eliminate_transpose_pair.h"

#include <algorithm>

#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

bool IsTranspose(const ir::Node& node) {
  return node.domain.empty() && node.op_type == "Transpose" && node.inputs.size() == 1 &&
         node.outputs.size() == 1;
}

// The perm of `t` (attribute, or reversal of a rank known from `graph`).
std::optional<std::vector<int64_t>> PermOf(const ir::Graph& graph, const ir::Node& t) {
  if (const ir::Attribute* a = t.FindAttribute("perm")) {
    if (a->kind != ir::Attribute::Kind::kInts) return std::nullopt;
    return a->ints;
  }
  int64_t rank = RankOf(graph, t.inputs[0]);
  if (rank < 0) return std::nullopt;
  std::vector<int64_t> perm;
  for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

bool IsPermutation(const std::vector<int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t v : p) {
    if (v < 0 || v >= static_cast<int64_t>(p.size()) || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

}  // namespace

absl::Status EliminateTransposePairPass::Run(ir::Graph& graph,
                                             PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n] || !IsTranspose(graph.nodes[n])) continue;
    std::optional<size_t> first_i = ProducerIndex(index, graph.nodes[n].inputs[0]);
    if (!first_i || dead[*first_i] || !IsTranspose(graph.nodes[*first_i])) continue;
    ir::Node& second = graph.nodes[n];
    const ir::Node& first = graph.nodes[*first_i];
    std::optional<std::vector<int64_t>> p1 = PermOf(graph, first);
    std::optional<std::vector<int64_t>> p2 = PermOf(graph, second);
    if (!p1 || !p2 || p1->size() != p2->size() || !IsPermutation(*p1) ||
        !IsPermutation(*p2)) {
      context.Log(Describe(second) + ": kept, perms of the pair are unknown or invalid");
      continue;
    }
    std::vector<int64_t> c(p2->size());
    bool identity = true;
    for (size_t j = 0; j < c.size(); ++j) {
      c[j] = (*p1)[(*p2)[j]];
      identity &= c[j] == static_cast<int64_t>(j);
    }
    const std::string x = first.inputs[0];
    const std::string t = first.outputs[0];
    const std::string y = second.outputs[0];
    bool t_single = HasSingleUse(graph, index, t);
    if (identity) {
      std::vector<size_t> readers = index.consumers[y];
      bool subgraph_reader = false;
      for (size_t r : readers) subgraph_reader |= graph.nodes[r].HasSubgraphs();
      if (IsGraphOutput(graph, y) || subgraph_reader) {
        context.Log(Describe(second) + ": kept, output '" + y +
                    "' is a graph output or read inside a subgraph");
        continue;
      }
      context.stats().nodes_matched++;
      for (size_t r : readers) {
        for (std::string& in : graph.nodes[r].inputs) {
          if (in == y) in = x;
        }
        index.consumers[x].push_back(r);
        // Provenance: the reader now stands where the pair was.
        context.stats().nodes_rewritten++;
      }
      context.stats().bytes_saved += StaticByteSize(graph, y);
      graph.value_info.erase(y);
      dead[n] = true;
      auto& ts = index.consumers[t];
      ts.erase(std::remove(ts.begin(), ts.end(), n), ts.end());
      if (t_single) {
        context.stats().bytes_saved += StaticByteSize(graph, t);
        graph.value_info.erase(t);
        dead[*first_i] = true;
        auto& xs = index.consumers[x];
        xs.erase(std::remove(xs.begin(), xs.end(), *first_i), xs.end());
      }
      continue;
    }
    if (!t_single) {
      context.Log(Describe(second) + ": kept, output '" + t + "' of " + Describe(first) +
                  " has other readers");
      continue;
    }
    context.stats().nodes_matched++;
    context.stats().bytes_saved += StaticByteSize(graph, t);
    graph.value_info.erase(t);
    second.inputs[0] = x;
    second.attributes["perm"] = ir::Attribute::Ints(c);
    second.provenance = ir::Provenance::Merge(first.provenance, second.provenance);
    index.consumers[x].push_back(n);
    dead[*first_i] = true;
    context.stats().nodes_rewritten++;
    context.MarkChanged();
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
