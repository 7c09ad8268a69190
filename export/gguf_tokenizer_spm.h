// The SentencePiece half of export/gguf_tokenizer.h: a tokenizer.model as
// GGUF "llama" tokenizer metadata, laid out as llama.cpp's converter lays it
// out (convert_hf_to_gguf.py, _create_vocab_sentencepiece): pieces in id
// order with their scores and types, tokenizer_config.json's
// added_tokens_decoder entries over them, unused rows up to the model's
// vocabulary as "[PAD<id>]".
#ifndef SLIMPACK_EXPORT_GGUF_TOKENIZER_SPM_H_
#define SLIMPACK_EXPORT_GGUF_TOKENIZER_SPM_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "export/gguf_tokenizer.h"
#include "nlohmann/json.hpp"

namespace slimpack::gguf_export {

// `tokenizer_config` is the parsed tokenizer_config.json (null when there is
// none; `config_path` names it in errors). Fills model, pre, tokens,
// token_types, scores, unk/bos/eos/pad ids and add_space_prefix; the caller
// adds config.json's ids and the chat template. InvalidArgument naming the
// file and the field for a model llama.cpp would tokenize differently (see
// ReadTokenizer) or a token id outside `vocab_size`.
absl::StatusOr<TokenizerMetadata> ReadSentencePieceVocab(const std::string& model_path,
                                                         const std::string& config_path,
                                                         const nlohmann::json& tokenizer_config,
                                                         int64_t vocab_size);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_TOKENIZER_SPM_H_
