// Runs one node of a graph by itself on given input tensors: the
// "quant-only" measurement runs a candidate layer on the reference's FP32
// activations so its own error is told apart from the error it inherits.
#ifndef SLIMPACK_REPORT_SINGLE_NODE_H_
#define SLIMPACK_REPORT_SINGLE_NODE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/interpreter.h"
#include "ir/graph.h"

namespace slimpack::report {

class SingleNodeRunner {
 public:
  // `node` is copied; its initializer inputs (and the scale / zero point of
  // quantized ones) are taken from `graph`. `options` gives threads and
  // kernels; its opset is replaced by `opset`. Unimplemented for a node with
  // subgraphs (they may read outer scope).
  static absl::StatusOr<SingleNodeRunner> Create(const ir::Node& node, const ir::Graph& graph,
                                                 int64_t opset,
                                                 runtime::InterpreterOptions options);

  // `inputs` must hold every non-initializer input of the node. The
  // interpreter is planned on the first call (input dtypes are known then).
  absl::StatusOr<std::vector<runtime::RtTensor>> Run(
      const std::map<std::string, runtime::RtTensor>& inputs);

  // Non-initializer inputs the caller must feed.
  const std::vector<std::string>& feeds() const { return feeds_; }

 private:
  ir::Graph graph_;
  std::vector<std::string> feeds_;
  runtime::InterpreterOptions options_;
  std::shared_ptr<runtime::Interpreter> interp_;
};

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_SINGLE_NODE_H_
