// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json) as GGUF
// tokenizer metadata, so llama.cpp tokenizes text exactly as the original
// tokenizer does: tokens in id order, their types, BPE merges, the
// pre-tokenizer's name as llama.cpp knows it, special token ids and the chat
// template. A tokenizer llama.cpp would split differently is refused rather
// than exported garbled.
#ifndef SLIMPACK_EXPORT_GGUF_TOKENIZER_H_
#define SLIMPACK_EXPORT_GGUF_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_writer.h"

namespace slimpack::gguf_export {

// llama.cpp's token types (llama_token_type; the values GGUF stores).
enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct TokenizerMetadata {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre: "gpt-2", "llama-bpe", "qwen2", "default"
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;
  std::vector<std::string> merges;  // "left right"
  int64_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;
  int add_bos = -1;  // -1 = not stated
  std::string chat_template;
};

struct TokenizerSources {
  std::string tokenizer_json;         // path, required
  std::string tokenizer_config_json;  // path or ""
  std::string config_json_text;       // the model's config.json (bos/eos ids)
  int64_t vocab_size = 0;             // rows of the embedding: tokens are padded to it
};

// Reads the files; errors name the file and the field.
absl::StatusOr<TokenizerMetadata> ReadTokenizer(const TokenizerSources& sources);

// Adds the tokenizer.* keys.
void AddTokenizerMetadata(const TokenizerMetadata& t, gguf::GgufWriter& writer);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_TOKENIZER_H_
