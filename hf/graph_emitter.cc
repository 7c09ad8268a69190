// GraphEmitter: naming and constants for the decoder graph builder.
#include "hf/graph_emitter.h"

#include <cstring>

namespace slimpack::hf {

std::string GraphEmitter::Op(const std::string& op_type, std::vector<std::string> inputs,
                             std::map<std::string, ir::Attribute> attributes) {
  ir::Node node;
  node.name = scope_ + "/" + op_type + "_" + std::to_string(counter_++);
  node.op_type = op_type;
  node.inputs = std::move(inputs);
  node.outputs = {node.name + ":0"};
  node.attributes = std::move(attributes);
  node.provenance = ir::Provenance::FromNode(scope_);
  std::string out = node.outputs[0];
  graph_.nodes.push_back(std::move(node));
  return out;
}

std::vector<std::string> GraphEmitter::MultiOp(const std::string& op_type,
                                               const std::string& domain,
                                               std::vector<std::string> inputs, int outputs,
                                               std::map<std::string, ir::Attribute> attributes) {
  ir::Node node;
  node.name = scope_ + "/" + op_type + "_" + std::to_string(counter_++);
  node.op_type = op_type;
  node.domain = domain;
  node.inputs = std::move(inputs);
  for (int i = 0; i < outputs; ++i) node.outputs.push_back(node.name + ":" + std::to_string(i));
  node.attributes = std::move(attributes);
  node.provenance = ir::Provenance::FromNode(scope_);
  std::vector<std::string> out = node.outputs;
  graph_.nodes.push_back(std::move(node));
  return out;
}

namespace {

template <typename T>
ir::Tensor MakeConst(const std::string& name, ir::DType dtype, std::vector<int64_t> dims,
                     const std::vector<T>& values) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  t.provenance = ir::Provenance::FromNode("slimpack.llama_graph_builder");
  return t;
}

}  // namespace

std::string GraphEmitter::ConstI64(const std::string& name, std::vector<int64_t> dims,
                                   const std::vector<int64_t>& values) {
  const std::string full = "const/" + name;
  if (graph_.FindInitializer(full) == nullptr) {
    absl::Status s = graph_.AddInitializer(MakeConst(full, ir::DType::kI64, std::move(dims), values));
    if (status_.ok()) status_ = s;
  }
  return full;
}

std::string GraphEmitter::ConstF32(const std::string& name, std::vector<int64_t> dims,
                                   const std::vector<float>& values) {
  const std::string full = "const/" + name;
  if (graph_.FindInitializer(full) == nullptr) {
    absl::Status s = graph_.AddInitializer(MakeConst(full, ir::DType::kF32, std::move(dims), values));
    if (status_.ok()) status_ = s;
  }
  return full;
}

}  // namespace slimpack::hf
