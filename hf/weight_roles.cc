#include "hf/weight_roles.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "absl/status/status.h"
#include "hf/layer_sizes.h"
#include "ir/shape.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::hf {
namespace {

using ir::WeightRole;

// Symbolic dimensions of the expected shapes.
enum class Sym : uint8_t { kHidden, kInter, kVocab, kQ, kKv };

struct Pattern {
  const char* name;  // full name, or suffix after "model.layers.N."
  WeightRole role;
  std::vector<Sym> dims;
  bool qwen2_only_required;  // biases: required for qwen2, optional else
};

const std::vector<Pattern>& LayerPatterns() {
  static const auto* kPatterns = new std::vector<Pattern>{
      {"self_attn.q_proj.weight",
       WeightRole::kQProj,
       {Sym::kQ, Sym::kHidden},
       false},
      {"self_attn.k_proj.weight",
       WeightRole::kKProj,
       {Sym::kKv, Sym::kHidden},
       false},
      {"self_attn.v_proj.weight",
       WeightRole::kVProj,
       {Sym::kKv, Sym::kHidden},
       false},
      {"self_attn.o_proj.weight",
       WeightRole::kOProj,
       {Sym::kHidden, Sym::kQ},
       false},
      {"self_attn.q_proj.bias", WeightRole::kBias, {Sym::kQ}, true},
      {"self_attn.k_proj.bias", WeightRole::kBias, {Sym::kKv}, true},
      {"self_attn.v_proj.bias", WeightRole::kBias, {Sym::kKv}, true},
      {"mlp.gate_proj.weight",
       WeightRole::kGateProj,
       {Sym::kInter, Sym::kHidden},
       false},
      {"mlp.up_proj.weight",
       WeightRole::kUpProj,
       {Sym::kInter, Sym::kHidden},
       false},
      {"mlp.down_proj.weight",
       WeightRole::kDownProj,
       {Sym::kHidden, Sym::kInter},
       false},
      {"input_layernorm.weight", WeightRole::kAttnNorm, {Sym::kHidden}, false},
      {"post_attention_layernorm.weight",
       WeightRole::kMlpNorm,
       {Sym::kHidden},
       false},
  };
  return *kPatterns;
}

const std::vector<Pattern>& GlobalPatterns() {
  static const auto* kPatterns = new std::vector<Pattern>{
      {"model.embed_tokens.weight",
       WeightRole::kEmbedding,
       {Sym::kVocab, Sym::kHidden},
       false},
      {"model.norm.weight", WeightRole::kFinalNorm, {Sym::kHidden}, false},
      {"lm_head.weight",
       WeightRole::kLmHead,
       {Sym::kVocab, Sym::kHidden},
       false},
  };
  return *kPatterns;
}

// The widths one layer has: config.json's single values, or the layer's
// entry of its per-layer lists (hf/layer_sizes.h) when one is there.
struct Widths {
  int64_t inter, heads, kv_heads;
};

// A valid entry of list `field` for `layer`, else `single`: a malformed
// list is reported with its field by ReadLayerSizes when the graph is built,
// and the shape check then names the single value.
int64_t ListedOr(const nlohmann::json& cfg, const char* field, int64_t layer, int64_t single) {
  if (layer < 0 || !cfg.is_object()) return single;
  auto it = cfg.find(field);
  if (it == cfg.end() || !it->is_array() || layer >= static_cast<int64_t>(it->size())) {
    return single;
  }
  const nlohmann::json& v = (*it)[static_cast<size_t>(layer)];
  if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 ||
      v.get<uint64_t>() > static_cast<uint64_t>(single)) {
    return single;
  }
  return v.get<int64_t>();
}

Widths LayerWidths(const ir::ArchitectureInfo& a, const nlohmann::json& cfg, int64_t layer) {
  return {ListedOr(cfg, kIntermediateSizePerLayer, layer, a.intermediate_size),
          ListedOr(cfg, kNumAttentionHeadsPerLayer, layer, a.num_heads),
          ListedOr(cfg, kNumKeyValueHeadsPerLayer, layer, a.num_kv_heads)};
}

