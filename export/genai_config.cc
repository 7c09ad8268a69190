#include "export/genai_config.h"

#include <vector>

#include "absl/status/status.h"
#include "hf/layer_sizes.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"
#include "support/strict_json.h"

namespace slimpack::onnx_export {
namespace {

using nlohmann::json;

// A token id field of config.json / generation_config.json: an id or a list
// of ids, else null.
json TokenIds(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return nullptr;
  if (it->is_number_unsigned()) return *it;
  if (it->is_array() && !it->empty()) {
    for (const json& v : *it) {
      if (!v.is_number_unsigned()) return nullptr;
    }
    return *it;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::string> GenaiConfigJson(const ir::ArchitectureInfo& arch,
                                            const std::string& model_file,
                                            const std::string& generation_config) {
  ASSIGN_OR_RETURN(std::vector<hf::LayerSizes> sizes, hf::ReadLayerSizes(arch, "config.json"));
  for (const hf::LayerSizes& s : sizes) {
    if (s.num_heads != arch.num_heads || s.num_kv_heads != arch.num_kv_heads) {
      return absl::FailedPreconditionError(
          "the layers have different head counts; ONNX Runtime GenAI sizes every layer's KV "
          "cache alike, so no genai_config.json is written");
    }
  }
  json cfg = json::parse(arch.config_json, nullptr, /*allow_exceptions=*/false);
  if (!cfg.is_object()) cfg = json::object();
  json gen = json::object();
  if (!generation_config.empty()) {
    ASSIGN_OR_RETURN(gen, support::ParseStrictJson(generation_config, "generation_config.json",
                                                   /*max_depth=*/16));
    if (!gen.is_object()) {
      return absl::InvalidArgumentError("generation_config.json: expected a JSON object");
    }
  }
  // generation_config.json first, as GenAI's builder reads it.
  auto pick = [&](const char* key) {
    json v = TokenIds(gen, key);
    return v.is_null() ? TokenIds(cfg, key) : v;
  };
  json bos = pick("bos_token_id");
  json eos = pick("eos_token_id");
  json pad = pick("pad_token_id");
  if (bos.is_null()) bos = 1;  // the builder's default
  if (pad.is_null()) pad = eos.is_array() ? eos[0] : eos;
  auto number = [&](const char* key, json dflt) {
    auto it = gen.find(key);
    return it != gen.end() && it->is_number() ? *it : dflt;
  };
  auto flag = [&](const char* key, bool dflt) {
    auto it = gen.find(key);
    return it != gen.end() && it->is_boolean() ? it->get<bool>() : dflt;
  };
  json inputs = {{"input_ids", "input_ids"},
                 {"attention_mask", "attention_mask"},
                 {"position_ids", "position_ids"},
                 {"past_key_names", "past_key_values.%d.key"},
                 {"past_value_names", "past_key_values.%d.value"}};
  json outputs = {{"logits", "logits"},
                  {"present_key_names", "present.%d.key"},
                  {"present_value_names", "present.%d.value"}};
  json decoder = {{"session_options", {{"log_id", "onnxruntime-genai"},
                                       {"provider_options", json::array()}}},
                  {"filename", model_file},
                  {"head_size", arch.head_dim},
                  {"hidden_size", arch.hidden_size},
                  {"inputs", inputs},
                  {"outputs", outputs},
                  {"num_attention_heads", arch.num_heads},
                  {"num_hidden_layers", arch.num_layers},
                  {"num_key_value_heads", arch.num_kv_heads}};
  json model = {{"bos_token_id", bos},
                {"context_length", arch.max_position_embeddings},
                {"decoder", decoder},
                {"eos_token_id", eos},
                {"pad_token_id", pad},
                {"type", arch.model_type},
                {"vocab_size", arch.vocab_size}};
  json search = {{"diversity_penalty", 0.0},
                 {"do_sample", flag("do_sample", false)},
                 {"early_stopping", true},
                 {"length_penalty", number("length_penalty", 1.0)},
                 {"max_length", arch.max_position_embeddings},
                 {"min_length", 0},
                 {"no_repeat_ngram_size", number("no_repeat_ngram_size", 0)},
                 {"num_beams", number("num_beams", 1)},
                 {"num_return_sequences", 1},
                 {"past_present_share_buffer", false},
                 {"repetition_penalty", number("repetition_penalty", 1.0)},
                 {"temperature", number("temperature", 1.0)},
                 {"top_k", number("top_k", 50)},
                 {"top_p", number("top_p", 1.0)}};
  return json({{"model", model}, {"search", search}}).dump(4) + "\n";
}

}  // namespace slimpack::onnx_export
