#include "export/gguf_llama_plan.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "export/gguf_carried_codes.h"
#include "formats/gguf/llama_names.h"
#include "hf/config_checks.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {
namespace {

// File order: llama.cpp's converter order (embedding, layers, final norm,
// output), and inside a layer the order llama-quantize counts attn_v in.
int OrderKey(const std::string& name) {
  static const char* kOrder[] = {"attn_norm.", "attn_q.", "attn_k.", "attn_v.", "attn_output.",
                                 "ffn_norm.",  "ffn_gate.", "ffn_up.", "ffn_down."};
  for (int i = 0; i < 9; ++i) {
    if (name.find(kOrder[i]) != std::string::npos) return i;
  }
  return 0;
}

}  // namespace

// The HF rows of a rotary q/k tensor: dims[0] of a matrix, every element of
// a bias vector (convert_hf_to_gguf.py permutes biases as [rows, 1]).
int64_t RopeRows(const ir::Tensor& t) { return t.dims.empty() ? 1 : t.dims[0]; }

int64_t RopeCols(const ir::Tensor& t) {
  int64_t cols = 1;
  for (size_t i = 1; i < t.dims.size(); ++i) cols *= t.dims[i];
  return cols;
}

absl::StatusOr<ExportPlan> PlanExport(const ir::Model& model, const GgufExportOptions& options) {
  if (!model.architecture || !model.architecture->known) {
    return absl::InvalidArgumentError(absl::StrCat(
        model.source_path, ": GGUF export needs a Hugging Face llama, mistral or qwen2 checkpoint "
                           "(config.json with a known model_type)"));
  }
  ExportPlan plan;
  plan.a = &*model.architecture;
  const ir::ArchitectureInfo& a = *plan.a;
  ASSIGN_OR_RETURN(plan.sizes, hf::ReadLayerSizes(a, model.source_path));
  std::vector<hf::LayerSizes>& sizes = plan.sizes;
  if (sizes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(model.source_path,
                                                   ": config.json declares no decoder layers"));
  }
  const bool per_layer =
      std::any_of(sizes.begin(), sizes.end(), [&a](const hf::LayerSizes& s) {
        return s.intermediate_size != a.intermediate_size || s.num_heads != a.num_heads ||
               s.num_kv_heads != a.num_kv_heads;
      });
  if (per_layer && a.model_type == "qwen2") {
    return absl::UnimplementedError(absl::StrCat(
        model.source_path, ": a qwen2 model whose layers were pruned to different widths has no "
                           "llama.cpp architecture (its qwen2 reads one width; deci, which reads "
                           "one per layer, has no q/k/v biases in every build)"));
  }
  // A llama/mistral pruned per layer is llama.cpp's "deci" (Nemotron-NAS):
  // the llama graph with a width per layer.
  plan.arch = a.model_type == "qwen2" ? "qwen2" : per_layer ? "deci" : "llama";
  const std::string& arch = plan.arch;
  ASSIGN_OR_RETURN(plan.preset, ParsePreset(options.preset));
  // The checks the decoder graph builder makes: options llama.cpp would need
  // extra tensors or keys for (rope_scaling, other activations, o_proj/MLP
  // biases) are refused rather than exported as a different model, and no
  // size from config.json is used before it is bounded.
  std::vector<std::string> warnings;
  RETURN_IF_ERROR(hf::CheckUnsupportedOptions(model, warnings));
  RETURN_IF_ERROR(hf::CheckDecoderSizes(model));
  if (options.log) {
    for (const std::string& w : warnings) options.log("warning: " + w);
  }

  // Plan every tensor.
  std::vector<Planned>& planned = plan.planned;
  // Scales and zero points of quantized weights go into their blocks.
  std::set<std::string> companions;
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (!t.quant.quantized()) continue;
    companions.insert(t.quant.scale);
    if (!t.quant.zero_point.empty()) companions.insert(t.quant.zero_point);
  }
  for (const ir::Tensor& t : model.graph.initializers()) {
    // Rotary frequency buffers some checkpoints carry are derived from
    // rope_theta; llama.cpp recomputes them (its converter skips them too).
    if (t.name.find("rotary_emb.inv_freq") != std::string::npos) continue;
    if (companions.count(t.name)) continue;
    // Act-order permutations are undone on their weights (below).
    if (t.name.size() > std::strlen(hf::kInputPermSuffix) &&
        t.name.compare(t.name.size() - std::strlen(hf::kInputPermSuffix), std::string::npos,
                       hf::kInputPermSuffix) == 0) {
      const std::string weight = t.name.substr(0, t.name.size() - std::strlen(hf::kInputPermSuffix));
      const ir::Tensor* w = model.graph.FindInitializer(weight);
      if (w == nullptr || !w->quant.quantized()) {
        return absl::InvalidArgumentError(absl::StrCat(
            model.source_path, ": input permutation '", t.name, "' belongs to no quantized "
            "weight"));
      }
      continue;
    }
    const std::string name = gguf::GgufNameFromHf(t.name);
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          model.source_path, ": tensor '", t.name, "' has no llama.cpp counterpart"));
    }
    Planned p;
    if (t.quant.quantized()) {
      p.scale = model.graph.FindInitializer(t.quant.scale);
      p.zero_point =
          t.quant.zero_point.empty() ? nullptr : model.graph.FindInitializer(t.quant.zero_point);
      RETURN_IF_ERROR(Annotate(ir::ValidateQuantLayout(t, p.scale, p.zero_point),
                               model.source_path));
      p.carried = CarriedGgmlType(t);
      ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                       hf::ReadInputPermutation(model.graph, t.name, t.dims.back(),
                                                model.source_path));
      if (!perm.empty()) {
        // Groups of permuted columns are not blocks of checkpoint columns:
        // the codes cannot be carried, the weight is quantized again.
        p.carried.reset();
        p.input_perm = std::make_shared<const std::vector<int64_t>>(std::move(perm));
      }
    } else if (!ir::IsConvertibleFloat(t.dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(model.source_path, ": tensor '", t.name,
                                                     "' has dtype ",
                                                     std::string(ir::DTypeName(t.dtype)),
                                                     "; GGUF export reads f32/f16/bf16"));
    }
    p.gguf_name = name;
    p.source = &t;
    // llama/mistral use llama.cpp's interleaved rope (rows permuted, per
    // head of the tensor's layer); qwen2 uses the NEOX layout, HF's own.
    const hf::LayerSizes& own =
        t.layer >= 0 && t.layer < static_cast<int>(sizes.size()) ? sizes[t.layer] : sizes[0];
    if (arch != "qwen2" && gguf::IsRopeQ(name)) p.rope_heads = own.num_heads;
    if (arch != "qwen2" && gguf::IsRopeK(name)) p.rope_heads = own.num_kv_heads;
    // Rows of a rank-1 rotary bias are single elements: blocks cannot be
    // moved element by element, so its codes are decoded and encoded again.
    if (p.rope_heads > 0 && t.dims.size() < 2) p.carried.reset();
    if (p.rope_heads > 0) {
      const int64_t rows = RopeRows(t);
      if (rows % p.rope_heads != 0 || (rows / p.rope_heads) % 2 != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            model.source_path, ": tensor '", t.name, "' has ", rows, " rows, not ", p.rope_heads,
            " heads of an even size (rotary rows are permuted per head)"));
      }
    }
    if (t.dims.size() > 2) {
      return absl::InvalidArgumentError(absl::StrCat(model.source_path, ": tensor '", t.name,
                                                     "' has ", t.dims.size(),
                                                     " dimensions; decoder weights have 1 or 2"));
    }
    p.slot.tensor = t.name;
    p.slot.gguf_name = name;
    p.slot.rank = static_cast<int>(t.dims.size());
    p.slot.row_length = t.dims.empty() ? 1 : t.dims.back();
    p.slot.layer = t.layer;
    p.slot.is_output = t.role == ir::WeightRole::kLmHead ||
                       (a.tie_word_embeddings && t.role == ir::WeightRole::kEmbedding);
    planned.push_back(std::move(p));
  }
  const bool has_output = std::any_of(planned.begin(), planned.end(), [](const Planned& p) {
    return p.gguf_name == "output.weight";
  });
  if (!has_output && !a.tie_word_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        model.source_path, ": lm_head.weight is missing and config.json does not tie the "
                           "embedding (tie_word_embeddings false)"));
  }
  std::stable_sort(planned.begin(), planned.end(), [](const Planned& x, const Planned& y) {
    auto rank = [](const Planned& p) {
      if (p.gguf_name == "token_embd.weight") return std::make_tuple(0, 0, 0);
      if (p.slot.layer >= 0) return std::make_tuple(1, p.slot.layer, OrderKey(p.gguf_name));
      return std::make_tuple(2, p.gguf_name == "output.weight" ? 1 : 0, 0);
    };
    return rank(x) < rank(y);
  });
  // A type override that matches no matrix is a typo or a rule for another
  // model: an error, never silently nothing. Carried codes keep their type
  // (the export copies them): a rule asking another type for them would
  // need a second rounding, so it is refused as llama-quantize refuses one.
  auto matches = [](const TypeOverride& o, const Planned& p) {
    return p.slot.rank >= 2 && (o.match.Search(p.slot.tensor) || o.match.Search(p.gguf_name));
  };
  std::vector<bool> used(options.type_overrides.size(), false);
  for (const Planned& p : planned) {
    for (size_t i = 0; i < options.type_overrides.size(); ++i) {
      const TypeOverride& o = options.type_overrides[i];
      if (!matches(o, p)) continue;
      if (p.carried && o.type != *p.carried && !options.allow_requantize) {
        return absl::InvalidArgumentError(absl::StrCat(
            model.source_path, ": tensor '", p.source->name, "' is stored as ",
            std::string(gguf::TypeName(*p.carried)), " codes, which the export carries as they "
            "are; tensor type rule '", o.match.pattern(), "' asks for ",
            std::string(gguf::TypeName(o.type)), ", a second rounding: convert from the float "
            "checkpoint instead, or pass --allow-requantize"));
      }
      used[i] = true;
      break;  // the first matching rule decides
    }
  }
  for (size_t i = 0; i < options.type_overrides.size(); ++i) {
    const TypeOverride& o = options.type_overrides[i];
    if (!used[i] && std::any_of(planned.begin(), planned.end(),
                                [&](const Planned& p) { return matches(o, p); })) {
      continue;  // shadowed by an earlier rule everywhere: still a real name
    }
    if (!used[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor type rule '", o.match.pattern(), "' matches no matrix of ", model.source_path,
          " (patterns are searched in checkpoint names like model.layers.0.mlp.down_proj.weight "
          "and GGUF names like blk.0.ffn_down.weight)"));
    }
  }
  plan.type_overrides = options.type_overrides;
  return plan;
}

}  // namespace slimpack::gguf_export