int64_t SymValue(Sym s, const ir::ArchitectureInfo& a, const Widths& w) {
  switch (s) {
    case Sym::kHidden:
      return a.hidden_size;
    case Sym::kInter:
      return w.inter;
    case Sym::kVocab:
      return a.vocab_size;
    case Sym::kQ:
      return w.heads * a.head_dim;
    case Sym::kKv:
      return w.kv_heads * a.head_dim;
  }
  return -1;
}

const char* SymName(Sym s) {
  switch (s) {
    case Sym::kHidden:
      return "hidden_size";
    case Sym::kInter:
      return "intermediate_size";
    case Sym::kVocab:
      return "vocab_size";
    case Sym::kQ:
      return "num_attention_heads*head_dim";
    case Sym::kKv:
      return "num_key_value_heads*head_dim";
  }
  return "?";
}

std::string TensorContext(const ir::Tensor& t) {
  return (t.provenance.file.empty() ? "" : t.provenance.file + ": ") +
         "tensor '" + t.name + "'";
}

absl::Status CheckShape(const ir::Tensor& t, const Pattern& p,
                        const ir::ArchitectureInfo& arch, const Widths& widths,
                        const std::string& config_path) {
  std::vector<int64_t> want;
  std::string names;
  for (Sym s : p.dims) {
    want.push_back(SymValue(s, arch, widths));
    names += std::string(names.empty() ? "" : ", ") + SymName(s);
  }
  if (t.dims == want) return absl::OkStatus();
  std::string layer = t.layer >= 0 ? ", layer " + std::to_string(t.layer) : "";
  return absl::InvalidArgumentError(
      TensorContext(t) + " (" + std::string(ir::WeightRoleName(p.role)) +
      layer + ") has shape " + ir::Shape::FromDims(t.dims).ToString() +
      ", expected " + ir::Shape::FromDims(want).ToString() + " = [" + names +
      "] from " + config_path);
}

// "model.layers.12.mlp.up_proj.weight" -> (12, "mlp.up_proj.weight").
// Leading zeros and over-long numbers do not match.
std::optional<std::pair<int64_t, std::string_view>> SplitLayerName(
    std::string_view name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits > 9 || digits == name.size() ||
      name[digits] != '.' || (digits > 1 && name[0] == '0')) {
    return std::nullopt;
  }
  int64_t layer = 0;
  for (size_t i = 0; i < digits; ++i) layer = layer * 10 + (name[i] - '0');
  return std::make_pair(layer, name.substr(digits + 1));
}

std::string JoinFirst(const std::vector<std::string>& items, size_t max) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < max; ++i) {
    s += (i ? ", " : "") + items[i];
  }
  if (items.size() > max) s += ", ...";
  return s;
}

// Summarises weights the family needs but the checkpoint lacks ("" when
// none are missing).
std::string MissingSummary(const ir::ArchitectureInfo& arch,
                           const std::map<int64_t, uint32_t>& layer_masks,
                           const std::map<std::string, bool>& global_seen) {
  std::vector<std::string> missing;
  for (const Pattern& p : GlobalPatterns()) {
    if (p.role == WeightRole::kLmHead && arch.tie_word_embeddings) continue;
    if (!global_seen.count(p.name)) missing.push_back(p.name);
  }
  const auto& patterns = LayerPatterns();
  for (const auto& [layer, mask] : layer_masks) {
    for (size_t i = 0; i < patterns.size(); ++i) {
      bool required =
          !patterns[i].qwen2_only_required || arch.model_type == "qwen2";
      if (required && !(mask & (1u << i))) {
        missing.push_back("model.layers." + std::to_string(layer) + "." +
                          patterns[i].name);
      }
    }
  }
  int64_t absent_layers =
      arch.num_layers - static_cast<int64_t>(layer_masks.size());
  if (missing.empty() && absent_layers == 0) return "";
  std::string w = arch.model_type + " checkpoint is incomplete:";
  if (absent_layers > 0) {
    w += " " + std::to_string(absent_layers) + " of " +
         std::to_string(arch.num_layers) + " layers have no weights;";
  }
  if (!missing.empty()) {
    w += " " + std::to_string(missing.size()) +
         " expected weights missing: " + JoinFirst(missing, 5);
  }
  return w;
}

}  // namespace

