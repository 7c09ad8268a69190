// fuse-hardswish: the two decomposed HardSwish forms exporters emit become
// one HardSwish node.
//
//   Form A (PyTorch below opset 14):
//     %h = HardSigmoid(%x) {alpha=1/6, beta=0.5}   %y = Mul(%x, %h)
//   Form B (Paddle2ONNX hard_swish, hand-written x*relu6(x+3)/6):
//     %a = Add(%x, 3)   %c = Clip(%a, 0, 6)   %m = Mul(%x, %c)
//     %y = Div(%m, 6)  or  Mul(%m, 1/6)
//   After: %y = HardSwish(%x)              (model opset >= 14)
//          %y = slimpack.HardSwish(%x)     (below 14; same semantics)
//
//   HardSwish(x) = x * max(0, min(1, x/6 + 1/2))   (Howard et al. 2019,
//   "Searching for MobileNetV3", eq. 2)
//
// Below opset 14 the pass emits our own op instead of raising the opset,
// because raising 12 -> 14 would change the meaning of other ops in the
// model (Squeeze/Unsqueeze/ReduceSum/Split take axes as inputs from 13).
// Conditions (each failure logged): constants within 1e-6 relative of
// 1/6, 0.5, 3, 0 and 6 (Clip bounds as attributes before opset 11 or as
// inputs); every intermediate has one reader; the Mul's other operand is
// the input of the HardSigmoid/Add. Not bit-exact (x/6 + 0.5 vs
// (x + 3) / 6 round differently): within 1e-6 in tests.
// Not handled: Relu6 written as Min(Max(.)), HardSigmoid(x) * x where the
// HardSigmoid output has other readers.
#ifndef SLIMPACK_PASSES_FUSE_FUSE_HARDSWISH_H_
#define SLIMPACK_PASSES_FUSE_FUSE_HARDSWISH_H_

#include "passes/pass.h"

namespace slimpack::passes {

class FuseHardSwishPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-hardswish"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_FUSE_FUSE_HARDSWISH_H_
