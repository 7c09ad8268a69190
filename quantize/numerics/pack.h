// Packs a QuantizedMatrix into the IR tensors the shard format stores
// (formats/shard/spec.md "Layouts"): the quantized weight, its f32 scale
// tensor and, for asymmetric schemes, its zero-point tensor.
//
//   scheme              weight dtype   layout            zero point
//   bits 5..8, sym      i8             int8_per_channel  none
//   bits 5..8, asym     u8             int8_per_channel  u8 [out]
//   bits 2..4, sym      i4             int4_groupwise    none
//   bits 2..4, asym     u4             int4_groupwise    u4 (packed)
// Unsigned elements are the centred codes plus 2^(bits-1) (quant_types.h).
// 4-bit elements are packed two per byte, element 2k in the low nibble, over
// the C-order element index of the stored shape.
//
// `transposed` = the original tensor is [cols, rows] (ONNX MatMul weight
// [K, N]); dims, and so the element order, stay those of the original. The
// int8 axis is the output-channel axis (0, or 1 when transposed) with scale
// [out]; the int4 axis is the input-feature axis (1, or 0 when transposed)
// with scale `dims` with that axis replaced by ceil(in / G).
#ifndef SLIMPACK_QUANTIZE_NUMERICS_PACK_H_
#define SLIMPACK_QUANTIZE_NUMERICS_PACK_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "quantize/numerics/quant_types.h"

namespace slimpack::quant {

struct PackedTensors {
  ir::Tensor weight;                     // quant layout filled
  ir::Tensor scale;                      // "<name>.scale", f32
  std::optional<ir::Tensor> zero_point;  // "<name>.zero_point"
};

// InvalidArgument when `original` does not have dims [rows, cols] (or
// [cols, rows] when transposed; an int8 scheme also accepts
// [rows, d1, ..., dk] with d1*...*dk == cols, e.g. a Conv weight, scale
// along axis 0), has no name, or `m`'s vectors have the
// wrong sizes, or the scheme fails ValidateScheme (so 5..7-bit containers
// are per-channel; 8 bits with groups shorter than a row are
// int8_groupwise, rank 2 only like int4_groupwise).
absl::StatusOr<PackedTensors> ToIrTensors(const QuantizedMatrix& m,
                                          const ir::Tensor& original,
                                          bool transposed,
                                          std::string algorithm);

// The tensors ToIrTensors makes for a [rows, cols] matrix under `scheme`,
// every field but the bytes: each data is TensorData::Deferred of the size
// ToIrTensors stores. Same checks as ToIrTensors. Shared by ToIrTensors and
// by conversions that quantize a weight only when it is written.
absl::StatusOr<PackedTensors> PackedShapes(const Scheme& scheme, int64_t rows, int64_t cols,
                                           const ir::Tensor& original, bool transposed,
                                           std::string algorithm);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_PACK_H_
