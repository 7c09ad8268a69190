// Checks made before the decoder graph is built. Sizes come from
// config.json or, for an artifact, from its manifest, and errors name the
// one they came from. The options are re-read from config.json
// (ArchitectureInfo keeps only the sizes) with exceptions off, as
// everywhere in the project.
#include "hf/config_checks.h"

#include <cstring>

#include <set>
#include <utility>

#include "hf/hf_config.h"
#include "hf/layer_sizes.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::hf {
namespace {

using Arch = ir::ArchitectureInfo;

// One architecture number with its name in config.json and in the
// manifest's "architecture" object (spec.md 6.2), so an error quotes the
// field as it is spelled in the file the value came from.
struct SizeField {
  const char* config_name;
  const char* manifest_name;
  int64_t Arch::*member;
  bool may_be_zero;  // optional fields: 0 means absent
};

constexpr SizeField kSizeFields[] = {
    {"num_hidden_layers", "num_layers", &Arch::num_layers, false},
    {"num_attention_heads", "num_heads", &Arch::num_heads, false},
    {"num_key_value_heads", "num_kv_heads", &Arch::num_kv_heads, false},
    {"hidden_size", "hidden_size", &Arch::hidden_size, false},
    {"intermediate_size", "intermediate_size", &Arch::intermediate_size, false},
    {"vocab_size", "vocab_size", &Arch::vocab_size, false},
    {"head_dim", "head_dim", &Arch::head_dim, false},
    {"max_position_embeddings", "max_position_embeddings", &Arch::max_position_embeddings,
     true},
};

const SizeField& FieldOf(int64_t Arch::*member) {
  for (const SizeField& f : kSizeFields) {
    if (f.member == member) return f;
  }
  return kSizeFields[0];  // unreachable: every member used below is listed
}

// Messages "<checkpoint>: <source> field '<name>' ...", with the field
// named as the source spells it.
class FieldNamer {
 public:
  explicit FieldNamer(const ir::Model& m)
      : a_(*m.architecture), prefix_(m.source_path + ": " + ArchitectureSourceLabel(a_)) {}

  std::string Name(int64_t Arch::*member) const {
    const SizeField& f = FieldOf(member);
    return std::string("'") +
           (a_.source == Arch::Source::kManifest ? f.manifest_name : f.config_name) + "'";
  }
  std::string Value(int64_t Arch::*member) const { return std::to_string(a_.*member); }
  // "'name' (value)", for messages relating several fields.
  std::string Quote(int64_t Arch::*member) const {
    return Name(member) + " (" + Value(member) + ")";
  }
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(prefix_ + " " + what);
  }

 private:
  const Arch& a_;
  const std::string prefix_;
};

std::string ShapeOf(const ir::Tensor& t) { return ir::Shape::FromDims(t.dims).ToString(); }

}  // namespace

int64_t FirstLayerWithoutWeights(const std::vector<ir::Tensor>& tensors, int64_t num_layers) {
  static constexpr char kPrefix[] = "model.layers.";
  constexpr size_t kLen = sizeof(kPrefix) - 1;
  std::set<int64_t> present;
  for (const ir::Tensor& t : tensors) {
    if (t.name.compare(0, kLen, kPrefix) != 0) continue;
    const size_t dot = t.name.find('.', kLen);
    // At most 9 digits: no overflow, and more than any layer count allowed.
    if (dot == std::string::npos || dot == kLen || dot - kLen > 9) continue;
    int64_t layer = 0;
    bool digits = true;
    for (size_t i = kLen; i < dot && digits; ++i) {
      digits = t.name[i] >= '0' && t.name[i] <= '9';
      layer = layer * 10 + (t.name[i] - '0');
    }
    if (digits) present.insert(layer);
  }
  // Stop at the first absent layer, so a huge count costs no more than
  // the layers that exist.
  int64_t l = 0;
  while (l < num_layers && present.count(l)) ++l;
  return l;
}

std::string ArchitectureSourceLabel(const ir::ArchitectureInfo& a) {
  return a.source == Arch::Source::kManifest ? "manifest.json architecture" : "config.json";
}

