// slimpack integer layouts that a ggml block type holds as they are, so a
// quantized artifact goes to GGUF with its codes intact (GPTQ's, AWQ's,
// ours) instead of being dequantized and quantized again:
//   int4 group 32 along the row, symmetric (i4, x = q s)      -> Q4_0: n = q + 8, d = s
//   int4 group 32 along the row, zero point (u4, x = (q-z) s) -> Q4_1: n = q, d = s, m = -z s
//   int8 per output row, symmetric, rows of 32k (x = q s)      -> Q8_0: qs = q, d = s per block
//   int8 group 32 along the row, symmetric (int8_groupwise)   -> Q8_0: qs = q, d = s of the group
//   ggml_blocks of any block type                             -> that type, bytes copied
// d and m are stored in f16 by ggml, so values match up to that rounding
// (relative 2^-11 of the scale; exact when the scale is an f16 value).
#ifndef SLIMPACK_EXPORT_GGUF_CARRIED_CODES_H_
#define SLIMPACK_EXPORT_GGUF_CARRIED_CODES_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "formats/gguf/gguf_format.h"
#include "ir/tensor.h"

namespace slimpack::gguf_export {

// The ggml type holding `q`'s layout as it is (see above), or nullopt.
std::optional<gguf::TensorType> CarriedGgmlType(const ir::Tensor& q);

// Encodes the rows of rank-1/2 `q` (its codes, `scale`, `zero_point` or
// null; ggml_blocks needs neither) as `type` blocks into dst[0, size): output row r is source row
// source_row(r) (llama.cpp's rope order of q/k rows). InvalidArgument
// naming the tensor when the sizes disagree or a scale is not finite.
absl::Status EncodeCarriedRows(gguf::TensorType type, const ir::Tensor& q,
                               const ir::Tensor* scale, const ir::Tensor* zero_point,
                               const std::function<int64_t(int64_t)>& source_row,
                               uint8_t* dst, uint64_t size);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_CARRIED_CODES_H_
