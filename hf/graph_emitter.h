// A small helper that appends ONNX nodes and constants to an ir::Graph with
// unique names and a provenance on every node.
#ifndef SLIMPACK_HF_GRAPH_EMITTER_H_
#define SLIMPACK_HF_GRAPH_EMITTER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::hf {

class GraphEmitter {
 public:
  explicit GraphEmitter(ir::Graph& graph) : graph_(graph) {}

  // Sets the scope (an HF module name) used for node names and provenance.
  void SetScope(std::string scope) { scope_ = std::move(scope); }
  const std::string& scope() const { return scope_; }

  // Appends `op_type`(inputs) with one output, named "<scope>/<op>_<n>";
  // returns the output value name.
  std::string Op(const std::string& op_type, std::vector<std::string> inputs,
                 std::map<std::string, ir::Attribute> attributes = {});
  // A node of `domain` with `outputs` outputs, named like Op's; returns the
  // output value names.
  std::vector<std::string> MultiOp(const std::string& op_type, const std::string& domain,
                                   std::vector<std::string> inputs, int outputs,
                                   std::map<std::string, ir::Attribute> attributes = {});
  // Renames the output of the node added last (graph outputs need fixed
  // names); returns `name`.
  std::string NameLastOutput(const std::string& name) {
    graph_.nodes.back().outputs[0] = name;
    return name;
  }
  // Small owned constants (shapes, axes, scalars); returns the value name.
  std::string ConstI64(const std::string& name, std::vector<int64_t> dims,
                       const std::vector<int64_t>& values);
  std::string ConstF32(const std::string& name, std::vector<int64_t> dims,
                       const std::vector<float>& values);
  // First error from adding an initializer (name clash), if any.
  const absl::Status& status() const { return status_; }

 private:
  ir::Graph& graph_;
  std::string scope_;
  int counter_ = 0;
  absl::Status status_;
};

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_GRAPH_EMITTER_H_
