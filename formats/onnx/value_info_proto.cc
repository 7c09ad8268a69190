// Value type/shape conversion in both directions.
#include "formats/onnx/value_info_proto.h"

#include "formats/onnx/dtype_conversion.h"

namespace slimpack::onnx_format {
namespace {

const char* TypeCaseName(onnx::TypeProto::ValueCase c) {
  switch (c) {
    case onnx::TypeProto::kSequenceType: return "sequence";
    case onnx::TypeProto::kMapType: return "map";
    case onnx::TypeProto::kOptionalType: return "optional";
    case onnx::TypeProto::kSparseTensorType: return "sparse tensor";
    case onnx::TypeProto::kOpaqueType: return "opaque";
    default: return "non-tensor";
  }
}

}  // namespace

absl::StatusOr<ir::ValueInfo> ValueInfoFromProto(
    const onnx::ValueInfoProto& proto) {
  ir::ValueInfo info;
  info.name = proto.name();
  if (info.name.empty()) {
    return absl::InvalidArgumentError("value info has an empty name");
  }
  if (!proto.has_type() ||
      proto.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
    return info;
  }
  const onnx::TypeProto& type = proto.type();
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    return absl::UnimplementedError(
        "value '" + info.name + "' has a " + TypeCaseName(type.value_case()) +
        " type; only tensor types are supported");
  }
  const auto& tensor = type.tensor_type();
  int32_t elem = tensor.elem_type();
  if (elem != onnx::TensorProto::UNDEFINED) {
    auto dtype = DTypeFromOnnx(elem);
    if (!dtype) {
      return absl::UnimplementedError(
          "value '" + info.name + "' has element type " + OnnxTypeName(elem) +
          "; supported: " + SupportedOnnxTypes());
    }
    info.dtype = *dtype;
  }
  if (!tensor.has_shape()) return info;
  std::vector<ir::Dim> dims;
  dims.reserve(tensor.shape().dim_size());
  for (const auto& d : tensor.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      dims.push_back(ir::Dim::Static(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back(ir::Dim::Symbolic(d.dim_param()));
    } else {
      dims.push_back(ir::Dim{});
    }
  }
  info.shape = ir::Shape(std::move(dims));
  return info;
}

void ValueInfoToProto(const ir::ValueInfo& info, onnx::ValueInfoProto* proto) {
  proto->set_name(info.name);
  if (info.dtype == ir::DType::kUndefined && !info.shape.rank_known()) return;
  auto* tensor = proto->mutable_type()->mutable_tensor_type();
  if (info.dtype != ir::DType::kUndefined) {
    tensor->set_elem_type(DTypeToOnnx(info.dtype));
  }
  if (!info.shape.rank_known()) return;
  auto* shape = tensor->mutable_shape();
  for (const ir::Dim& d : info.shape.dims()) {
    auto* dim = shape->add_dim();
    if (d.is_static()) {
      dim->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

}  // namespace slimpack::onnx_format
