// Graph conversion. Structural checks that need the whole graph (values
// defined once, inputs defined, no cycles) are the IR verifier's job.
#include "formats/onnx/graph_from_proto.h"

#include <memory>
#include <string>
#include <vector>

#include "formats/onnx/attribute_from_proto.h"
#include "formats/onnx/constant_node.h"
#include "formats/onnx/node_names.h"
#include "formats/onnx/tensor_from_proto.h"
#include "formats/onnx/value_info_proto.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

absl::Status AddUniqueInitializer(ir::Tensor t, ir::Graph* graph) {
  std::string name = t.name;
  absl::Status s = graph->AddInitializer(std::move(t));
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    return absl::InvalidArgumentError(
        "initializer '" + name +
        "' is defined more than once (as initializer or Constant output)");
  }
  return s;
}

absl::StatusOr<ir::Node> NodeFromProto(const onnx::NodeProto& proto,
                                       const std::string& unique_name,
                                       const ImportContext& ctx, int depth) {
  ir::Node node;
  node.name = unique_name;
  node.op_type = proto.op_type();
  // "ai.onnx" is an alias of the default domain; passes match on "".
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  node.provenance = ir::Provenance::FromNode(
      proto.name().empty() ? unique_name : proto.name());
  SubgraphImporter import_subgraph = [&ctx, depth](const onnx::GraphProto& g)
      -> absl::StatusOr<std::shared_ptr<ir::Graph>> {
    auto sub = GraphFromProto(g, ctx, depth + 1);
    if (!sub.ok()) {
      return Annotate(sub.status(), "subgraph '" + g.name() + "'");
    }
    return std::make_shared<ir::Graph>(std::move(*sub));
  };
  for (const auto& attr : proto.attribute()) {
    if (attr.name().empty()) {
      return absl::InvalidArgumentError("has an attribute with an empty name");
    }
    auto converted = AttributeFromProto(attr, ctx, import_subgraph);
    if (!converted.ok()) {
      return Annotate(converted.status(), "attribute '" + attr.name() + "'");
    }
    if (!node.attributes.emplace(attr.name(), std::move(*converted)).second) {
      return absl::InvalidArgumentError("attribute '" + attr.name() +
                                        "' appears more than once");
    }
  }
  return node;
}

absl::Status ImportNodes(const onnx::GraphProto& proto,
                         const ImportContext& ctx, int depth,
                         ir::Graph* graph) {
  std::vector<std::string> names = AssignUniqueNodeNames(proto, ctx.warnings);
  for (int i = 0; i < proto.node_size(); ++i) {
    const onnx::NodeProto& node = proto.node(i);
    const std::string where =
        "node '" + names[i] + "' (" + node.op_type() + ")";
    if (IsOnnxConstant(node)) {
      const std::string& origin = node.name().empty() ? names[i] : node.name();
      auto tensor = ConstantNodeToTensor(node, origin, ctx);
      if (!tensor.ok()) return Annotate(tensor.status(), where);
      if (tensor->has_value()) {
        RETURN_IF_ERROR(
            Annotate(AddUniqueInitializer(std::move(**tensor), graph), where));
        continue;
      }
    }
    auto converted = NodeFromProto(node, names[i], ctx, depth);
    if (!converted.ok()) return Annotate(converted.status(), where);
    graph->nodes.push_back(std::move(*converted));
  }
  return absl::OkStatus();
}

absl::Status ImportValueInfos(const onnx::GraphProto& proto,
                              const ImportContext& ctx, ir::Graph* graph) {
  for (const auto& vi : proto.input()) {
    auto info = ValueInfoFromProto(vi);
    if (!info.ok()) return Annotate(info.status(), "graph input");
    graph->inputs.push_back(std::move(*info));
  }
  for (const auto& vi : proto.output()) {
    auto info = ValueInfoFromProto(vi);
    if (!info.ok()) return Annotate(info.status(), "graph output");
    graph->outputs.push_back(std::move(*info));
  }
  // value_info only annotates intermediates: an entry the IR cannot hold is
  // dropped with a warning rather than failing the import.
  for (const auto& vi : proto.value_info()) {
    auto info = ValueInfoFromProto(vi);
    if (!info.ok()) {
      if (info.status().code() != absl::StatusCode::kUnimplemented) {
        return Annotate(info.status(), "value_info");
      }
      if (ctx.warnings) {
        ctx.warnings->push_back("graph '" + proto.name() +
                                "': value_info dropped: " +
                                std::string(info.status().message()));
      }
      continue;
    }
    std::string name = info->name;
    graph->value_info.emplace(std::move(name), std::move(*info));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Graph> GraphFromProto(const onnx::GraphProto& proto,
                                         const ImportContext& ctx, int depth) {
  if (depth > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(
        "subgraphs are nested " + std::to_string(depth) +
        " levels deep; at most " + std::to_string(kMaxSubgraphDepth) +
        " are supported");
  }
  if (proto.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(
        "graph has " + std::to_string(proto.sparse_initializer_size()) +
        " sparse_initializer entries; sparse tensors are not supported");
  }
  ir::Graph graph;
  graph.name = proto.name();
  RETURN_IF_ERROR(ImportValueInfos(proto, ctx, &graph));
  for (int i = 0; i < proto.initializer_size(); ++i) {
    const onnx::TensorProto& init = proto.initializer(i);
    if (init.name().empty()) {
      return absl::InvalidArgumentError("initializer " + std::to_string(i) +
                                        " has an empty name");
    }
    auto tensor = TensorFromProto(init, ctx);
    if (!tensor.ok()) {
      return Annotate(tensor.status(), "initializer '" + init.name() + "'");
    }
    RETURN_IF_ERROR(AddUniqueInitializer(std::move(*tensor), &graph));
  }
  RETURN_IF_ERROR(ImportNodes(proto, ctx, depth, &graph));
  return graph;
}

}  // namespace slimpack::onnx_format
