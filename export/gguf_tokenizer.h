// A Hugging Face tokenizer (tokenizer.json, or SentencePiece's
// tokenizer.model, with tokenizer_config.json) as GGUF tokenizer metadata, so llama.cpp tokenizes text exactly as the original
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
  // tokenizer.ggml.model: "gpt2" (byte-level BPE from tokenizer.json) or
  // "llama" (SentencePiece BPE from tokenizer.model: merges by score).
  std::string model;
  std::string pre;    // tokenizer.ggml.pre: "gpt-2", "llama-bpe", "qwen2", "default"
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;
  std::vector<float> scores;        // "llama" only: the pieces' scores
  std::vector<std::string> merges;  // "gpt2" only: "left right"
  int64_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;
  int add_bos = -1;           // -1 = not stated
  int add_space_prefix = -1;  // "llama": SentencePiece's add_dummy_prefix
  std::string chat_template;
};

struct TokenizerSources {
  // tokenizer.model wins when both are given, as in llama.cpp's converter
  // (a Llama 2 / Mistral checkpoint carries both); one is required.
  std::string tokenizer_model;        // path or ""
  std::string tokenizer_json;         // path or ""
  std::string tokenizer_config_json;  // path or ""
  std::string config_json_text;       // the model's config.json (bos/eos ids)
  int64_t vocab_size = 0;             // rows of the embedding: tokens are padded to it
};

// Reads the files; errors name the file and the field. A tokenizer.model
// must be what llama.cpp's "llama" tokenizer reproduces exactly: a BPE
// model (not unigram) with byte fallback, no normalization rules and
// whitespace kept as it is; otherwise it is refused naming the field.
absl::StatusOr<TokenizerMetadata> ReadTokenizer(const TokenizerSources& sources);

// Adds the tokenizer.* keys.
void AddTokenizerMetadata(const TokenizerMetadata& t, gguf::GgufWriter& writer);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_TOKENIZER_H_
