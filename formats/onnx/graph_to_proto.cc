// Graph writing. Attributes come out in the IR's sorted order and
// value_info sorted by name, so the same IR always gives the same bytes.
#include "formats/onnx/graph_to_proto.h"

#include <string>

#include "formats/onnx/value_info_proto.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

using AP = onnx::AttributeProto;
using Kind = ir::Attribute::Kind;

// ONNX requires every graph to have a name; a subgraph built by a pass may
// not have one, so it is named after its node and attribute.
absl::Status SubgraphToProto(const ir::Graph& graph, const std::string& owner,
                             const TensorPlacement& placement,
                             onnx::GraphProto* proto) {
  RETURN_IF_ERROR(GraphToProto(graph, placement, proto));
  if (proto->name().empty()) proto->set_name(owner);
  return absl::OkStatus();
}

absl::Status AttributeToProto(const std::string& node_name,
                              const std::string& name, const ir::Attribute& a,
                              const TensorPlacement& placement,
                              onnx::AttributeProto* proto) {
  proto->set_name(name);
  const std::string owner = node_name + "_" + name;
  auto null_error = [&] {
    return absl::InvalidArgumentError("attribute '" + name +
                                      "' holds a null tensor or graph");
  };
  switch (a.kind) {
    case Kind::kFloat:
      proto->set_type(AP::FLOAT);
      proto->set_f(a.f);
      return absl::OkStatus();
    case Kind::kInt:
      proto->set_type(AP::INT);
      proto->set_i(a.i);
      return absl::OkStatus();
    case Kind::kString:
      proto->set_type(AP::STRING);
      proto->set_s(a.s);
      return absl::OkStatus();
    case Kind::kFloats:
      proto->set_type(AP::FLOATS);
      for (float v : a.floats) proto->add_floats(v);
      return absl::OkStatus();
    case Kind::kInts:
      proto->set_type(AP::INTS);
      for (int64_t v : a.ints) proto->add_ints(v);
      return absl::OkStatus();
    case Kind::kStrings:
      proto->set_type(AP::STRINGS);
      for (const auto& v : a.strings) proto->add_strings(v);
      return absl::OkStatus();
    case Kind::kTensor:
      if (!a.t) return null_error();
      proto->set_type(AP::TENSOR);
      return TensorToProto(*a.t, placement, proto->mutable_t());
    case Kind::kTensors:
      proto->set_type(AP::TENSORS);
      for (const auto& t : a.tensors) {
        if (!t) return null_error();
        RETURN_IF_ERROR(TensorToProto(*t, placement, proto->add_tensors()));
      }
      return absl::OkStatus();
    case Kind::kGraph:
      if (!a.g) return null_error();
      proto->set_type(AP::GRAPH);
      return SubgraphToProto(*a.g, owner, placement, proto->mutable_g());
    case Kind::kGraphs:
      proto->set_type(AP::GRAPHS);
      for (size_t i = 0; i < a.graphs.size(); ++i) {
        if (!a.graphs[i]) return null_error();
        RETURN_IF_ERROR(SubgraphToProto(*a.graphs[i],
                                        owner + "_" + std::to_string(i),
                                        placement, proto->add_graphs()));
      }
      return absl::OkStatus();
  }
  return absl::InternalError("attribute '" + name + "' has an unknown kind");
}

absl::Status NodeToProto(const ir::Node& node, const TensorPlacement& placement,
                         onnx::NodeProto* proto) {
  proto->set_name(node.name);
  proto->set_op_type(node.op_type);
  if (!node.domain.empty()) proto->set_domain(node.domain);
  for (const auto& in : node.inputs) proto->add_input(in);
  for (const auto& out : node.outputs) proto->add_output(out);
  for (const auto& [name, attr] : node.attributes) {
    RETURN_IF_ERROR(
        AttributeToProto(node.name, name, attr, placement,
                         proto->add_attribute()));
  }
  return absl::OkStatus();
}

uint64_t AttributeTensorBytes(const ir::Attribute& a) {
  uint64_t total = 0;
  if (a.t) total += a.t->data.size();
  for (const auto& t : a.tensors) {
    if (t) total += t->data.size();
  }
  if (a.g) total += TotalTensorBytes(*a.g);
  for (const auto& g : a.graphs) {
    if (g) total += TotalTensorBytes(*g);
  }
  return total;
}

}  // namespace

absl::Status GraphToProto(const ir::Graph& graph,
                          const TensorPlacement& placement,
                          onnx::GraphProto* proto) {
  proto->set_name(graph.name);
  for (const auto& in : graph.inputs) ValueInfoToProto(in, proto->add_input());
  for (const auto& t : graph.initializers()) {
    RETURN_IF_ERROR(TensorToProto(t, placement, proto->add_initializer()));
  }
  for (const auto& node : graph.nodes) {
    absl::Status s = NodeToProto(node, placement, proto->add_node());
    if (!s.ok()) {
      return Annotate(s, "node '" + node.name + "' (" + node.op_type + ")");
    }
  }
  for (const auto& out : graph.outputs) {
    ValueInfoToProto(out, proto->add_output());
  }
  for (const auto& [name, info] : graph.value_info) {
    ValueInfoToProto(info, proto->add_value_info());
  }
  return absl::OkStatus();
}

uint64_t TotalTensorBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const auto& t : graph.initializers()) total += t.data.size();
  for (const auto& node : graph.nodes) {
    for (const auto& [name, a] : node.attributes) {
      total += AttributeTensorBytes(a);
    }
  }
  return total;
}

}  // namespace slimpack::onnx_format
