#include "runtime/graph_plan.h"

#include <algorithm>
#include <unordered_set>

#include "ir/quant.h"
#include "runtime/kernels/packed_kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

// Collects (op, node) for every node without a kernel, recursively.
void FindUnsupported(const ir::Graph& graph, const KernelRegistry& kernels,
                     std::vector<std::string>* missing) {
  for (const ir::Node& n : graph.nodes) {
    if (kernels.Find(n.domain, n.op_type) == nullptr) {
      const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
      missing->push_back((default_domain ? "" : n.domain + ":") + n.op_type +
                         " (node '" + n.name + "')");
    }
    for (const auto& [name, a] : n.attributes) {
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
        FindUnsupported(*a.g, kernels, missing);
      }
      for (const auto& g : a.graphs) {
        if (g) FindUnsupported(*g, kernels, missing);
      }
    }
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += v[i];
  }
  return s;
}

std::string NodeLabel(const ir::Node& n) {
  return "node '" + n.name + "' (" + n.op_type + ")";
}

// A quantized weight runs as the f32 values it stands for, computed once
// here with the spec's exact formula (ir::DequantizeInto), so every kernel
// sees the same numbers a dequantize-on-load runtime would. Its scale and
// zero point stay bound as ordinary initializers.
absl::StatusOr<RtTensor> DequantizedInitializer(const ir::Graph& graph,
                                                const ir::Tensor& t) {
  const ir::Tensor* scale =
      t.quant.scale.empty() ? nullptr : graph.FindInitializer(t.quant.scale);
  const ir::Tensor* zp = t.quant.zero_point.empty()
                             ? nullptr
                             : graph.FindInitializer(t.quant.zero_point);
  RETURN_IF_ERROR(ir::ValidateQuantLayout(t, scale, zp));
  ASSIGN_OR_RETURN(RtTensor out, RtTensor::Allocate(ir::DType::kF32, t.dims));
  RETURN_IF_ERROR(ir::DequantizeInto(t, scale, zp, out.mutable_data<float>()));
  return out;
}

// Names of the quantized initializers that only slimpack.MatMulQ (input 1)
// and slimpack.GatherQ (input 0) read: those kernels dequantize the slices
// they need (runtime/kernels/packed_kernels.h), so the weight is bound packed, as a
// zero-copy view like any other initializer, and its f32 values are never
// materialised. Any other reader (including a subgraph or a graph output)
// keeps today's dequantize-at-bind behaviour.
std::set<std::string> PackedOnlyInitializers(const ir::Graph& graph) {
  std::set<std::string> packed_use, other_use;
  for (const ir::Node& n : graph.nodes) {
    const bool slimpack = n.domain == "slimpack";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const bool packed = slimpack && ((n.op_type == kMatMulQOp && i == 1) ||
                                       (n.op_type == kGatherQOp && i == 0));
      (packed ? packed_use : other_use).insert(n.inputs[i]);
    }
    if (n.HasSubgraphs()) {
      for (const auto& [name, a] : n.attributes) {
        if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
          for (const std::string& r : a.g->OuterScopeReferences()) other_use.insert(r);
        }
        for (const auto& g : a.graphs) {
          if (!g) continue;
          for (const std::string& r : g->OuterScopeReferences()) other_use.insert(r);
        }
      }
    }
  }
  for (const ir::ValueInfo& v : graph.outputs) other_use.insert(v.name);
  std::set<std::string> out;
  for (const std::string& name : packed_use) {
    if (!other_use.count(name)) out.insert(name);
  }
  return out;
}

// The quantized weight bound as stored (i8/u8/i4/u4), after the same layout
// check the dequantizing path makes.
absl::StatusOr<RtTensor> PackedInitializer(const ir::Graph& graph, const ir::Tensor& t) {
  const ir::Tensor* scale = graph.FindInitializer(t.quant.scale);
  const ir::Tensor* zp = t.quant.zero_point.empty()
                             ? nullptr
                             : graph.FindInitializer(t.quant.zero_point);
  RETURN_IF_ERROR(ir::ValidateQuantLayout(t, scale, zp));
  if (t.quant.kind == ir::QuantKind::kGgmlBlocks) {
    if (t.dims.size() != 2) {
      return absl::InvalidArgumentError("tensor '" + t.name + "': a packed ggml_blocks weight "
                                        "must be 2-d, got rank " + std::to_string(t.dims.size()));
    }
    // Bound as what the bytes are: [rows, row bytes] of u8 (the kernels
    // read the logical row length from the block type).
    ASSIGN_OR_RETURN(const uint64_t want, t.ExpectedBytes());
    if (want != t.data.size()) {
      return absl::InvalidArgumentError("tensor '" + t.name + "' needs " + std::to_string(want) +
                                        " bytes of blocks, found " +
                                        std::to_string(t.data.size()));
    }
    ir::Tensor bytes = t;
    bytes.quant = ir::QuantLayout{};
    bytes.dims = {t.dims[0], static_cast<int64_t>(*ir::GgmlRowBytes(
                                 t.quant.block_type, static_cast<uint64_t>(t.dims[1])))};
    return RtTensor::FromIr(bytes);
  }
  return RtTensor::FromIr(t);
}

