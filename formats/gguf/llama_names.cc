#include "formats/gguf/llama_names.h"

#include <cstdlib>
#include <utility>

namespace slimpack::gguf {
namespace {

// Whole-model tensors.
const std::pair<const char*, const char*> kGlobal[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// Per-layer suffixes after "model.layers.N." / "blk.N.".
const std::pair<const char*, const char*> kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// Splits "<prefix><digits>.<rest>" into the layer number and rest.
bool SplitLayer(const std::string& name, const std::string& prefix, std::string* layer,
                std::string* rest) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  size_t i = prefix.size();
  const size_t start = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == start || i - start > 6 || i >= name.size() || name[i] != '.') return false;
  if (name[start] == '0' && i - start > 1) return false;  // no "blk.01."
  *layer = name.substr(start, i - start);
  *rest = name.substr(i + 1);
  return true;
}

std::string Map(const std::string& name, bool to_gguf) {
  for (const auto& [hf, gg] : kGlobal) {
    if (name == (to_gguf ? hf : gg)) return to_gguf ? gg : hf;
  }
  std::string layer, rest;
  if (!SplitLayer(name, to_gguf ? "model.layers." : "blk.", &layer, &rest)) return "";
  for (const auto& [hf, gg] : kLayer) {
    if (rest == (to_gguf ? hf : gg)) {
      return (to_gguf ? "blk." : "model.layers.") + layer + "." + (to_gguf ? gg : hf);
    }
  }
  return "";
}

bool EndsWith(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

std::string GgufNameFromHf(const std::string& hf_name) { return Map(hf_name, true); }
std::string HfNameFromGguf(const std::string& gguf_name) { return Map(gguf_name, false); }

bool IsRopeQ(const std::string& n) {
  return EndsWith(n, ".attn_q.weight") || EndsWith(n, ".attn_q.bias");
}
bool IsRopeK(const std::string& n) {
  return EndsWith(n, ".attn_k.weight") || EndsWith(n, ".attn_k.bias");
}

int64_t RopePermutedSourceRow(int64_t row, int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, half = d / 2;
  const int64_t h = row / d, within = row % d;
  const int64_t j = within / 2, t = within % 2;
  return h * d + t * half + j;
}

}  // namespace slimpack::gguf
