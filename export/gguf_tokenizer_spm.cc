#include "export/gguf_tokenizer_spm.h"

#include "absl/strings/str_cat.h"
#include "export/sentencepiece_model.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Refuses what llama.cpp's "llama" tokenizer would split differently from
// SentencePiece. It merges symbol pairs by the merged piece's score (that
// is SentencePiece's BPE, not its unigram Viterbi search), falls back to
// <0xXX> byte pieces for what no piece covers, escapes spaces as U+2581 and
// normalizes nothing.
absl::Status CheckReproducible(const SentencePieceModel& m, const std::string& path) {
  static constexpr const char* kTypes[] = {"?", "UNIGRAM", "BPE", "WORD", "CHAR"};
  const char* type = m.model_type >= 1 && m.model_type <= 4 ? kTypes[m.model_type] : kTypes[0];
  if (m.model_type != 2) {
    return Bad(path, absl::StrCat("trainer_spec.model_type is ", m.model_type, " (", type,
                                  "); llama.cpp's SentencePiece tokenizer merges by score, which "
                                  "reproduces BPE models (2) only"));
  }
  if (!m.byte_fallback) {
    return Bad(path, "trainer_spec.byte_fallback is false; llama.cpp falls back to <0xXX> byte "
                     "pieces for characters outside the vocabulary, so text with such "
                     "characters would tokenize differently");
  }
  if (m.precompiled_charsmap_bytes != 0) {
    return Bad(path, absl::StrCat("normalizer_spec.name is '", m.normalizer_name, "' with ",
                                  m.precompiled_charsmap_bytes,
                                  " bytes of normalization rules; llama.cpp normalizes nothing "
                                  "(only 'identity' is exported)"));
  }
  if (m.remove_extra_whitespaces) {
    return Bad(path, "normalizer_spec.remove_extra_whitespaces is true; llama.cpp keeps every "
                     "space, so text with repeated spaces would tokenize differently");
  }
  if (!m.escape_whitespaces) {
    return Bad(path, "normalizer_spec.escape_whitespaces is false; llama.cpp always writes "
                     "spaces as U+2581");
  }
  for (size_t id = 0; id < m.pieces.size(); ++id) {
    const SentencePiece& p = m.pieces[id];
    // GGUF stores no lengths for an empty piece's bytes to match on; an
    // empty normal piece could only be a corrupt model.
    if (p.piece.empty()) return Bad(path, absl::StrCat("piece ", id, " is empty"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerMetadata> ReadSentencePieceVocab(const std::string& model_path,
                                                         const std::string& config_path,
                                                         const json& tokenizer_config,
                                                         int64_t vocab_size) {
  if (vocab_size < 1) return Bad(model_path, absl::StrCat("vocabulary of ", vocab_size));
  ASSIGN_OR_RETURN(SentencePieceModel m,
                   ReadSentencePieceModel(model_path, static_cast<size_t>(vocab_size)));
  RETURN_IF_ERROR(CheckReproducible(m, model_path));
  TokenizerMetadata out;
  out.model = "llama";
  out.pre = "default";
  // Every row first unused, then the pieces over them (llama.cpp's layout).
  for (int64_t id = 0; id < vocab_size; ++id) {
    out.tokens.push_back(absl::StrCat("[PAD", id, "]"));
    out.scores.push_back(-10000.0f);
    out.token_types.push_back(kUnused);
  }
  for (size_t id = 0; id < m.pieces.size(); ++id) {
    out.tokens[id] = m.pieces[id].piece;
    out.scores[id] = m.pieces[id].score;
    out.token_types[id] = m.pieces[id].type;
  }
  // tokenizer_config.json's added tokens replace rows: special ones become
  // control tokens, others user-defined with U+2581 written as a space (what
  // llama.cpp matches them against).
  if (tokenizer_config.is_object() && tokenizer_config.contains("added_tokens_decoder")) {
    const json& added = tokenizer_config["added_tokens_decoder"];
    if (!added.is_object()) {
      return Bad(config_path, "added_tokens_decoder is not an object");
    }
    for (const auto& [key, entry] : added.items()) {
      int64_t id = -1;
      if (!key.empty() && key.size() <= 10 &&
          key.find_first_not_of("0123456789") == std::string::npos) {
        id = std::stoll(key);
      }
      if (id < 0 || id >= vocab_size) {
        return Bad(config_path, absl::StrCat("added_tokens_decoder key '", key,
                                             "' is not a token id below the vocabulary of ",
                                             vocab_size));
      }
      if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() ||
          (entry.contains("special") && !entry["special"].is_boolean())) {
        return Bad(config_path, absl::StrCat("added_tokens_decoder['", key,
                                             "'] has no string content and boolean special"));
      }
      std::string content = entry["content"].get<std::string>();
      const bool special = entry.value("special", false);
      if (!special) {
        for (size_t at; (at = content.find("\xe2\x96\x81")) != std::string::npos;) {
          content.replace(at, 3, " ");
        }
      }
      out.tokens[id] = content;
      out.scores[id] = -1000.0f;
      out.token_types[id] = special ? kControl : kUserDefined;
    }
  }
  out.unk_id = m.unk_id;
  out.bos_id = m.bos_id;
  out.eos_id = m.eos_id;
  out.pad_id = m.pad_id;
  for (int64_t* id : {&out.unk_id, &out.bos_id, &out.eos_id, &out.pad_id}) {
    if (*id >= static_cast<int64_t>(m.pieces.size())) {
      return Bad(model_path, absl::StrCat("special token id ", *id, " is beyond the model's ",
                                          m.pieces.size(), " pieces"));
    }
    if (*id < 0) *id = -1;
  }
  out.add_space_prefix = m.add_dummy_prefix ? 1 : 0;
  return out;
}

}  // namespace slimpack::gguf_export
