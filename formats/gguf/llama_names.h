// The llama-family tensor names on both sides of a GGUF conversion
// (Hugging Face "model.layers.3.mlp.down_proj.weight" <-> llama.cpp
// "blk.3.ffn_down.weight"), and llama.cpp's row order for the rotary q/k
// projections. The GGUF exporter and importer share them, so a round trip
// cannot drift.
#ifndef SLIMPACK_FORMATS_GGUF_LLAMA_NAMES_H_
#define SLIMPACK_FORMATS_GGUF_LLAMA_NAMES_H_

#include <cstdint>
#include <string>

namespace slimpack::gguf {

// "" when the name has no counterpart.
std::string GgufNameFromHf(const std::string& hf_name);
std::string HfNameFromGguf(const std::string& gguf_name);

// True for the tensors whose rows llama.cpp (arch "llama") stores in its
// interleaved rotary order: q and k projections and their biases.
bool IsRopeQ(const std::string& gguf_name);
bool IsRopeK(const std::string& gguf_name);

// HF stores each head's q/k rows as [first half | second half] of the
// rotation pairs; llama.cpp's GGML_ROPE_TYPE_NORM expects interleaved pairs
// (convert_hf_to_gguf.py's permute). Returns the HF row held by GGUF row
// `row`, for `heads` heads of rows / heads rows each.
int64_t RopePermutedSourceRow(int64_t row, int64_t rows, int64_t heads);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_LLAMA_NAMES_H_
