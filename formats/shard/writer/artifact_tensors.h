// Gathers every tensor an artifact stores (initializers of the main graph
// and of every subgraph, tensor-valued attributes) under its artifact-wide
// name, and checks what the manifest requires of each (spec.md section 5).
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_TENSORS_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_TENSORS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::shard_writer {

struct ArtifactTensor {
  std::string name;  // unique over the artifact
  const ir::Tensor* tensor = nullptr;
  // A tensor-valued node attribute (e.g. ConstantOfShape's value), part of
  // the graph's semantics rather than a weight.
  bool is_attribute = false;
};

// spec.md 6.1: a tensor attribute is stored as "<node>/<attribute>", element
// i of a tensors attribute as "<node>/<attribute>/<i>" (index >= 0).
std::string AttributeTensorName(const std::string& node,
                                const std::string& attribute, int index = -1);

// Returns the tensors in graph order (the writer re-orders them). Errors,
// all InvalidArgument naming the tensor: duplicate name (including an
// attribute name that collides with an initializer), empty or longer than
// 1024 bytes, undefined dtype, rank above 32, a negative dim or one above
// 2^53, data size different from dtype x shape.
absl::StatusOr<std::vector<ArtifactTensor>> CollectArtifactTensors(
    const ir::Model& model);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_TENSORS_H_