absl::Status CheckDecoderSizes(const ir::Model& checkpoint) {
  const Arch& a = *checkpoint.architecture;
  const FieldNamer f(checkpoint);
  // Bounds first: every later check and the graph builder multiply these.
  for (const SizeField& s : kSizeFields) {
    const int64_t v = a.*s.member;
    if ((v == 0 && s.may_be_zero) || (v >= 1 && v <= kMaxArchitectureSize)) continue;
    return f.Error("field " + f.Name(s.member) + " must be a positive integer up to " +
                   std::to_string(kMaxArchitectureSize) + ", found " + std::to_string(v));
  }
  if (a.head_dim % 2 != 0) {
    return f.Error("field " + f.Name(&Arch::head_dim) +
                   " must be even (rotary embeddings rotate the two halves of each head), "
                   "found " + f.Value(&Arch::head_dim));
  }
  if (a.num_heads % a.num_kv_heads != 0) {
    return f.Error("field " + f.Quote(&Arch::num_heads) + " must be a multiple of " +
                   f.Quote(&Arch::num_kv_heads));
  }
  const ir::Graph& g = checkpoint.graph;
  const ir::Tensor* embed = g.FindInitializer("model.embed_tokens.weight");
  if (embed != nullptr && embed->dims.size() == 2) {
    for (const auto& [axis, member] : {std::pair<size_t, int64_t Arch::*>{0, &Arch::vocab_size},
                                       {1, &Arch::hidden_size}}) {
      if (embed->dims[axis] != a.*member) {
        return f.Error("field " + f.Quote(member) + " does not match the embedding " +
                       "'model.embed_tokens.weight' " + ShapeOf(*embed) +
                       " ([vocab_size, hidden_size])");
      }
    }
  }
  const int64_t absent = FirstLayerWithoutWeights(g.initializers(), a.num_layers);
  if (absent < a.num_layers) {
    return f.Error("field " + f.Quote(&Arch::num_layers) + " exceeds the layers of the "
                   "checkpoint: no weight is named 'model.layers." + std::to_string(absent) +
                   ".*'");
  }
  ASSIGN_OR_RETURN(std::vector<LayerSizes> sizes, ReadLayerSizes(a, checkpoint.source_path));
  // head_dim sizes the RoPE tables before any layer weight is checked, so
  // it must be tied to the weights here: q_proj holds heads x head_dim rows.
  for (int64_t l = 0; l < a.num_layers; ++l) {
    const std::string name = "model.layers." + std::to_string(l) + ".self_attn.q_proj.weight";
    const ir::Tensor* q = g.FindInitializer(name);
    if (q == nullptr) {
      return absl::NotFoundError(checkpoint.source_path + ": " + a.model_type +
                                 " checkpoint lacks weight '" + name + "'");
    }
    const int64_t heads = sizes[static_cast<size_t>(l)].num_heads;
    if (q->dims.size() != 2 || q->dims[0] != heads * a.head_dim) {
      const std::string heads_from =
          heads == a.num_heads ? f.Quote(&Arch::num_heads)
                               : std::string("config.json '") + kNumAttentionHeadsPerLayer +
                                     "'[" + std::to_string(l) + "] (" +
                                     std::to_string(heads) + ")";
      return f.Error("field " + f.Quote(&Arch::head_dim) + " times " + heads_from + " = " +
                     std::to_string(heads * a.head_dim) + " rows does not match weight '" +
                     name + "' " + ShapeOf(*q));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckUnsupportedOptions(const ir::Model& checkpoint,
                                     std::vector<std::string>& warnings) {
  const ir::ArchitectureInfo& a = *checkpoint.architecture;
  const std::string where = checkpoint.source_path + ": config.json";
  auto unsupported = [&](const std::string& what) {
    return absl::UnimplementedError(where + ": " + what +
                                    " is not supported by the decoder graph builder");
  };
  for (const ir::Tensor& t : checkpoint.graph.initializers()) {
    const std::string& n = t.name;
    const bool bias = n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
    if (bias && (n.find(".o_proj.") != std::string::npos || n.find(".mlp.") != std::string::npos)) {
      return absl::UnimplementedError(checkpoint.source_path + ": bias tensor '" + n +
                                      "' is not supported (only q/k/v projection biases)");
    }
  }
  if (a.config_json.empty()) return absl::OkStatus();
  const nlohmann::json c = nlohmann::json::parse(a.config_json, nullptr, false);
  if (c.is_discarded() || !c.is_object()) {
    return absl::InvalidArgumentError(where + " is not a JSON object");
  }
  auto it = c.find("rope_scaling");
  if (it != c.end() && !it->is_null()) {
    std::string type = "?";
    if (it->is_object()) {
      for (const char* key : {"rope_type", "type"}) {
        auto t = it->find(key);
        if (t != it->end() && t->is_string()) type = t->get<std::string>();
      }
    }
    return unsupported("rope_scaling (type '" + type + "')");
  }
  it = c.find("hidden_act");
  if (it != c.end() && !(it->is_string() && it->get<std::string>() == "silu")) {
    return unsupported("hidden_act " + it->dump() + " (supported: \"silu\")");
  }
  // HF's Llama/Mistral modules have q/k/v biases only when attention_bias
  // is true; transformers would ignore such tensors, so running with them
  // would compute a different model than the one the checkpoint describes.
  it = c.find("attention_bias");
  if (it != c.end() && it->is_boolean() && !it->get<bool>()) {
    for (const ir::Tensor& t : checkpoint.graph.initializers()) {
      const std::string& n = t.name;
      for (const char* proj : {".q_proj.bias", ".k_proj.bias", ".v_proj.bias"}) {
        const size_t len = std::strlen(proj);
        if (n.size() > len && n.compare(n.size() - len, len, proj) == 0) {
          return absl::InvalidArgumentError(
              checkpoint.source_path + ": bias tensor '" + n + "' is present but " + where +
              " says attention_bias: false (transformers would not use it; remove the tensor "
              "or set attention_bias: true)");
        }
      }
    }
  }
  it = c.find("mlp_bias");
  if (it != c.end() && it->is_boolean() && it->get<bool>()) return unsupported("mlp_bias true");
  it = c.find("sliding_window");
  auto use = c.find("use_sliding_window");
  const bool sliding = it != c.end() && it->is_number_integer() &&
                       (a.model_type == "mistral" ||
                        (use != c.end() && use->is_boolean() && use->get<bool>()));
  if (sliding) {
    warnings.push_back("config.json sliding_window " + it->dump() +
                       " is not applied: logits match HF only for sequences up to that length");
  }
  return absl::OkStatus();
}

}  // namespace slimpack::hf
