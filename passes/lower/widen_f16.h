// widen-f16: a float16 graph (f16 weights and activations) rewritten to
// compute in f32 with exact casts at its f16 inputs, outputs and Casts, so
// the quantizers and fusions see an ordinary f32 graph while the model
// keeps its f16 interface. The rewrite itself is runtime::WidenF16ToF32
// (runtime/widen_f16.h: Before/After, what is exact, what is not handled);
// the interpreter applies the same rewrite to every graph it plans, so a
// graph runs with the same numbers before and after this pass.
// `slimpack convert` runs it before quantizing an f16 graph.
#ifndef SLIMPACK_PASSES_LOWER_WIDEN_F16_H_
#define SLIMPACK_PASSES_LOWER_WIDEN_F16_H_

#include "passes/pass.h"

namespace slimpack::passes {

class WidenF16Pass final : public Pass {
 public:
  std::string_view name() const override { return "widen-f16"; }
  absl::Status Run(ir::Graph& graph, PassContext& context) const override;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_LOWER_WIDEN_F16_H_
