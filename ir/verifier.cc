#include "ir/verifier.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/quant.h"

namespace slimpack::ir {
namespace {

using Scope = std::unordered_set<std::string>;

absl::Status CheckTensorBytes(const Tensor& t, const std::string& where) {
  auto expected = t.ExpectedBytes();
  if (!expected.ok()) {
    return absl::InvalidArgumentError(where + ": " +
                                      std::string(expected.status().message()));
  }
  if (*expected != t.data.size()) {
    return absl::InvalidArgumentError(
        where + ": tensor '" + t.name + "' " + std::string(DTypeName(t.dtype)) +
        Shape::FromDims(t.dims).ToString() + " needs " +
        std::to_string(*expected) + " bytes, found " +
        std::to_string(t.data.size()));
  }
  return absl::OkStatus();
}

// A quantized initializer's scale and zero point are initializers of the
// same graph (ir/tensor.h), which is also where the interpreter
// looks for them when it binds the weight.
absl::Status CheckQuantInitializers(const Graph& g) {
  for (const Tensor& t : g.initializers()) {
    if (!t.quant.quantized()) continue;
    const Tensor* scale = g.FindInitializer(t.quant.scale);
    const Tensor* zp = t.quant.zero_point.empty()
                           ? nullptr
                           : g.FindInitializer(t.quant.zero_point);
    absl::Status s = ValidateQuantLayout(t, scale, zp);
    if (!s.ok()) {
      return absl::Status(s.code(), "graph '" + g.name + "' initializer " +
                                        std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyScoped(const Graph& g, const std::vector<const Scope*>& outer);

absl::Status VerifyAttributes(const Node& n, size_t index,
                              const std::string& gname,
                              const std::vector<const Scope*>& scopes) {
  std::string where = "graph '" + gname + "' node " + DescribeNode(n, index);
  for (const auto& [key, a] : n.attributes) {
    if (a.kind == Attribute::Kind::kTensor && a.t) {
      auto s = CheckTensorBytes(*a.t, where + " attribute '" + key + "'");
      if (!s.ok()) return s;
    }
    std::vector<const Graph*> subs;
    if (a.kind == Attribute::Kind::kGraph && a.g) subs.push_back(a.g.get());
    if (a.kind == Attribute::Kind::kGraphs) {
      for (const auto& sg : a.graphs) {
        if (sg) subs.push_back(sg.get());
      }
    }
    for (const Graph* sg : subs) {
      auto s = VerifyScoped(*sg, scopes);
      if (!s.ok()) {
        return absl::Status(s.code(), where + " attribute '" + key + "': " +
                                          std::string(s.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyScoped(const Graph& g,
                          const std::vector<const Scope*>& outer) {
  Scope defined;
  std::unordered_map<std::string, std::string> definer;
  auto define = [&](const std::string& v,
                    const std::string& by) -> absl::Status {
    if (v.empty()) return absl::OkStatus();
    auto [it, inserted] = definer.emplace(v, by);
    if (!inserted) {
      return absl::InvalidArgumentError("graph '" + g.name + "': value '" + v +
                                        "' is defined twice, by " + it->second +
                                        " and by " + by);
    }
    defined.insert(v);
    return absl::OkStatus();
  };
  for (const auto& in : g.inputs) {
    auto s = define(in.name, "graph input");
    if (!s.ok()) return s;
  }
  for (const auto& t : g.initializers()) {
    // ONNX (IR >= 4) allows an initializer to also be listed as an input,
    // meaning an overridable default; that is not a double definition.
    if (!defined.count(t.name)) {
      auto s = define(t.name, "initializer");
      if (!s.ok()) return s;
    }
    auto s = CheckTensorBytes(t, "graph '" + g.name + "' initializer");
    if (!s.ok()) return s;
  }
  {
    absl::Status s = CheckQuantInitializers(g);
    if (!s.ok()) return s;
  }
  std::unordered_set<std::string> node_names;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (n.op_type.empty()) {
      const std::string who = n.name.empty() ? "#" + std::to_string(ni)
                                             : "'" + n.name + "'";
      return absl::InvalidArgumentError("graph '" + g.name + "': node " +
                                        who + " has no op type");
    }
    if (!n.name.empty() && !node_names.insert(n.name).second) {
      return absl::InvalidArgumentError("graph '" + g.name +
                                        "': duplicate node name '" + n.name +
                                        "'");
    }
    for (const auto& o : n.outputs) {
      auto s = define(o, "node " + DescribeNode(n, ni));
      if (!s.ok()) return s;
    }
  }
  auto visible = [&](const std::string& v) {
    if (defined.count(v)) return true;
    for (const Scope* s : outer) {
      if (s->count(v)) return true;
    }
    return false;
  };
  std::vector<const Scope*> inner = outer;
  inner.push_back(&defined);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const auto& in = n.inputs[i];
      if (!in.empty() && !visible(in)) {
        return absl::InvalidArgumentError(
            "graph '" + g.name + "': node " + DescribeNode(n, ni) + " input " +
            std::to_string(i) + " '" + in +
            "' is not defined by any node, input or initializer");
      }
    }
    auto s = VerifyAttributes(n, ni, g.name, inner);
    if (!s.ok()) return s;
  }
  for (const auto& o : g.outputs) {
    if (!visible(o.name)) {
      return absl::InvalidArgumentError("graph '" + g.name + "': output '" +
                                        o.name + "' is never produced");
    }
  }
  auto order = g.TopologicalOrder();
  if (!order.ok()) return order.status();
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyGraph(const Graph& graph) { return VerifyScoped(graph, {}); }

absl::Status VerifyModel(const Model& model) {
  auto s = VerifyGraph(model.graph);
  if (!s.ok() && !model.source_path.empty()) {
    return absl::Status(s.code(),
                        model.source_path + ": " + std::string(s.message()));
  }
  return s;
}

}  // namespace slimpack::ir
