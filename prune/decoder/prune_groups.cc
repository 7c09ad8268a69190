#include "prune/decoder/prune_groups.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "hf/config_checks.h"

namespace slimpack::prune {
namespace {

std::string Shape(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) absl::StrAppend(&s, i ? ", " : "", d[i]);
  return s + "]";
}

absl::Status Expect(const ir::Model& m, const std::string& name, std::vector<int64_t> dims,
                    bool required, std::string* out) {
  const ir::Tensor* t = m.graph.FindInitializer(name);
  if (t == nullptr) {
    if (!required) return absl::OkStatus();
    return absl::NotFoundError(
        absl::StrCat(m.source_path, ": no tensor '", name, "' (needed for pruning)"));
  }
  if (t->dims != dims) {
    return absl::InvalidArgumentError(absl::StrCat(m.source_path, ": tensor '", name, "' is ",
                                                   Shape(t->dims), ", ",
                                                   hf::ArchitectureSourceLabel(*m.architecture),
                                                   " implies ", Shape(dims)));
  }
  *out = name;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DecoderGroups> BuildDecoderGroups(const ir::Model& m) {
  if (!m.architecture.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(m.source_path, ": structured pruning needs a Hugging Face decoder "
                                    "checkpoint with config.json"));
  }
  const ir::ArchitectureInfo& a = *m.architecture;
  DecoderGroups g;
  g.num_layers = a.num_layers;
  g.num_heads = a.num_heads;
  g.num_kv_heads = a.num_kv_heads > 0 ? a.num_kv_heads : a.num_heads;
  g.hidden_size = a.hidden_size;
  g.head_dim = a.head_dim > 0 ? a.head_dim : (a.num_heads > 0 ? a.hidden_size / a.num_heads : 0);
  g.intermediate_size = a.intermediate_size;
  if (g.num_heads <= 0 || g.num_kv_heads <= 0 || g.num_heads % g.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(m.source_path, ": config.json num_attention_heads ", g.num_heads,
                     " is not a positive multiple of num_key_value_heads ", g.num_kv_heads));
  }
  const int64_t h = g.hidden_size, qd = g.num_heads * g.head_dim,
                kvd = g.num_kv_heads * g.head_dim, ff = g.intermediate_size;
  for (int64_t l = 0; l < g.num_layers; ++l) {
    LayerTensors t;
    t.layer = l;
    const std::string p = absl::StrCat("model.layers.", l, ".");
    for (auto [name, dims, out, req] :
         std::vector<std::tuple<std::string, std::vector<int64_t>, std::string*, bool>>{
             {p + "self_attn.q_proj.weight", {qd, h}, &t.q, true},
             {p + "self_attn.k_proj.weight", {kvd, h}, &t.k, true},
             {p + "self_attn.v_proj.weight", {kvd, h}, &t.v, true},
             {p + "self_attn.o_proj.weight", {h, qd}, &t.o, true},
             {p + "self_attn.q_proj.bias", {qd}, &t.q_bias, false},
             {p + "self_attn.k_proj.bias", {kvd}, &t.k_bias, false},
             {p + "self_attn.v_proj.bias", {kvd}, &t.v_bias, false},
             {p + "mlp.gate_proj.weight", {ff, h}, &t.gate, true},
             {p + "mlp.up_proj.weight", {ff, h}, &t.up, true},
             {p + "mlp.down_proj.weight", {h, ff}, &t.down, true}}) {
      absl::Status s = Expect(m, name, dims, req, out);
      if (!s.ok()) return s;
    }
    g.layers.push_back(std::move(t));
  }
  g.unprunable.push_back(absl::StrCat(
      "hidden (residual stream) channels, ", h,
      ": each one ties the embedding, every layer's input/post-attention norms, the q/k/v/gate/up "
      "inputs and o/down outputs of all ",
      g.num_layers, " layers, the final norm and lm_head; not pruned"));
  g.unprunable.push_back(absl::StrCat(
      "head_dim (", g.head_dim,
      "): rotary embeddings pair dimension i with i + head_dim/2 in every head; not pruned"));
  return g;
}

PruneGroup MlpChannelGroup(const DecoderGroups& g, int64_t layer, int64_t c) {
  const LayerTensors& t = g.layers[layer];
  return {GroupKind::kMlpChannel, layer, c,
          {{t.gate, 0, c, c + 1}, {t.up, 0, c, c + 1}, {t.down, 1, c, c + 1}}};
}

PruneGroup KvHeadGroup(const DecoderGroups& g, int64_t layer, int64_t k) {
  const LayerTensors& t = g.layers[layer];
  const int64_t d = g.head_dim, r = g.num_heads / g.num_kv_heads;
  PruneGroup p{GroupKind::kKvHead, layer, k, {}};
  p.members.push_back({t.q, 0, k * r * d, (k + 1) * r * d});
  if (!t.q_bias.empty()) p.members.push_back({t.q_bias, 0, k * r * d, (k + 1) * r * d});
  p.members.push_back({t.k, 0, k * d, (k + 1) * d});
  if (!t.k_bias.empty()) p.members.push_back({t.k_bias, 0, k * d, (k + 1) * d});
  p.members.push_back({t.v, 0, k * d, (k + 1) * d});
  if (!t.v_bias.empty()) p.members.push_back({t.v_bias, 0, k * d, (k + 1) * d});
  p.members.push_back({t.o, 1, k * r * d, (k + 1) * r * d});
  return p;
}

}  // namespace slimpack::prune
