// eliminate-duplicate-constants: common-subexpression elimination of
// identical constants. Exporters emit the same scalar, axes list or shape
// many times (one Constant per use); after import these are separate
// initializers.
//
//   Before: init %c1 = f32 {2.0}   init %c2 = f32 {2.0}
//           %a = Pow(%x, %c1)       %b = Pow(%y, %c2)
//   After:  %a = Pow(%x, %c1)       %b = Pow(%y, %c1)   (%c2 removed)
//
// Two initializers are the same when dtype, dims and bytes are equal; the
// first in initializer order is kept and absorbs the provenance of the
// others. Option `max-bytes` (default 256) bounds the size of constants
// considered (scalars, axes, shapes), so named weights, even untrained
// all-ones norm scales, are never merged: quantization recipes select
// them by name.
// Conditions (skips logged): the duplicate is not a graph input or
// output, and is not read from inside a subgraph. Bit-exact.
// Not handled: quantized tensors (quant layout set), constants inside
// subgraphs.
#ifndef SLIMPACK_PASSES_CLEANUP_ELIMINATE_DUPLICATE_CONSTANTS_H_
#define SLIMPACK_PASSES_CLEANUP_ELIMINATE_DUPLICATE_CONSTANTS_H_

#include <cstdint>

#include "passes/pass.h"

namespace slimpack::passes {

struct EliminateDuplicateConstantsOptions {
  int64_t max_bytes = 256;
};

class EliminateDuplicateConstantsPass final : public Pass {
 public:
  explicit EliminateDuplicateConstantsPass(
      EliminateDuplicateConstantsOptions options = {})
      : options_(options) {}
  std::string_view name() const override { return "eliminate-duplicate-constants"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;

 private:
  EliminateDuplicateConstantsOptions options_;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_CLEANUP_ELIMINATE_DUPLICATE_CONSTANTS_H_
