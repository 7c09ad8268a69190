// Constant node -> initializer tensor.
#include "formats/onnx/constant_node.h"

#include <cstring>
#include <vector>

#include "formats/onnx/tensor_from_proto.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

template <typename T>
ir::TensorData LittleEndianBytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return ir::TensorData::Owned(std::move(bytes));
}

}  // namespace

bool IsOnnxConstant(const onnx::NodeProto& node) {
  return node.op_type() == "Constant" &&
         (node.domain().empty() || node.domain() == "ai.onnx");
}

absl::StatusOr<std::optional<ir::Tensor>> ConstantNodeToTensor(
    const onnx::NodeProto& node, const std::string& provenance_name,
    const ImportContext& ctx) {
  if (node.output_size() != 1 || node.output(0).empty()) {
    return absl::InvalidArgumentError(
        "Constant must have exactly one named output, found " +
        std::to_string(node.output_size()) + " outputs");
  }
  if (node.input_size() != 0) {
    return absl::InvalidArgumentError("Constant takes no inputs, found " +
                                      std::to_string(node.input_size()));
  }
  if (node.attribute_size() != 1) {
    return absl::InvalidArgumentError(
        "Constant must have exactly one value attribute, found " +
        std::to_string(node.attribute_size()));
  }
  const onnx::AttributeProto& attr = node.attribute(0);
  const std::string& key = attr.name();
  ir::Tensor t;
  if (key == "value") {
    auto converted = TensorFromProto(attr.t(), ctx);
    if (!converted.ok()) {
      return Annotate(converted.status(), "attribute 'value'");
    }
    t = std::move(*converted);
  } else if (key == "value_float") {
    t.dtype = ir::DType::kF32;
    t.data = LittleEndianBytes(std::vector<float>{attr.f()});
  } else if (key == "value_floats") {
    t.dtype = ir::DType::kF32;
    t.dims = {attr.floats_size()};
    t.data = LittleEndianBytes(
        std::vector<float>(attr.floats().begin(), attr.floats().end()));
  } else if (key == "value_int") {
    t.dtype = ir::DType::kI64;
    t.data = LittleEndianBytes(std::vector<int64_t>{attr.i()});
  } else if (key == "value_ints") {
    t.dtype = ir::DType::kI64;
    t.dims = {attr.ints_size()};
    t.data = LittleEndianBytes(
        std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
  } else if (key == "value_string" || key == "value_strings") {
    return std::optional<ir::Tensor>();
  } else if (key == "sparse_value") {
    return absl::UnimplementedError(
        "sparse_value is not supported; supported Constant attributes: "
        "value, value_float, value_floats, value_int, value_ints, "
        "value_string, value_strings");
  } else {
    return absl::InvalidArgumentError("unknown Constant attribute '" + key +
                                      "'");
  }
  t.name = node.output(0);
  // The node name first; the file (and offset, for external data) after.
  t.provenance = ir::Provenance::Merge(
      ir::Provenance::FromNode(provenance_name), t.provenance);
  return std::optional<ir::Tensor>(std::move(t));
}

}  // namespace slimpack::onnx_format
