// Which ggml type each tensor of a decoder gets in a GGUF export: the
// llama-quantize presets ("q4_k_m", "q8_0", "f16", ...) with llama.cpp's
// per-tensor rules (attn_v / ffn_down get more bits in some layers, the
// output matrix gets Q6_K), and its fallbacks for rows that do not divide a
// block. Mirroring llama-quantize's choices lets a user compare the two
// tools file for file at the same size.
#ifndef SLIMPACK_EXPORT_GGUF_TYPES_H_
#define SLIMPACK_EXPORT_GGUF_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_format.h"
#include "support/regex.h"

namespace slimpack::gguf_export {

// A llama-quantize file type (its LLAMA_FTYPE_* value goes into
// general.file_type).
struct Preset {
  std::string name;          // "q4_k_m"
  uint32_t file_type = 0;    // llama_ftype
  gguf::TensorType base;     // the default type of 2-D weights
  bool mixed = false;        // applies llama.cpp's per-tensor rules
};

// Parses a preset name, case-insensitively ("Q4_K_M" == "q4_k_m").
// InvalidArgument listing the accepted names otherwise.
absl::StatusOr<Preset> ParsePreset(const std::string& name);
// The accepted names, comma-separated (for --help and errors).
std::string PresetNames();

// A user's type for the matrices a pattern matches, over the preset's rules:
// llama-quantize's --tensor-type PATTERN=TYPE, or a recipe rule {"match",
// "scheme"}. The pattern (ECMAScript) is searched in the checkpoint name and
// in the GGUF name, so "down_proj" and "ffn_down" both work; the first
// matching override wins; a row length the type's block does not divide
// still falls back as llama-quantize does. 1-D tensors stay f32.
struct TypeOverride {
  support::Regex match;
  gguf::TensorType type;
};

// An override from its pattern and a type name (f32, f16, bf16, q8_0, q4_0,
// q4_1, q5_0, q5_1, q2_k ... q6_k; case-insensitive). InvalidArgument naming
// the pattern or the type otherwise.
absl::StatusOr<TypeOverride> ParseTypeOverride(const std::string& pattern,
                                               const std::string& type);

// What one tensor is, as far as the type rules care.
struct TensorSlot {
  std::string tensor;     // checkpoint name: "model.layers.3.mlp.down_proj.weight"
  std::string gguf_name;  // "blk.3.ffn_down.weight"
  int64_t row_length = 0;  // ne[0]
  int rank = 0;
  int layer = -1;
  // The matrix that produces logits: output.weight, or token_embd.weight
  // when the embedding is tied (llama.cpp quantizes it as the output then).
  bool is_output = false;
};

struct TypeChoice {
  gguf::TensorType type;
  // Non-empty when the preset's type did not fit the row length:
  // "row length 344 is not a multiple of 256 (q4_K): using q5_0".
  std::string fallback_note;
};

// Chooses types in file order; the attn_v counter runs over the calls in
// order (as llama-quantize's does), so call it for every tensor in order.
class TypeChooser {
 public:
  // `has_imatrix`: the export weights errors by an importance matrix, which
  // changes one of llama-quantize's rules (the early ffn_down of q4_0/q5_0).
  TypeChooser(const Preset& preset, int num_layers, int64_t num_heads, int64_t num_kv_heads,
              bool has_imatrix = false, std::vector<TypeOverride> overrides = {});
  TypeChoice Choose(const TensorSlot& slot);

 private:
  gguf::TensorType RuleType(const TensorSlot& slot);
  TypeChoice Fit(const TensorSlot& slot, gguf::TensorType wanted, const std::string& why) const;
  Preset preset_;
  std::vector<TypeOverride> overrides_;
  int num_layers_;
  int64_t gqa_;
  bool has_imatrix_;
  int attn_v_seen_ = 0;
};

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_TYPES_H_
