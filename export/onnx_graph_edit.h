// Small graph-editing helpers shared by the ONNX export rewrites
// (onnx_lower, onnx_qdq): fresh value names, constant initializers and
// node construction, so each rewrite reads as the nodes it emits.
#ifndef SLIMPACK_EXPORT_ONNX_GRAPH_EDIT_H_
#define SLIMPACK_EXPORT_ONNX_GRAPH_EDIT_H_

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

// The domain of ONNX Runtime's contrib operators.
inline constexpr char kMicrosoftDomain[] = "com.microsoft";

class GraphEditor {
 public:
  // Collects every name in use in `graph` (values, nodes, initializers).
  explicit GraphEditor(ir::Graph& graph);

  ir::Graph& graph() { return graph_; }
  // `base`, or `base_1`, `base_2`, ... when taken; reserved on return.
  std::string Fresh(const std::string& base);

  // A new initializer named Fresh(base); returns its name.
  absl::StatusOr<std::string> AddF32(const std::string& base, std::vector<int64_t> dims,
                                     const std::vector<float>& values,
                                     const ir::Provenance& prov);
  absl::StatusOr<std::string> AddI64(const std::string& base, std::vector<int64_t> dims,
                                     const std::vector<int64_t>& values,
                                     const ir::Provenance& prov);
  absl::StatusOr<std::string> AddI32(const std::string& base, std::vector<int64_t> dims,
                                     const std::vector<int32_t>& values,
                                     const ir::Provenance& prov);
  // `count` zero bytes of a one-byte dtype (i8/u8 zero points).
  absl::StatusOr<std::string> AddZeros8(const std::string& base, ir::DType dtype,
                                        std::vector<int64_t> dims, const ir::Provenance& prov);

 private:
  ir::Graph& graph_;
  std::unordered_set<std::string> taken_;
};

// A node with the given fields (name used as given: callers pass Fresh()).
ir::Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, const ir::Provenance& prov,
                  std::string domain = "");

// The float elements of an f32 initializer `name`, or InvalidArgument
// naming `what` and the tensor when it is missing or not f32.
absl::StatusOr<std::vector<float>> ReadF32Initializer(const ir::Graph& graph,
                                                      const std::string& name,
                                                      const std::string& what);

// Drops initializers no node (or subgraph) reads and no graph output names.
void RemoveUnusedInitializers(ir::Graph& graph);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_GRAPH_EDIT_H_
