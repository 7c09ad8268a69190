// A one-node graph run by the same interpreter and kernels as the full
// model, so the quant-only numbers use exactly the candidate's arithmetic.
#include "report/single_node.h"

#include <set>

#include "support/status_macros.h"

namespace slimpack::report {

absl::StatusOr<SingleNodeRunner> SingleNodeRunner::Create(const ir::Node& node,
                                                          const ir::Graph& graph, int64_t opset,
                                                          runtime::InterpreterOptions options) {
  if (node.HasSubgraphs()) {
    return absl::UnimplementedError("node '" + node.name + "' (" + node.op_type +
                                    ") has subgraphs; it is not run alone");
  }
  SingleNodeRunner r;
  r.options_ = std::move(options);
  r.options_.opset_version = opset;
  r.graph_.name = "single_" + node.name;
  r.graph_.nodes.push_back(node);
  std::set<std::string> seen;
  for (const std::string& in : node.inputs) {
    if (in.empty() || !seen.insert(in).second) continue;
    if (const ir::Tensor* t = graph.FindInitializer(in)) {
      RETURN_IF_ERROR(r.graph_.AddInitializer(*t));
      // A quantized weight runs dequantized, from its scale and zero point.
      for (const std::string* aux : {&t->quant.scale, &t->quant.zero_point}) {
        const ir::Tensor* a = aux->empty() ? nullptr : graph.FindInitializer(*aux);
        if (a != nullptr && seen.insert(*aux).second) RETURN_IF_ERROR(r.graph_.AddInitializer(*a));
      }
    } else {
      r.feeds_.push_back(in);
    }
  }
  for (const std::string& out : node.outputs) {
    if (!out.empty()) r.graph_.outputs.push_back(ir::ValueInfo{out, ir::DType::kUndefined, {}});
  }
  return r;
}

absl::StatusOr<std::vector<runtime::RtTensor>> SingleNodeRunner::Run(
    const std::map<std::string, runtime::RtTensor>& inputs) {
  if (interp_ == nullptr) {
    for (const std::string& f : feeds_) {
      auto it = inputs.find(f);
      if (it == inputs.end()) {
        return absl::InternalError("single-node run of '" + graph_.nodes[0].name +
                                   "': no value for input '" + f + "'");
      }
      graph_.inputs.push_back(ir::ValueInfo{f, it->second.dtype(), {}});
    }
    ASSIGN_OR_RETURN(runtime::Interpreter interp,
                     runtime::Interpreter::Create(graph_, options_));
    interp_ = std::make_shared<runtime::Interpreter>(std::move(interp));
  }
  return interp_->Run(inputs);
}

}  // namespace slimpack::report
