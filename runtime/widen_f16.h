// The f16 plan rewrite: a graph whose weights and activations are float16
// (the common mobile export) is rewritten to compute in f32, with exact
// casts where f16 meets the outside or the model itself rounds. The
// interpreter applies it to its copy of every graph that holds an f16 value;
// the `widen-f16` pass (passes/lower/widen_f16.h) applies it before
// quantization so the quantizers see an ordinary f32 graph.
//
//   Before (f16 everywhere):           After:
//     x: f16 input                       x: f16 input
//     c = Conv(x, W:f16)                 x_f32 = Cast<to=FLOAT>(x)
//     h = Cast<to=FLOAT16>(s)            c = Conv(x_f32, W:f32)
//     y = Relu(c)                        h_f16 = Cast<to=FLOAT16>(s)
//     y: f16 output                      h = Cast<to=FLOAT>(h_f16)
//                                        y_f32 = Relu(c)
//                                        y = Cast<to=FLOAT16>(y_f32)
//
// - f16 initializers, Constant and ConstantOfShape values become f32
//   (exact: every f16 is an f32). The `dtype` attribute of EyeLike and the
//   Random* ops, and value_info entries, change from FLOAT16 to FLOAT.
// - f16 graph inputs keep their declared type; a Cast to f32 (exact) feeds
//   every reader except Casts to FLOAT, which read the f16 value directly.
// - f16 graph outputs keep their declared type: the value is computed in
//   f32 under the name `<y>_f32` and rounded to f16 by one Cast at the end,
//   as a f16 runtime rounds its last op's result.
// - Cast(to=FLOAT16) inside the graph keeps its rounding: its result is
//   renamed `<v>_f16` and widened back to `v` (exact), so readers see the
//   f16-rounded numbers a f16 runtime's Cast gives. CastLike whose target
//   is f16 becomes that Cast first.
// - Subgraphs (If/Loop/Scan bodies) get the same treatment, with their
//   inputs and outputs retyped to f32 (the interpreter feeds them f32).
// Numbers: every op then runs in f32 where a f16 runtime rounds each op's
// output to f16, so results are closer to the f32 original than a f16
// runtime's; Casts to f16 and the outputs match its rounding exactly.
// Idempotent: a second run changes nothing. Not handled: bfloat16 compute
// (bf16 initializers are still widened when bound, runtime/rt_tensor.cc).
#ifndef SLIMPACK_RUNTIME_WIDEN_F16_H_
#define SLIMPACK_RUNTIME_WIDEN_F16_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::runtime {

// What WidenF16ToF32 changed.
struct F16Widening {
  int64_t initializers = 0;  // f16 initializers (and Constant values) widened
  int64_t inputs = 0;        // f16 graph inputs given an entry Cast to f32
  int64_t outputs = 0;       // f16 graph outputs given an exit Cast to f16
  int64_t roundings = 0;     // Cast-to-f16 results widened back for readers
  int64_t retyped = 0;       // dtype attributes and value_info entries retyped
  bool changed() const {
    return initializers + inputs + outputs + roundings + retyped > 0;
  }
  // "computed in f32: 12 f16 initializers widened, 1 input cast on entry,
  // 1 output cast back to f16, 1 Cast to f16 kept as rounding".
  std::string Summary() const;
};

// True when `graph` (or a subgraph) declares or creates any f16 value.
bool HoldsF16(const ir::Graph& graph);

// Rewrites `graph` as described above. Unimplemented naming the node when
// a CastLike's target dtype is unknown (it may be f16); the graph is left
// unchanged then.
absl::StatusOr<F16Widening> WidenF16ToF32(ir::Graph& graph);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_WIDEN_F16_H_
