#include "runtime/kernel.h"

#include <string>

namespace slimpack::runtime {

KernelContext::KernelContext(const ir::Node& node, int64_t opset,
                             std::vector<const RtTensor*> inputs,
                             TensorAllocator* allocator, ThreadPool* pool,
                             const SubgraphRunner* subgraphs)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      outputs_(node.outputs.size()),
      allocator_(allocator),
      pool_(pool),
      subgraphs_(subgraphs) {}

absl::StatusOr<const RtTensor*> KernelContext::RequiredInput(size_t i) const {
  const RtTensor* t = input(i);
  if (t == nullptr) {
    return absl::InvalidArgumentError(
        "input " + std::to_string(i) + " is required but " +
        (i < node_.inputs.size() ? "omitted" : "missing") + " (node has " +
        std::to_string(node_.inputs.size()) + " inputs)");
  }
  return t;
}

absl::Status KernelContext::ExpectDType(size_t i, ir::DType want) const {
  const RtTensor* t = input(i);
  if (t == nullptr || t->dtype() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "input " + std::to_string(i) + " ('" + node_.inputs[i] + "') has dtype " +
      std::string(ir::DTypeName(t->dtype())) + ", expected " +
      std::string(ir::DTypeName(want)));
}

void KernelContext::SetOutput(size_t i, RtTensor t) {
  if (i < outputs_.size()) outputs_[i] = std::move(t);
}

absl::StatusOr<RtTensor> KernelContext::Allocate(ir::DType dtype,
                                                 std::vector<int64_t> dims) {
  return allocator_->Allocate(dtype, std::move(dims), /*zero=*/true);
}

absl::StatusOr<RtTensor> KernelContext::AllocateUninitialized(
    ir::DType dtype, std::vector<int64_t> dims) {
  return allocator_->Allocate(dtype, std::move(dims), /*zero=*/false);
}

absl::StatusOr<RtTensor> KernelContext::AllocateUninitializedOrReuse(
    size_t input, ir::DType dtype, std::vector<int64_t> dims) {
  const RtTensor* t = last_readers_ != nullptr && input < last_readers_->size() &&
                              (*last_readers_)[input]
                          ? this->input(input)
                          : nullptr;
  // use_count 1: the value's slot is the buffer's only holder (no view of
  // it elsewhere, no observer keeping it), and the tensor spans the whole
  // buffer from its start, where mutable_data writes.
  if (t != nullptr && t->is_owned() && t->buffer().use_count() == 1 &&
      t->dtype() == dtype && t->raw() == t->mutable_raw()) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    if (count == t->num_elements()) return t->Reshaped(std::move(dims));
  }
  return AllocateUninitialized(dtype, std::move(dims));
}

absl::StatusOr<std::vector<RtTensor>> KernelContext::RunSubgraph(
    const ir::Graph& graph, const std::vector<RtTensor>& inputs) const {
  if (subgraphs_ == nullptr) {
    return absl::InternalError("no subgraph runner for this node");
  }
  return (*subgraphs_)(graph, inputs);
}

bool KernelContext::HasAttr(const std::string& name) const {
  return node_.FindAttribute(name) != nullptr;
}

absl::StatusOr<const ir::Attribute*> KernelContext::Find(
    const std::string& name, ir::Attribute::Kind kind) const {
  const ir::Attribute* a = node_.FindAttribute(name);
  if (a == nullptr) return nullptr;
  if (a->kind != kind) {
    return absl::InvalidArgumentError(
        "attribute '" + name + "' is " +
        std::string(ir::AttributeKindName(a->kind)) + ", expected " +
        std::string(ir::AttributeKindName(kind)));
  }
  return a;
}

absl::StatusOr<int64_t> KernelContext::IntAttr(const std::string& name,
                                               int64_t def) const {
  auto a = Find(name, ir::Attribute::Kind::kInt);
  if (!a.ok()) return a.status();
  return *a ? (*a)->i : def;
}

