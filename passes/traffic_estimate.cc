// EstimateActivationTraffic (see traffic_estimate.h).
#include "passes/traffic_estimate.h"

#include <map>
#include <string>
#include <unordered_map>

#include "runtime/interpreter.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/status_macros.h"

namespace slimpack::passes {

absl::StatusOr<TrafficEstimate> EstimateActivationTraffic(
    const ir::Graph& graph, int64_t opset, int64_t symbolic_dim) {
  std::map<std::string, runtime::RtTensor> inputs;
  std::unordered_map<std::string, int64_t> value_bytes;
  for (const ir::ValueInfo& in : graph.inputs) {
    if (graph.FindInitializer(in.name) != nullptr) continue;
    std::vector<int64_t> dims;
    for (const ir::Dim& d : in.shape.dims()) {
      dims.push_back(d.is_static() ? d.value : symbolic_dim);
    }
    ir::DType dtype = in.dtype == ir::DType::kUndefined ? ir::DType::kF32 : in.dtype;
    ASSIGN_OR_RETURN(runtime::RtTensor t, runtime::RtTensor::Allocate(dtype, dims));
    value_bytes[in.name] = static_cast<int64_t>(t.byte_size());
    inputs[in.name] = std::move(t);
  }
  runtime::InterpreterOptions options;
  options.opset_version = opset;
  ASSIGN_OR_RETURN(runtime::Interpreter interpreter,
                   runtime::Interpreter::Create(graph, options));
  TrafficEstimate estimate;
  // Nodes run in dependency order, so a node's activation inputs are known
  // by the time it is observed; names that are not (initializers, outer
  // constants) are weights and not counted.
  interpreter.SetObserver([&](const ir::Node& node,
                              const std::vector<runtime::RtTensor>& outputs) {
    ++estimate.nodes;
    for (const std::string& in : node.inputs) {
      auto it = value_bytes.find(in);
      if (it != value_bytes.end()) estimate.bytes_read += it->second;
    }
    for (size_t i = 0; i < outputs.size() && i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || !outputs[i].defined()) continue;
      int64_t bytes = static_cast<int64_t>(outputs[i].byte_size());
      value_bytes[node.outputs[i]] = bytes;
      estimate.bytes_written += bytes;
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(interpreter.Run(inputs).status());
  return estimate;
}

}  // namespace slimpack::passes
