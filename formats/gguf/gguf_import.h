// A GGUF file (llama.cpp's, or ours) of a llama-family decoder as an
// ir::Model like an imported Hugging Face checkpoint: HF tensor names and
// row order, the architecture from the GGUF metadata, so eval / run /
// report / convert treat a GGUF and a safetensors checkpoint alike.
// Quantized tensors keep their ggml blocks (ir::QuantKind::kGgmlBlocks,
// algorithm "gguf"): `convert` carries them into an artifact or a GGUF
// unchanged, and wherever they are computed with they decode to exactly
// what llama.cpp multiplies with (ggml's dequantization), which lets one
// report put llama-quantize's output beside ours. F32/F16/BF16 tensors are
// decoded to f32.
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_IMPORT_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_IMPORT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::gguf {

// The carried file (ir::Model::carried_overrides) an import adds when the
// GGUF has a tokenizer: its tokenizer.* keys and general.name, byte for byte,
// as a GGUF of metadata alone.
inline constexpr char kTokenizerSideFile[] = "tokenizer.gguf";

// Errors name the file and the key or tensor: Unimplemented for an
// architecture other than llama/qwen2 or a tensor slimpack has no HF name
// for; InvalidArgument for missing or malformed architecture keys (and
// every ParseGguf / hf::ParseHfConfig / TagWeightRoles refusal). Tensors
// whose rows move (llama.cpp's rotary q/k order back to HF's) are copied
// on up to `threads` threads (0: one per core); the model is the same at
// any count.
absl::StatusOr<ir::Model> ImportGguf(const std::string& path, int threads = 1);

// True when `head` (a file's first bytes) starts with the GGUF magic.
bool HasGgufMagic(std::string_view head);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_IMPORT_H_