// The names a subgraph may read from enclosing graphs: what its parent had
// defined before the node that owns it, then what the parent could see, up
// to the caller's `outer_names`. A subgraph is planned while its parent
// stands at the owning node, so each link points at the parent's live
// `in_scope` set instead of a copy: copying every visible name for every
// node made planning quadratic (a 30,000-node chain took 40 s).
struct Scope {
  const std::unordered_set<std::string>* names = nullptr;  // null at the top
  const Scope* parent = nullptr;
  const std::set<std::string>* outer_names = nullptr;  // the caller's, at the top

  bool Contains(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (s->names != nullptr && s->names->count(name)) return true;
      if (s->outer_names != nullptr && s->outer_names->count(name)) return true;
    }
    return false;
  }
};

absl::StatusOr<std::unique_ptr<GraphPlan>> BuildPlan(const ir::Graph& graph,
                                                     const KernelRegistry& kernels,
                                                     const Scope& outer, bool check_ops) {
  if (check_ops) {
    // Check ops first, over every nested graph, so the user sees the whole
    // list of what is missing at once.
    std::vector<std::string> missing;
    FindUnsupported(graph, kernels, &missing);
    if (!missing.empty()) {
      return absl::UnimplementedError(
          "graph '" + graph.name + "' has " + std::to_string(missing.size()) +
          " node(s) with unsupported ops: " + Join(missing) +
          ". Supported ops: " + Join(kernels.SupportedOps()));
    }
  }
  auto plan = std::make_unique<GraphPlan>();
  plan->graph = &graph;
  auto new_slot = [&](const std::string& name) {
    auto [it, inserted] = plan->slot_of.emplace(name, plan->num_slots);
    if (inserted) ++plan->num_slots;
    return it->second;
  };
  // Names defined so far in this graph (only looked up, never iterated).
  std::unordered_set<std::string> in_scope;
  const std::set<std::string> packed = PackedOnlyInitializers(graph);
  for (const ir::Tensor& t : graph.initializers()) {
    auto rt = !t.quant.quantized()    ? RtTensor::FromIr(t)
              : packed.count(t.name) ? PackedInitializer(graph, t)
                                     : DequantizedInitializer(graph, t);
    if (!rt.ok()) return Annotate(rt.status(), "initializer");
    plan->constants.emplace_back(new_slot(t.name), *std::move(rt));
    in_scope.insert(t.name);
  }
  for (const ir::ValueInfo& v : graph.inputs) {
    const bool has_default = in_scope.count(v.name) > 0;
    plan->inputs.push_back({v.name, new_slot(v.name), has_default, &v});
    in_scope.insert(v.name);
  }
  // Initializer slots whose value no graph input can replace.
  std::unordered_set<int> fixed;
  for (const auto& [slot, t] : plan->constants) fixed.insert(slot);
  for (const GraphPlan::Input& in : plan->inputs) fixed.erase(in.slot);
  ASSIGN_OR_RETURN(std::vector<size_t> order, graph.TopologicalOrder());
  const auto budget = std::make_shared<CacheBudget>();
  // Outer-scope references become slots filled when the subgraph starts.
  for (const std::string& r : graph.OuterScopeReferences()) {
    if (!outer.Contains(r)) continue;  // reported below as undefined
    plan->outer_refs.emplace_back(r, new_slot(r));
    in_scope.insert(r);
  }
  for (size_t idx : order) {
    const ir::Node& n = graph.nodes[idx];
    NodeStep step;
    step.node = &n;
    step.cache = std::make_shared<NodeCache>(budget);
    step.fn = kernels.Find(n.domain, n.op_type);
    if (step.fn == nullptr) {
      return absl::UnimplementedError(NodeLabel(n) + " has no kernel");
    }
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        step.constant_inputs.push_back(false);
        continue;
      }
      if (!in_scope.count(in)) {
        return absl::InvalidArgumentError(
            NodeLabel(n) + " reads '" + in +
            "', which no graph input, initializer or earlier node defines");
      }
      step.inputs.push_back(plan->slot_of.at(in));
      step.constant_inputs.push_back(fixed.count(step.inputs.back()) > 0);
    }
    // Subgraphs see everything visible here: this graph's names so far,
    // then the enclosing scopes.
    const Scope visible{&in_scope, &outer, nullptr};
    for (const auto& [name, a] : n.attributes) {
      std::vector<const ir::Graph*> subs;
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) subs.push_back(a.g.get());
      for (const auto& g : a.graphs) {
        if (g) subs.push_back(g.get());
      }
      for (const ir::Graph* g : subs) {
        auto sub = BuildPlan(*g, kernels, visible, /*check_ops=*/false);
        if (!sub.ok()) {
          return Annotate(sub.status(), NodeLabel(n) + " attribute '" + name + "'");
        }
        plan->subgraphs[g] = *std::move(sub);
      }
    }
    for (const std::string& out : n.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      if (in_scope.count(out)) {
        return absl::InvalidArgumentError(NodeLabel(n) + " writes '" + out +
                                          "', which is already defined");
      }
      step.outputs.push_back(new_slot(out));
      in_scope.insert(out);
    }
    plan->steps.push_back(std::move(step));
  }
  for (const ir::ValueInfo& v : graph.outputs) {
    if (!in_scope.count(v.name)) {
      return absl::InvalidArgumentError("graph '" + graph.name + "' output '" + v.name +
                                        "' is never defined");
    }
    plan->outputs.push_back(plan->slot_of.at(v.name));
    plan->output_names.push_back(v.name);
  }

  // Release plan: a slot dies after the last step that reads it (subgraph
  // reads count for the node that owns the subgraph). Constants, graph
  // outputs and outer references are never released here.
  std::vector<int> last_use(plan->num_slots, -1);
  std::vector<bool> pinned(plan->num_slots, false);
  for (const auto& [slot, t] : plan->constants) pinned[slot] = true;
  for (int slot : plan->outputs) pinned[slot] = true;
  for (const auto& [name, slot] : plan->outer_refs) pinned[slot] = true;
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    const NodeStep& step = plan->steps[s];
    for (int slot : step.inputs) {
      if (slot >= 0) last_use[slot] = static_cast<int>(s);
    }
    for (int slot : step.outputs) {
      if (slot >= 0 && last_use[slot] < static_cast<int>(s)) last_use[slot] = static_cast<int>(s);
    }
    for (const auto& [name, a] : step.node->attributes) {
      std::vector<const ir::Graph*> subs;
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) subs.push_back(a.g.get());
      for (const auto& g : a.graphs) {
        if (g) subs.push_back(g.get());
      }
      for (const ir::Graph* g : subs) {
        for (const auto& [ref, ref_slot] : plan->subgraphs.at(g)->outer_refs) {
          auto it = plan->slot_of.find(ref);
          if (it != plan->slot_of.end()) last_use[it->second] = static_cast<int>(s);
        }
      }
    }
  }
  for (int slot = 0; slot < plan->num_slots; ++slot) {
    if (!pinned[slot] && last_use[slot] >= 0) {
      plan->steps[last_use[slot]].release_after.push_back(slot);
    }
  }
  for (NodeStep& step : plan->steps) {
    step.last_reader.assign(step.inputs.size(), false);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int slot = step.inputs[i];
      if (slot < 0) continue;
      const bool released = std::find(step.release_after.begin(), step.release_after.end(),
                                      slot) != step.release_after.end();
      const bool once = std::count(step.inputs.begin(), step.inputs.end(), slot) == 1;
      step.last_reader[i] = released && once;
    }
  }
  return plan;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphPlan>> BuildGraphPlan(
    const ir::Graph& graph, const KernelRegistry& kernels,
    const std::set<std::string>& outer_names) {
  // Ops are checked once, over every nested graph, for the main graph
  // (empty outer_names); subgraphs are planned below it with check_ops off.
  const Scope top{nullptr, nullptr, &outer_names};
  return BuildPlan(graph, kernels, top, /*check_ops=*/outer_names.empty());
}

}  // namespace slimpack::runtime
