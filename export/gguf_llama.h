// A Hugging Face llama-family decoder (llama, mistral, qwen2) as a GGUF
// file llama.cpp loads: llama.cpp's tensor names and row order, the
// architecture keys from config.json, the tokenizer from tokenizer.json, and
// every matrix encoded in the ggml type the preset's rules choose.
#ifndef SLIMPACK_EXPORT_GGUF_LLAMA_H_
#define SLIMPACK_EXPORT_GGUF_LLAMA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_format.h"
#include "export/gguf_types.h"
#include "ir/graph.h"

namespace slimpack::gguf_export {

// An importance matrix, as llama-quantize --imatrix takes one: per GGUF
// matrix name ("blk.0.ffn_down.weight"), the mean of x^2 over calibration
// tokens for each input column. ggml's quantizers weight each weight's
// rounding error by it.
struct GgufImportance {
  std::map<std::string, std::vector<float>> columns;
  // Recorded in the file under llama-quantize's keys (quantize.imatrix.file,
  // .dataset, .entries_count, .chunks_count).
  std::string file;
  std::string dataset;
  int64_t chunks = 0;
};

// A matrix its caller encoded (GPTQ on ggml's grids: converter/gguf_gptq.h):
// the ggml type and the rows in the checkpoint's row order (the export
// permutes rotary rows as it permutes float ones).
struct PreEncodedMatrix {
  gguf::TensorType type = gguf::TensorType::kF32;
  std::vector<uint8_t> rows;  // rows * gguf::RowBytes(type, cols) bytes
};

struct GgufExportOptions {
  std::string preset = "f16";  // export/gguf_types.h ParsePreset
  // Types chosen by pattern over the preset's rules (gguf_types.h
  // TypeOverride); each must match some matrix (InvalidArgument otherwise).
  std::vector<TypeOverride> type_overrides;
  int threads = 1;
  // Matrices with an entry are quantized with it, the others (the token
  // embedding, which no matmul reads; output.weight unless the imatrix
  // covers it) without, as llama-quantize does; an entry whose length is not
  // the matrix's row length is an error.
  std::optional<GgufImportance> importance;
  // By checkpoint tensor name: written as they are. Each must have the type
  // the preset chooses (PlanMatrixTypes) and name a float matrix of the model
  // (Internal otherwise); `encoded_by` says how, for -v ("gptq").
  std::map<std::string, PreEncodedMatrix> encoded;
  std::string encoded_by;
  // Per-tensor lines ("blk.0.ffn_down.weight [344, 128] f16 (row length 344
  // ...)") for -v; fallbacks are also counted in the result.
  std::function<void(const std::string&)> log;
  // A GGUF source whose tensors are quantized is decoded and encoded again
  // (--allow-requantize) instead of refused.
  bool allow_requantize = false;
};

struct GgufExportResult {
  uint64_t file_bytes = 0;
  int64_t tensors = 0;
  int64_t fallbacks = 0;  // tensors that could not take the preset's type
  int64_t with_importance = 0;  // quantized matrices weighted by the imatrix
  // Weights of an artifact already quantized: written with their codes as
  // they are (gguf_carried_codes.h), or dequantized and quantized again
  // into the preset's type with the largest relative L2 error that added.
  int64_t carried = 0;
  int64_t pre_encoded = 0;  // from GgufExportOptions::encoded
  int64_t requantized = 0;
  double max_requantized_rel_l2 = 0;
  // Average bits per weight over the 2-D matrices.
  double matrix_bits_per_weight = 0;
};

// A float matrix of the export and the ggml type the preset gives it.
struct MatrixTarget {
  std::string tensor;     // checkpoint name: "model.layers.0.mlp.down_proj.weight"
  std::string gguf_name;  // "blk.0.ffn_down.weight"
  gguf::TensorType type;
};

// The type ExportDecoderToGguf will give every 2-D float weight of `model`
// with these options (with_importance: as if options.importance were set,
// which changes one of llama-quantize's rules), in file order. Errors as
// ExportDecoderToGguf's planning (an unknown family, bad sizes, a tensor
// with no llama.cpp name).
absl::StatusOr<std::vector<MatrixTarget>> PlanMatrixTypes(const ir::Model& model,
                                                          const GgufExportOptions& options,
                                                          bool with_importance);

// Writes `model` (an imported HF decoder with float weights) to `path`
// atomically. A llama/mistral whose layers were pruned to different widths
// (hf/layer_sizes.h) is written as llama.cpp's "deci" architecture, which
// reads a feed-forward length and head counts per layer. Errors:
// InvalidArgument naming the tensor, file or field (an unknown family,
// per-layer size lists config.json gets wrong, a missing weight, a
// tokenizer llama.cpp would read differently, an importance entry of the
// wrong length or naming no matrix, an input permutation that is not one);
// Unimplemented for a qwen2 pruned per layer. Weights already in a slimpack
// integer layout keep their codes where a ggml type holds the layout
// (gguf_carried_codes.h) and are otherwise dequantized and encoded in the
// preset's type, the error that adds logged per tensor; an act-order
// weight (hf/input_perm.h) is always dequantized, its columns put back in
// checkpoint order first (GGUF has no permutation). Importance entries are
// in checkpoint column order, as llama.cpp's imatrix is.
absl::StatusOr<GgufExportResult> ExportDecoderToGguf(const ir::Model& model,
                                                     const GgufExportOptions& options,
                                                     const std::string& path);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_LLAMA_H_
