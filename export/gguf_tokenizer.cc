#include "export/gguf_tokenizer.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "export/gguf_tokenizer_spm.h"
#include "support/small_file.h"
#include "support/status_macros.h"
#include "support/strict_json.h"

namespace slimpack::gguf_export {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxTokenizerBytes = uint64_t{256} << 20;
constexpr int kMaxJsonDepth = 64;
// llama.cpp's tokenizer ids are int32.
constexpr int64_t kMaxVocab = int64_t{1} << 30;

// The split regexes of the byte-level BPE tokenizers llama.cpp implements,
// by the tokenizer.ggml.pre name that selects the same regex there.
const std::pair<const char*, const char*> kKnownSplits[] = {
    {"gpt-2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"},
    {"gpt-2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

absl::StatusOr<json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, support::ReadSmallFile(path, kMaxTokenizerBytes));
  return support::ParseStrictJson(text, path, kMaxJsonDepth);
}

// obj[key] if `obj` is an object holding a string there, else "" (json's
// value() throws on a non-object or a value of another type).
std::string StringField(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// The pre-tokenizer as a llama.cpp pre name. `has_merges` matters for a
// byte-level tokenizer without a split regex: with no merges every split
// gives the same bytes, with merges llama.cpp (which always splits) would
// tokenize differently, so it is refused.
absl::StatusOr<std::string> PreName(const std::string& path, const json& pre, bool has_merges) {
  auto byte_level_regex = [](const json& node) {
    return !node.contains("use_regex") || node["use_regex"] == true;
  };
  if (StringField(pre, "type") == "ByteLevel") {
    if (byte_level_regex(pre)) return std::string("gpt-2");
    if (!has_merges) return std::string("default");
    return Bad(path, "pre_tokenizer ByteLevel without a split regex and with merges: llama.cpp "
                     "always splits by a regex, so it would tokenize differently");
  }
  if (StringField(pre, "type") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2) {
    const json& split = pre["pretokenizers"][0];
    const json& bytes = pre["pretokenizers"][1];
    if (StringField(split, "type") == "Split" && StringField(bytes, "type") == "ByteLevel" &&
        !byte_level_regex(bytes) && split.contains("pattern") && split["pattern"].is_object() &&
        split["pattern"].contains("Regex") && split["pattern"]["Regex"].is_string()) {
      const std::string regex = split["pattern"]["Regex"];
      for (const auto& [name, known] : kKnownSplits) {
        if (regex == known) return std::string(name);
      }
      return Bad(path, absl::StrCat("pre_tokenizer split regex ", json(regex).dump(),
                                    " is not one llama.cpp implements (known: gpt-2, llama-bpe, "
                                    "qwen2)"));
    }
  }
  return Bad(path, absl::StrCat("pre_tokenizer ", pre.dump().substr(0, 200),
                                " is not a byte-level BPE pre-tokenizer slimpack can express in "
                                "GGUF (ByteLevel, or Split(regex) + ByteLevel)"));
}

int64_t IdField(const json& config, const char* key) {
  if (config.is_object() && config.contains(key) && config[key].is_number_integer()) {
    return config[key].get<int64_t>();
  }
  return -1;
}

// tokenizer.json's byte-level BPE: tokens (padded to the model's rows),
// their types, merges, the pre-tokenizer.
absl::StatusOr<TokenizerMetadata> ReadBpeVocab(const TokenizerSources& src) {
  const std::string& path = src.tokenizer_json;
  ASSIGN_OR_RETURN(json tok, ReadJson(path));
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) {
    return Bad(path, "no \"model\" object");
  }
  const json& model = tok["model"];
  const std::string type = StringField(model, "type");
  if (type != "BPE") {
    return Bad(path, absl::StrCat("model type '", type,
                                  "' is not exported to GGUF (byte-level BPE only; SentencePiece "
                                  "tokenizer.model export is not implemented yet)"));
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) return Bad(path, "model.vocab missing");
  TokenizerMetadata out;
  out.model = "gpt2";
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxVocab) {
      return Bad(path, absl::StrCat("model.vocab[", json(piece).dump(), "] = ", id.dump(),
                                    " is not a token id"));
    }
    if (!by_id.emplace(id.get<int64_t>(), std::make_pair(piece, kNormal)).second) {
      return Bad(path, absl::StrCat("token id ", id.dump(), " appears twice in model.vocab"));
    }
  }
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const json& added : tok["added_tokens"]) {
      if (!added.is_object() || !added.contains("id") || !added["id"].is_number_integer() ||
          !added.contains("content") || !added["content"].is_string()) {
        return Bad(path, absl::StrCat("added_tokens entry ", added.dump().substr(0, 120),
                                      " has no integer id and string content"));
      }
      const int64_t id = added["id"];
      if (id < 0 || id >= kMaxVocab) return Bad(path, absl::StrCat("added token id ", id));
      if (added.contains("special") && !added["special"].is_boolean()) {
        return Bad(path, absl::StrCat("added token ", id, " has a non-boolean \"special\": ",
                                      added["special"].dump().substr(0, 120)));
      }
      const int32_t ttype = added.value("special", false) ? kControl : kUserDefined;
      by_id[id] = {added["content"].get<std::string>(), ttype};
    }
  }
  if (model.contains("merges") && model["merges"].is_array()) {
    for (const json& m : model["merges"]) {
      if (m.is_string()) {
        out.merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        out.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        return Bad(path, absl::StrCat("merge ", m.dump().substr(0, 120),
                                      " is neither \"a b\" nor [\"a\", \"b\"]"));
      }
    }
  }
  ASSIGN_OR_RETURN(out.pre, PreName(path, tok.value("pre_tokenizer", json()), !out.merges.empty()));

  // Tokens in id order, padded to the embedding's rows the way llama.cpp's
  // converter pads (unused ids become "[PAD<id>]" unused tokens).
  const int64_t last_id = by_id.empty() ? -1 : by_id.rbegin()->first;
  if (last_id >= src.vocab_size) {
    return Bad(path, absl::StrCat("token id ", last_id, " is outside the model's vocabulary of ",
                                  src.vocab_size, " rows (config.json vocab_size)"));
  }
  for (int64_t id = 0; id < src.vocab_size; ++id) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      out.tokens.push_back(absl::StrCat("[PAD", id, "]"));
      // Unused, as llama.cpp's converter marks them: a user-defined token
      // would be matched in raw text and select an untrained row.
      out.token_types.push_back(kUnused);
    } else {
      out.tokens.push_back(it->second.first);
      out.token_types.push_back(it->second.second);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<TokenizerMetadata> ReadTokenizer(const TokenizerSources& src) {
  json tc;  // tokenizer_config.json, or null
  if (!src.tokenizer_config_json.empty()) {
    ASSIGN_OR_RETURN(tc, ReadJson(src.tokenizer_config_json));
  }
  TokenizerMetadata out;
  if (!src.tokenizer_model.empty()) {
    ASSIGN_OR_RETURN(out, ReadSentencePieceVocab(src.tokenizer_model, src.tokenizer_config_json,
                                                 tc, src.vocab_size));
  } else if (!src.tokenizer_json.empty()) {
    ASSIGN_OR_RETURN(out, ReadBpeVocab(src));
  } else {
    return absl::InvalidArgumentError("no tokenizer.json or tokenizer.model to export");
  }

  ASSIGN_OR_RETURN(json config, support::ParseStrictJson(src.config_json_text, "config.json",
                                                         kMaxJsonDepth));
  // config.json's ids win over the SentencePiece model's own, as in
  // llama.cpp's converter (SpecialVocab).
  for (const auto& [key, id] : {std::pair<const char*, int64_t*>{"bos_token_id", &out.bos_id},
                                {"eos_token_id", &out.eos_id},
                                {"pad_token_id", &out.pad_id}}) {
    const int64_t from_config = IdField(config, key);
    if (from_config >= 0) *id = from_config;
  }
  if (!tc.is_null()) {
    if (tc.is_object() && tc.contains("add_bos_token") && tc["add_bos_token"].is_boolean()) {
      out.add_bos = tc["add_bos_token"].get<bool>() ? 1 : 0;
    }
    if (tc.is_object() && tc.contains("chat_template")) {
      const json& ct = tc["chat_template"];
      if (ct.is_string()) {
        out.chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        // Named templates: the "default" one is what llama.cpp applies.
        for (const json& named : ct) {
          if (StringField(named, "name") == "default" &&
              named.contains("template") && named["template"].is_string()) {
            out.chat_template = named["template"].get<std::string>();
          }
        }
      }
    }
  }
  for (int64_t* id : {&out.bos_id, &out.eos_id, &out.pad_id, &out.unk_id}) {
    if (*id >= src.vocab_size) {
      return Bad("config.json", absl::StrCat("special token id ", *id,
                                             " is outside the vocabulary of ", src.vocab_size));
    }
  }
  return out;
}

void AddTokenizerMetadata(const TokenizerMetadata& t, gguf::GgufWriter& w) {
  w.AddString("tokenizer.ggml.model", t.model);
  w.AddString("tokenizer.ggml.pre", t.pre);
  w.AddStringArray("tokenizer.ggml.tokens", t.tokens);
  if (!t.scores.empty()) w.AddF32Array("tokenizer.ggml.scores", t.scores);
  w.AddI32Array("tokenizer.ggml.token_type", t.token_types);
  if (!t.merges.empty() || t.model == "gpt2") w.AddStringArray("tokenizer.ggml.merges", t.merges);
  if (t.bos_id >= 0) w.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(t.bos_id));
  if (t.eos_id >= 0) w.AddU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(t.eos_id));
  if (t.unk_id >= 0) w.AddU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(t.unk_id));
  if (t.pad_id >= 0) w.AddU32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(t.pad_id));
  if (t.add_bos >= 0) w.AddBool("tokenizer.ggml.add_bos_token", t.add_bos == 1);
  if (t.add_space_prefix >= 0) {
    w.AddBool("tokenizer.ggml.add_space_prefix", t.add_space_prefix == 1);
  }
  if (!t.chat_template.empty()) w.AddString("tokenizer.chat_template", t.chat_template);
}

}  // namespace slimpack::gguf_export
