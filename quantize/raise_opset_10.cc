// The opset 9 -> 10 raise: a hazard scan, then attribute-to-input rewrites
// done on a copy so a malformed node leaves the graph as it was.
#include "quantize/raise_opset_10.h"

#include <cstring>
#include <set>
#include <vector>

#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

std::vector<std::shared_ptr<ir::Graph>> Subgraphs(const ir::Node& node) {
  std::vector<std::shared_ptr<ir::Graph>> out;
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g) out.push_back(attr.g);
    out.insert(out.end(), attr.graphs.begin(), attr.graphs.end());
  }
  return out;
}

// Every name a graph (and its subgraphs) uses for a value, node or tensor.
void CollectNames(const ir::Graph& g, std::set<std::string>& names) {
  for (const auto& v : g.inputs) names.insert(v.name);
  for (const auto& v : g.outputs) names.insert(v.name);
  for (const auto& t : g.initializers()) names.insert(t.name);
  for (const auto& n : g.nodes) {
    names.insert(n.name);
    names.insert(n.inputs.begin(), n.inputs.end());
    names.insert(n.outputs.begin(), n.outputs.end());
    for (const auto& sub : Subgraphs(n)) CollectNames(*sub, names);
  }
}

std::string Fresh(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

ir::Tensor Int64Tensor(std::string name, const std::vector<int64_t>& values,
                       const ir::Provenance& prov) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DType::kI64;
  t.dims = {static_cast<int64_t>(values.size())};
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  t.provenance = prov;
  return t;
}

absl::StatusOr<std::vector<int64_t>> Ints(const ir::Node& node, const std::string& attr,
                                          bool required) {
  const ir::Attribute* a = node.FindAttribute(attr);
  if (a == nullptr) {
    if (!required) return std::vector<int64_t>{};
    return absl::InvalidArgumentError(Describe(node) + " has no '" + attr + "' attribute");
  }
  if (a->kind != ir::Attribute::Kind::kInts) {
    return absl::InvalidArgumentError(Describe(node) + " attribute '" + attr +
                                      "' is not a list of ints");
  }
  return a->ints;
}

// Moves `values` into a new initializer of `g` and returns its name.
absl::StatusOr<std::string> AddInts(ir::Graph& g, const ir::Node& node, const char* what,
                                    const std::vector<int64_t>& values,
                                    std::set<std::string>& taken) {
  const std::string name = Fresh(node.name + "_" + what, taken);
  RETURN_IF_ERROR(g.AddInitializer(Int64Tensor(name, values, node.provenance)));
  return name;
}

absl::Status RaiseGraph(ir::Graph& g, std::set<std::string>& taken) {
  for (ir::Node& node : g.nodes) {
    for (const auto& sub : Subgraphs(node)) RETURN_IF_ERROR(RaiseGraph(*sub, taken));
    if (!node.domain.empty()) continue;
    if (node.op_type == "Slice" && node.inputs.size() == 1) {
      ASSIGN_OR_RETURN(std::vector<int64_t> starts, Ints(node, "starts", true));
      ASSIGN_OR_RETURN(std::vector<int64_t> ends, Ints(node, "ends", true));
      ASSIGN_OR_RETURN(std::vector<int64_t> axes, Ints(node, "axes", false));
      ASSIGN_OR_RETURN(std::string s, AddInts(g, node, "starts", starts, taken));
      ASSIGN_OR_RETURN(std::string e, AddInts(g, node, "ends", ends, taken));
      node.inputs.push_back(s);
      node.inputs.push_back(e);
      if (!axes.empty()) {
        ASSIGN_OR_RETURN(std::string a, AddInts(g, node, "axes", axes, taken));
        node.inputs.push_back(a);
      }
      node.attributes.erase("starts");
      node.attributes.erase("ends");
      node.attributes.erase("axes");
    } else if (node.op_type == "TopK" && node.inputs.size() == 1) {
      const ir::Attribute* k = node.FindAttribute("k");
      if (k == nullptr || k->kind != ir::Attribute::Kind::kInt) {
        return absl::InvalidArgumentError(Describe(node) + " has no int 'k' attribute");
      }
      ASSIGN_OR_RETURN(std::string name, AddInts(g, node, "k", {k->i}, taken));
      node.inputs.push_back(name);
      node.attributes.erase("k");
    }
  }
  return absl::OkStatus();
}

// Deep copy: Graph copies share subgraphs through shared_ptr.
void CloneSubgraphs(ir::Graph& g) {
  for (ir::Node& node : g.nodes) {
    for (auto& [name, attr] : node.attributes) {
      if (attr.g) {
        attr.g = std::make_shared<ir::Graph>(*attr.g);
        CloneSubgraphs(*attr.g);
      }
      for (auto& sub : attr.graphs) {
        sub = std::make_shared<ir::Graph>(*sub);
        CloneSubgraphs(*sub);
      }
    }
  }
}

}  // namespace

std::string OpsetTenHazard(const ir::Graph& graph) {
  const ir::UseDefIndex index = graph.BuildUseDefIndex();
  for (const ir::Node& node : graph.nodes) {
    if (node.domain.empty() && node.op_type == "Dropout" && node.outputs.size() > 1 &&
        !node.outputs[1].empty()) {
      const std::string& mask = node.outputs[1];
      bool graph_output = false;
      for (const auto& o : graph.outputs) graph_output = graph_output || o.name == mask;
      if (graph_output || index.consumers.count(mask)) {
        return Describe(node) + " mask output '" + mask +
               "' is read, and its type changes (to bool) at opset 10";
      }
    }
    for (const auto& sub : Subgraphs(node)) {
      std::string why = OpsetTenHazard(*sub);
      if (!why.empty()) return why;
    }
  }
  return "";
}

absl::Status RaiseOpset9To10(ir::Graph& graph) {
  ir::Graph work = graph;
  CloneSubgraphs(work);
  std::set<std::string> taken;
  CollectNames(work, taken);
  RETURN_IF_ERROR(RaiseGraph(work, taken));
  graph = std::move(work);
  return absl::OkStatus();
}

}  // namespace slimpack::passes
