#include "formats/shard/writer/artifact_tensors.h"

#include <unordered_set>

#include "ir/shape.h"
#include "formats/shard/format.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

absl::Status CheckTensor(const std::string& name, const ir::Tensor& t) {
  const std::string ctx = "tensor '" + name + "'";
  if (name.empty() || name.size() > shard::kMaxNameBytes) {
    return absl::InvalidArgumentError(
        ctx + ": name is " + std::to_string(name.size()) +
        " bytes; the manifest allows 1 to " +
        std::to_string(shard::kMaxNameBytes));
  }
  if (t.dtype == ir::DType::kUndefined) {
    return absl::InvalidArgumentError(ctx + ": dtype is undefined");
  }
  if (t.dims.size() > shard::kMaxTensorRank) {
    return absl::InvalidArgumentError(
        ctx + ": rank " + std::to_string(t.dims.size()) + " exceeds " +
        std::to_string(shard::kMaxTensorRank));
  }
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (!shard::IsManifestUint(t.dims[i])) {  // the loader's rule
      return absl::InvalidArgumentError(
          ctx + ": dim " + std::to_string(i) + " is " +
          std::to_string(t.dims[i]) + "; expected 0 to 2^53");
    }
  }
  ASSIGN_OR_RETURN(uint64_t expected, t.ExpectedBytes());
  if (t.data.size() != expected) {
    return absl::InvalidArgumentError(
        ctx + ": has " + std::to_string(t.data.size()) + " bytes but " +
        std::string(ir::DTypeName(t.dtype)) +
        ir::Shape::FromDims(t.dims).ToString() + " needs " +
        std::to_string(expected));
  }
  return absl::OkStatus();
}

class Collector {
 public:
  absl::Status Add(std::string name, const ir::Tensor* t,
                   bool is_attribute = false) {
    RETURN_IF_ERROR(CheckTensor(name, *t));
    if (!seen_.insert(name).second) {
      return absl::InvalidArgumentError(
          "tensor '" + name + "': name is used by two tensors of the model "
          "(names are unique artifact-wide, subgraphs and attributes "
          "included)");
    }
    out_.push_back({std::move(name), t, is_attribute});
    return absl::OkStatus();
  }

  absl::Status AddGraph(const ir::Graph& g) {
    for (const ir::Tensor& t : g.initializers()) RETURN_IF_ERROR(Add(t.name, &t));
    for (const ir::Node& node : g.nodes) {
      for (const auto& [attr_name, attr] : node.attributes) {
        RETURN_IF_ERROR(AddAttribute(node, attr_name, attr));
      }
    }
    return absl::OkStatus();
  }

  std::vector<ArtifactTensor> Take() { return std::move(out_); }

 private:
  absl::Status AddAttribute(const ir::Node& node, const std::string& name,
                            const ir::Attribute& a) {
    switch (a.kind) {
      case ir::Attribute::Kind::kTensor:
        if (!a.t) return MissingValue(node, name);
        return Add(AttributeTensorName(node.name, name), a.t.get(), true);
      case ir::Attribute::Kind::kTensors:
        for (size_t i = 0; i < a.tensors.size(); ++i) {
          if (!a.tensors[i]) return MissingValue(node, name);
          RETURN_IF_ERROR(Add(
              AttributeTensorName(node.name, name, static_cast<int>(i)),
              a.tensors[i].get(), true));
        }
        return absl::OkStatus();
      case ir::Attribute::Kind::kGraph:
        if (!a.g) return MissingValue(node, name);
        return AddGraph(*a.g);
      case ir::Attribute::Kind::kGraphs:
        for (const auto& g : a.graphs) {
          if (!g) return MissingValue(node, name);
          RETURN_IF_ERROR(AddGraph(*g));
        }
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  static absl::Status MissingValue(const ir::Node& node,
                                   const std::string& name) {
    return absl::InvalidArgumentError("node '" + node.name + "': attribute '" +
                                      name + "' has no value");
  }

  std::unordered_set<std::string> seen_;
  std::vector<ArtifactTensor> out_;
};

}  // namespace

std::string AttributeTensorName(const std::string& node,
                                const std::string& attribute, int index) {
  std::string name = node + "/" + attribute;
  if (index >= 0) name += "/" + std::to_string(index);
  return name;
}

absl::StatusOr<std::vector<ArtifactTensor>> CollectArtifactTensors(
    const ir::Model& model) {
  Collector c;
  RETURN_IF_ERROR(c.AddGraph(model.graph));
  return c.Take();
}

}  // namespace slimpack::shard_writer