absl::StatusOr<float> KernelContext::FloatAttr(const std::string& name,
                                               float def) const {
  auto a = Find(name, ir::Attribute::Kind::kFloat);
  if (!a.ok()) return a.status();
  return *a ? (*a)->f : def;
}

absl::StatusOr<std::string> KernelContext::StringAttr(const std::string& name,
                                                      std::string def) const {
  auto a = Find(name, ir::Attribute::Kind::kString);
  if (!a.ok()) return a.status();
  return *a ? (*a)->s : def;
}

absl::StatusOr<std::vector<int64_t>> KernelContext::IntsAttr(
    const std::string& name, std::vector<int64_t> def) const {
  auto a = Find(name, ir::Attribute::Kind::kInts);
  if (!a.ok()) return a.status();
  return *a ? (*a)->ints : def;
}

absl::StatusOr<std::vector<float>> KernelContext::FloatsAttr(
    const std::string& name, std::vector<float> def) const {
  auto a = Find(name, ir::Attribute::Kind::kFloats);
  if (!a.ok()) return a.status();
  return *a ? (*a)->floats : def;
}

absl::StatusOr<std::vector<std::string>> KernelContext::StringsAttr(
    const std::string& name, std::vector<std::string> def) const {
  auto a = Find(name, ir::Attribute::Kind::kStrings);
  if (!a.ok()) return a.status();
  return *a ? (*a)->strings : def;
}

absl::StatusOr<const ir::Graph*> KernelContext::GraphAttr(
    const std::string& name) const {
  auto a = Find(name, ir::Attribute::Kind::kGraph);
  if (!a.ok()) return a.status();
  if (*a == nullptr || (*a)->g == nullptr) {
    return absl::InvalidArgumentError("graph attribute '" + name +
                                      "' is missing");
  }
  return (*a)->g.get();
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        "axis " + std::to_string(axis) + " is out of range for rank " +
        std::to_string(rank) + " (expected [" + std::to_string(-rank) + ", " +
        std::to_string(rank - 1) + "])");
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ReadInts(const RtTensor& t,
                                              const std::string& what) {
  if (t.rank() > 1) {
    return absl::InvalidArgumentError(what + " must be 0-d or 1-d, got " +
                                      t.DebugString());
  }
  std::vector<int64_t> out(t.num_elements());
  if (t.dtype() == ir::DType::kI64) {
    for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = t.data<int64_t>()[i];
  } else if (t.dtype() == ir::DType::kI32) {
    for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = t.data<int32_t>()[i];
  } else {
    return absl::InvalidArgumentError(what + " must be i64 or i32, got " +
                                      t.DebugString());
  }
  return out;
}

absl::StatusOr<double> ReadScalar(const RtTensor& t, const std::string& what) {
  if (t.num_elements() != 1) {
    return absl::InvalidArgumentError(what + " must have one element, got " +
                                      t.DebugString());
  }
  switch (t.dtype()) {
    case ir::DType::kF32: return t.data<float>()[0];
    case ir::DType::kF64: return t.data<double>()[0];
    case ir::DType::kI64: return static_cast<double>(t.data<int64_t>()[0]);
    case ir::DType::kI32: return t.data<int32_t>()[0];
    case ir::DType::kI16: return t.data<int16_t>()[0];
    case ir::DType::kI8: return t.data<int8_t>()[0];
    case ir::DType::kU8: return t.data<uint8_t>()[0];
    case ir::DType::kBool: return t.data<uint8_t>()[0] != 0 ? 1.0 : 0.0;
    default:
      return absl::InvalidArgumentError(what + " has unsupported dtype " +
                                        t.DebugString());
  }
}

absl::Status UnsupportedDType(const KernelContext& ctx, ir::DType dtype,
                              const std::string& supported) {
  return absl::UnimplementedError(
      ctx.node().op_type + " does not support dtype " +
      std::string(ir::DTypeName(dtype)) + "; supported: " + supported);
}

}  // namespace slimpack::runtime
