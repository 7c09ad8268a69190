// fold-constants: evaluates nodes whose inputs are all constants and
// replaces them with initializers holding the result.
//
//   Before: init %a, %b;  %c = Add(%a, %b);  %y = Mul(%x, %c)
//   After:  init %a, %b, %c (= a + b);  %y = Mul(%x, %c)
//
// Results are computed by the calibration interpreter's kernels, so folded
// values equal what the interpreter would compute at run time (bit-exact).
// Not folded: nodes with subgraphs, random ops, ops without a kernel, nodes
// reading f16/bf16 constants (the interpreter computes those in f32, which
// would change the dtype), and results larger than `max_output_bytes` in
// total (folding ConstantOfShape/Expand/Tile can blow up the file). The
// inputs that become unused are left for eliminate-dead-nodes.
#ifndef SLIMPACK_PASSES_FOLD_FOLD_CONSTANTS_H_
#define SLIMPACK_PASSES_FOLD_FOLD_CONSTANTS_H_

#include <cstdint>

#include "passes/pass.h"

namespace slimpack::passes {

struct FoldConstantsOptions {
  // Largest total byte size of one node's folded outputs.
  int64_t max_output_bytes = int64_t{1} << 20;
};

class FoldConstantsPass final : public Pass {
 public:
  explicit FoldConstantsPass(FoldConstantsOptions options = {})
      : options_(options) {}
  std::string_view name() const override { return "fold-constants"; }
  // A kernel error on constant inputs (e.g. a Reshape to an impossible
  // shape) is returned with the node named: the model could never run.
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;

 private:
  FoldConstantsOptions options_;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FOLD_FOLD_CONSTANTS_H_
