// The quantized-lookup plan rewrite: in a static W8A8 graph every
// activation between two quantized ops makes a round trip through float,
//
//   q = QLinearConv(...)                      q = QLinearConv(...)
//   f = DequantizeLinear(q, s1, z1)    ==>    y = slimpack.QuantizedLookup(q, table)
//   h = HardSwish(f)
//   y = QuantizeLinear(h, s2, z2)
//
// three passes over the tensor for a function of one byte. When both
// quantizations are per tensor with constant parameters and the op between
// them is elementwise with constant parameters, y depends on q's byte
// alone, so the chain becomes a 256-entry table indexed by that byte (what
// ONNX Runtime's QDQ transformer does for its lookup-table ops). The table
// is computed by running the original three nodes, with the interpreter's
// own kernels, on all 256 codes: the fused graph gives the unfused graph's
// bytes exactly, for any input.
//
// The interpreter applies it to its copy of a graph when
// InterpreterOptions::fuse_quantized_lookups is set (off by default: the
// float values in the middle disappear, and calibration and the report's
// per-layer comparison observe them). Artifacts and exports never see the
// fused op.
#ifndef SLIMPACK_RUNTIME_QUANTIZED_LOOKUP_H_
#define SLIMPACK_RUNTIME_QUANTIZED_LOOKUP_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel_registry.h"

namespace slimpack::runtime {

// The fused op: inputs (x: u8 or i8, table: [256] of the output type),
// output table[byte of x], x's shape.
inline constexpr char kQuantizedLookupOp[] = "QuantizedLookup";

// Rewrites every fusable DequantizeLinear -> elementwise op ->
// QuantizeLinear chain of `g`'s top level as above, computing each table
// with `kernels`. Chains whose table cannot be computed (a kernel refuses
// its parameters) are left as they are. Returns the number fused.
absl::StatusOr<int64_t> FuseQuantizedLookups(ir::Graph& g,
                                             std::shared_ptr<const KernelRegistry> kernels,
                                             int64_t opset_version);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_QUANTIZED_LOOKUP_H_
