// The grid an encoded ggml block puts each of its weights on, and writing
// codes into a block without touching its scales. For quantizers that choose
// codes one weight at a time once a block's scales are fixed (GPTQ's error
// feedback on ggml's types: quantize/numerics/gptq.h GptqGrid), so the
// rounding they feed back is the rounding llama.cpp decodes, including the
// super-block's quantized sub-block scales and the f16 fields.
#ifndef SLIMPACK_FORMATS_GGUF_GGML_GRID_H_
#define SLIMPACK_FORMATS_GGUF_GGML_GRID_H_

#include <cstdint>

#include "absl/status/status.h"
#include "formats/gguf/gguf_format.h"

namespace slimpack::gguf {

// One weight's grid: it decodes to scale * (q - zero) + offset for an
// integer code q in [qmin, qmax] (q is what SetBlockCodes takes). Decoding
// through this formula may differ from ggml's own float expression in the
// last bit; DequantizeRow of the block is the exact value.
struct WeightGrid {
  float scale = 0;
  float offset = 0;
  int zero = 0;
  int qmin = 0;
  int qmax = 0;
};

// The nearest code to v on g (ties to even code distance as nearbyint does);
// qmin when g.scale is 0 (every code decodes alike).
int NearestCode(const WeightGrid& g, float v);

// Fills grids[0 .. BlockSize(type)) from one encoded block of `type` (a
// quantized type: Q4_0 .. Q8_0, Q2_K .. Q6_K). InvalidArgument for a float
// or unknown type.
absl::Status BlockGrids(TensorType type, const uint8_t* block, WeightGrid* grids);

// Writes codes[0 .. BlockSize(type)) (each within its weight's [qmin, qmax]
// from BlockGrids) into `block`, keeping its scales. InvalidArgument for a
// float or unknown type or a code out of range (naming its index).
absl::Status SetBlockCodes(TensorType type, const uint8_t* codes, uint8_t* block);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGML_GRID_H_
