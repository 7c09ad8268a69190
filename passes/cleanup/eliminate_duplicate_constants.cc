// eliminate-duplicate-constants (see eliminate_duplicate_constants.h).
#include "passes/cleanup/eliminate_duplicate_constants.h"

#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

bool SameConstant(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.data.size() == b.data.size() &&
         (a.data.size() == 0 || std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
}

size_t ContentHash(const ir::Tensor& t) {
  std::string_view bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  size_t h = std::hash<std::string_view>()(bytes);
  h ^= static_cast<size_t>(t.dtype) * 0x9e3779b97f4a7c15ull;
  for (int64_t d : t.dims) h = h * 31 + static_cast<size_t>(d);
  return h;
}

}  // namespace

absl::Status EliminateDuplicateConstantsPass::Run(ir::Graph& graph,
                                                  PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  // Content hash -> candidate keepers (names), in initializer order.
  std::unordered_map<size_t, std::vector<std::string>> seen;
  // Scales and zero points are named by the quantized tensors' layouts;
  // merging one away would leave that name dangling.
  std::unordered_set<std::string> layout_refs;
  for (const ir::Tensor& t : graph.initializers()) {
    if (!t.quant.quantized()) continue;
    layout_refs.insert(t.quant.scale);
    layout_refs.insert(t.quant.zero_point);
  }
  std::vector<std::pair<std::string, std::string>> replace;  // dup -> keeper
  for (const ir::Tensor& t : graph.initializers()) {
    if (static_cast<int64_t>(t.data.size()) > options_.max_bytes) continue;
    if (t.quant.quantized() || layout_refs.count(t.name)) continue;
    if (FindConstant(graph, t.name) == nullptr || IsGraphOutput(graph, t.name)) continue;
    std::vector<std::string>& bucket = seen[ContentHash(t)];
    const ir::Tensor* keeper = nullptr;
    for (const std::string& k : bucket) {
      const ir::Tensor* kt = graph.FindInitializer(k);
      if (SameConstant(*kt, t)) {
        keeper = kt;
        break;
      }
    }
    if (keeper == nullptr) {
      bucket.push_back(t.name);
      continue;
    }
    bool subgraph_reader = false;
    for (size_t r : index.consumers[t.name]) subgraph_reader |= graph.nodes[r].HasSubgraphs();
    if (subgraph_reader) {
      context.Log("initializer '" + t.name + "': kept, duplicate of '" + keeper->name +
                  "' but read inside a subgraph");
      continue;
    }
    replace.emplace_back(t.name, keeper->name);
  }
  for (const auto& [dup, keeper] : replace) {
    context.stats().nodes_matched++;
    for (size_t r : index.consumers[dup]) {
      for (std::string& in : graph.nodes[r].inputs) {
        if (in == dup) in = keeper;
      }
      context.stats().nodes_rewritten++;
    }
    ir::Tensor* kt = graph.FindMutableInitializer(keeper);
    kt->provenance =
        ir::Provenance::Merge(kt->provenance, graph.FindInitializer(dup)->provenance);
    context.stats().bytes_saved += static_cast<int64_t>(graph.FindInitializer(dup)->data.size());
    graph.RemoveInitializer(dup);
    graph.value_info.erase(dup);
    context.MarkChanged();
  }
  return absl::OkStatus();
}

}  // namespace slimpack::passes
