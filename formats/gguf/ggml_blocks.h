// ggml's tensor block codecs: one row of f32 weights to the bytes llama.cpp
// reads for a GGUF tensor type, and back. Byte layouts are ggml's
// (ggml-common.h block_q4_0 ... block_q6_K); gguf_format.h has the geometry.
//
// Without importance the encoders reproduce ggml's reference quantizers
// (quantize_row_*_ref: Q8_0..Q5_1 round-to-nearest, the K-quant scale
// searches) bit for bit, as built by llama.cpp's x86-64 release build; with
// importance they reproduce ggml's imatrix path (quantize_q4_0 ... quantize_q6_K
// with quant_weights). tests/testdata/gguf holds ggml's own bytes for both.
// Results depend on float operation order, so this library is compiled with
// -ffp-contract=off (a fused multiply-add would change chosen codes).
#ifndef SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_H_
#define SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "formats/gguf/gguf_format.h"
#include "ir/dtype.h"

namespace slimpack::gguf {

// The IR dtype of a float GGUF type: f16, bf16, or f32 for anything else.
ir::DType FloatDType(TensorType type);

// Bytes of a row of `n` weights of `type`, or -1 when the type is unknown,
// n is negative or not a multiple of the type's block size, or the size
// overflows int64.
int64_t RowBytes(TensorType type, int64_t n);

// Encodes src[0..n) into RowBytes(type, n) bytes at dst. `n` is one row
// (ggml's n_per_row, a tensor's ne[0]): the imatrix encoders of Q4_0..Q5_1
// take a statistic over the whole row, so a tensor is quantized one row per
// call, each call with the same `importance`.
// `importance` (nullable) holds n per-column weights (llama.cpp's imatrix:
// mean squared activation). Q8_0 and the float types ignore it, as ggml does.
// Errors: Unimplemented for an unknown type (listing the supported ones);
// InvalidArgument when n is negative or not a multiple of the block size,
// or, for the quantized types, when a weight is not finite or an importance
// value is negative or not finite (naming the index).
absl::Status QuantizeRow(TensorType type, const float* src, int64_t n,
                         const float* importance, uint8_t* dst);

// QuantizeRow over `rows` consecutive rows of `cols` values (src and dst
// row after row): the same bytes as one call per row. The K types encode
// each 256-weight super-block alone, so their rows go to the searches
// together, which fills the searches' vector lanes however short or odd
// the rows (a row of 11008 weights is 344 groups of 32: 6 passes of 64
// lanes where 5.4 would do). An error is the first failing row's
// QuantizeRow error, prefixed "row <first_row + its index>: ".
absl::Status QuantizeRows(TensorType type, const float* src, int64_t rows, int64_t cols,
                          const float* importance, uint8_t* dst, int64_t first_row = 0);

// Decodes RowBytes(type, n) bytes at src into n floats, bit-identical to
// ggml's dequantize_row_* (and its f16/bf16 to f32 conversions). Errors as
// QuantizeRow's for the type and n.
absl::Status DequantizeRow(TensorType type, const uint8_t* src, int64_t n,
                           float* dst);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_H_
