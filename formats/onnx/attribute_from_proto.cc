// Attribute conversion, including tensor and graph attributes.
#include "formats/onnx/attribute_from_proto.h"

#include <string>
#include <vector>

#include "formats/onnx/tensor_from_proto.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

using AP = onnx::AttributeProto;

constexpr char kSupportedKinds[] =
    "FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, "
    "GRAPHS";

// Types an attribute from the single value field that is present.
absl::StatusOr<AP::AttributeType> InferType(const AP& a) {
  std::vector<AP::AttributeType> present;
  if (a.has_f()) present.push_back(AP::FLOAT);
  if (a.has_i()) present.push_back(AP::INT);
  if (a.has_s()) present.push_back(AP::STRING);
  if (a.has_t()) present.push_back(AP::TENSOR);
  if (a.has_g()) present.push_back(AP::GRAPH);
  if (a.has_sparse_tensor()) present.push_back(AP::SPARSE_TENSOR);
  if (a.has_tp()) present.push_back(AP::TYPE_PROTO);
  if (a.floats_size()) present.push_back(AP::FLOATS);
  if (a.ints_size()) present.push_back(AP::INTS);
  if (a.strings_size()) present.push_back(AP::STRINGS);
  if (a.tensors_size()) present.push_back(AP::TENSORS);
  if (a.graphs_size()) present.push_back(AP::GRAPHS);
  if (a.sparse_tensors_size()) present.push_back(AP::SPARSE_TENSORS);
  if (a.type_protos_size()) present.push_back(AP::TYPE_PROTOS);
  if (present.size() != 1) {
    return absl::InvalidArgumentError(
        "type is UNDEFINED and " + std::to_string(present.size()) +
        " value fields are set; cannot tell its kind");
  }
  return present[0];
}

absl::StatusOr<std::shared_ptr<ir::Tensor>> ImportTensor(
    const onnx::TensorProto& t, const ImportContext& ctx) {
  ASSIGN_OR_RETURN(ir::Tensor tensor, TensorFromProto(t, ctx));
  return std::make_shared<ir::Tensor>(std::move(tensor));
}

}  // namespace

absl::StatusOr<ir::Attribute> AttributeFromProto(
    const onnx::AttributeProto& proto, const ImportContext& ctx,
    const SubgraphImporter& import_subgraph) {
  if (!proto.ref_attr_name().empty()) {
    return absl::InvalidArgumentError(
        "refers to function attribute '" + proto.ref_attr_name() +
        "' outside a function");
  }
  AP::AttributeType type = proto.type();
  if (type == AP::UNDEFINED) {
    ASSIGN_OR_RETURN(type, InferType(proto));
  }
  ir::Attribute a;
  switch (type) {
    case AP::FLOAT: return ir::Attribute::Float(proto.f());
    case AP::INT: return ir::Attribute::Int(proto.i());
    case AP::STRING: return ir::Attribute::String(proto.s());
    case AP::FLOATS:
      return ir::Attribute::Floats({proto.floats().begin(),
                                    proto.floats().end()});
    case AP::INTS:
      return ir::Attribute::Ints({proto.ints().begin(), proto.ints().end()});
    case AP::STRINGS:
      return ir::Attribute::Strings({proto.strings().begin(),
                                     proto.strings().end()});
    case AP::TENSOR: {
      a.kind = ir::Attribute::Kind::kTensor;
      ASSIGN_OR_RETURN(a.t, ImportTensor(proto.t(), ctx));
      return a;
    }
    case AP::TENSORS: {
      a.kind = ir::Attribute::Kind::kTensors;
      for (int i = 0; i < proto.tensors_size(); ++i) {
        auto t = ImportTensor(proto.tensors(i), ctx);
        if (!t.ok()) {
          return Annotate(t.status(), "tensor " + std::to_string(i));
        }
        a.tensors.push_back(std::move(*t));
      }
      return a;
    }
    case AP::GRAPH: {
      a.kind = ir::Attribute::Kind::kGraph;
      ASSIGN_OR_RETURN(a.g, import_subgraph(proto.g()));
      return a;
    }
    case AP::GRAPHS: {
      a.kind = ir::Attribute::Kind::kGraphs;
      for (int i = 0; i < proto.graphs_size(); ++i) {
        auto g = import_subgraph(proto.graphs(i));
        if (!g.ok()) return Annotate(g.status(), "graph " + std::to_string(i));
        a.graphs.push_back(std::move(*g));
      }
      return a;
    }
    default:
      break;
  }
  std::string name = AP::AttributeType_IsValid(type)
                         ? AP::AttributeType_Name(type)
                         : "code " + std::to_string(static_cast<int>(type));
  return absl::UnimplementedError("attribute type " + name +
                                  " is not supported; supported: " +
                                  kSupportedKinds);
}

}  // namespace slimpack::onnx_format
