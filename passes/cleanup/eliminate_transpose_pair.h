// eliminate-transpose-pair: folds a Transpose that reads another Transpose.
//
//   Before: %t = Transpose(%x) {perm=p1}    %y = Transpose(%t) {perm=p2}
//   After:  readers of %y read %x               (composition is identity)
//           %y = Transpose(%x) {perm=c}         (otherwise; %t single use)
//
//   y[j] = t[p2[j]] = x[p1[p2[j]]], so the combined perm is c[j] = p1[p2[j]].
//
// Conditions (failures logged): both perms are known (an absent perm means
// reversal and needs the rank of %x); for the identity case %y is not a
// graph output and is not read from inside a subgraph; for the merge case
// %t has no other reader. %t stays when it has other readers. Bit-exact:
// only data movement is removed.
// Not handled: Transpose pairs separated by elementwise ops, Reshape pairs.
#ifndef SLIMPACK_PASSES_CLEANUP_ELIMINATE_TRANSPOSE_PAIR_H_
#define SLIMPACK_PASSES_CLEANUP_ELIMINATE_TRANSPOSE_PAIR_H_

#include "passes/pass.h"

namespace slimpack::passes {

class EliminateTransposePairPass final : public Pass {
 public:
  std::string_view name() const override { return "eliminate-transpose-pair"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_CLEANUP_ELIMINATE_TRANSPOSE_PAIR_H_