absl::Status TagWeightRoles(const ir::ArchitectureInfo& arch,
                            const std::string& config_path,
                            std::vector<ir::Tensor>& tensors,
                            std::vector<std::string>& warnings) {
  if (!arch.known) return absl::OkStatus();
  std::map<int64_t, uint32_t> layer_masks;  // only layers present: no
                                            // allocation sized by the config
  std::map<std::string, bool> global_seen;
  std::vector<std::string> unrecognised;
  const auto& patterns = LayerPatterns();
  // Layers pruned to different widths list them per layer.
  const nlohmann::json cfg = arch.config_json.empty()
                                 ? nlohmann::json()
                                 : nlohmann::json::parse(arch.config_json, nullptr,
                                                         /*allow_exceptions=*/false);
  std::set<std::string> companions;  // scales, zero points, input perms
  for (const ir::Tensor& t : tensors) {
    if (!t.quant.quantized()) continue;
    companions.insert(t.quant.scale);
    if (!t.quant.zero_point.empty()) companions.insert(t.quant.zero_point);
    companions.insert(t.name + kInputPermSuffix);
  }
  for (ir::Tensor& t : tensors) {
    const Pattern* match = nullptr;
    if (auto split = SplitLayerName(t.name)) {
      if (split->first >= arch.num_layers) {
        return absl::InvalidArgumentError(
            TensorContext(t) + " has layer index " +
            std::to_string(split->first) + " but " + config_path +
            " num_hidden_layers is " + std::to_string(arch.num_layers));
      }
      t.layer = static_cast<int>(split->first);
      uint32_t& mask = layer_masks[split->first];
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (split->second == patterns[i].name) {
          match = &patterns[i];
          mask |= 1u << i;
        }
      }
    } else {
      for (const Pattern& p : GlobalPatterns()) {
        if (t.name == p.name) {
          match = &p;
          global_seen[p.name] = true;
        }
      }
    }
    if (match == nullptr) {
      if (companions.count(t.name)) continue;
      unrecognised.push_back(t.name);
      continue;
    }
    t.role = match->role;
    RETURN_IF_ERROR(CheckShape(t, *match, arch, LayerWidths(arch, cfg, t.layer), config_path));
  }
  if (!unrecognised.empty()) {
    warnings.push_back(
        std::to_string(unrecognised.size()) + " tensors not recognised as " +
        arch.model_type +
        " weights, left untagged: " + JoinFirst(unrecognised, 5));
  }
  std::string missing = MissingSummary(arch, layer_masks, global_seen);
  if (!missing.empty()) warnings.push_back(std::move(missing));
  return absl::OkStatus();
}

std::string DescribeMissingWeights(const ir::ArchitectureInfo& arch,
                                   const std::vector<ir::Tensor>& tensors) {
  if (!arch.known) return "";
  std::map<int64_t, uint32_t> layer_masks;
  std::map<std::string, bool> global_seen;
  const auto& patterns = LayerPatterns();
  for (const ir::Tensor& t : tensors) {
    if (auto split = SplitLayerName(t.name)) {
      if (split->first >= arch.num_layers) continue;
      uint32_t& mask = layer_masks[split->first];
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (split->second == patterns[i].name) mask |= 1u << i;
      }
    } else {
      for (const Pattern& p : GlobalPatterns()) {
        if (t.name == p.name) global_seen[p.name] = true;
      }
    }
  }
  return MissingSummary(arch, layer_masks, global_seen);
}

}  // namespace slimpack::hf
