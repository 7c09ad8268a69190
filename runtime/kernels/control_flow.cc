// If: runs then_branch or else_branch in the current scope.
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {

absl::Status If(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* cond, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(double v, ReadScalar(*cond, "cond"));
  const std::string branch = v != 0 ? "then_branch" : "else_branch";
  ASSIGN_OR_RETURN(const ir::Graph* g, ctx.GraphAttr(branch));
  ASSIGN_OR_RETURN(std::vector<RtTensor> outs, ctx.RunSubgraph(*g, {}));
  if (outs.size() != ctx.num_outputs()) {
    return absl::InvalidArgumentError(branch + " produced " + std::to_string(outs.size()) +
                                      " outputs, the node has " +
                                      std::to_string(ctx.num_outputs()));
  }
  for (size_t i = 0; i < outs.size(); ++i) ctx.SetOutput(i, std::move(outs[i]));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
