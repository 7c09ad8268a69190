#include "export/gguf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "export/gguf_carried_codes.h"
#include "export/gguf_source.h"
#include "export/gguf_tokenizer.h"
#include "export/gguf_types.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/gguf/llama_names.h"
#include "hf/config_checks.h"
#include "hf/input_perm.h"
#include "hf/layer_sizes.h"
#include "hf/weight_roles.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;

// One tensor of the GGUF file and where its values come from.
struct Planned {
  std::string gguf_name;
  const ir::Tensor* source = nullptr;
  // A quantized source: its scale and zero point (null: none), and the ggml
  // type that holds its codes as they are (gguf_carried_codes.h), if any.
  const ir::Tensor* scale = nullptr;
  const ir::Tensor* zero_point = nullptr;
  std::optional<TensorType> carried;
  int64_t rope_heads = 0;  // > 0: rows permuted to llama.cpp's rope order
  // An act-order weight's input permutation (hf/input_perm.h), undone on
  // the dequantized values: GGUF stores columns in checkpoint order.
  std::shared_ptr<const std::vector<int64_t>> input_perm;
  TensorSlot slot;
};

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

// Layer widths as llama.cpp's "deci" architecture reads them (an i32 per
// layer; llama-model-loader's get_key_or_arr), for layers pruned to
// different widths. llama.cpp's llama architecture has one width for all.
void AddPerLayerSizes(const std::vector<hf::LayerSizes>& sizes, const std::string& arch,
                      gguf::GgufWriter& w) {
  std::vector<int32_t> ff, heads, kv;
  for (const hf::LayerSizes& s : sizes) {
    ff.push_back(static_cast<int32_t>(s.intermediate_size));
    heads.push_back(static_cast<int32_t>(s.num_heads));
    kv.push_back(static_cast<int32_t>(s.num_kv_heads));
  }
  w.AddI32Array(arch + ".feed_forward_length", ff);
  w.AddI32Array(arch + ".attention.head_count", heads);
  w.AddI32Array(arch + ".attention.head_count_kv", kv);
}

void AddArchitecture(const ir::ArchitectureInfo& a, const std::vector<hf::LayerSizes>& sizes,
                     const std::string& arch, const Preset& preset, const std::string& name,
                     gguf::GgufWriter& w) {
  w.AddString("general.architecture", arch);
  w.AddString("general.name", name);
  w.AddU32("general.file_type", preset.file_type);
  w.AddU32("general.quantization_version", 2);  // ggml's GGML_QNT_VERSION
  w.AddU32("general.alignment", static_cast<uint32_t>(gguf::kSlimpackAlignment));
  w.AddU32(arch + ".vocab_size", static_cast<uint32_t>(a.vocab_size));
  w.AddU32(arch + ".context_length", static_cast<uint32_t>(a.max_position_embeddings));
  w.AddU32(arch + ".embedding_length", static_cast<uint32_t>(a.hidden_size));
  w.AddU32(arch + ".block_count", static_cast<uint32_t>(a.num_layers));
  if (arch == "deci") {
    AddPerLayerSizes(sizes, arch, w);
  } else {
    w.AddU32(arch + ".feed_forward_length", static_cast<uint32_t>(a.intermediate_size));
    w.AddU32(arch + ".attention.head_count", static_cast<uint32_t>(a.num_heads));
    w.AddU32(arch + ".attention.head_count_kv", static_cast<uint32_t>(a.num_kv_heads));
  }
  w.AddU32(arch + ".rope.dimension_count", static_cast<uint32_t>(a.head_dim));
  // llama.cpp derives the head size from the (first layer's) head count
  // unless told; per-layer head counts make that wrong.
  if (a.head_dim * a.num_heads != a.hidden_size || arch == "deci") {
    w.AddU32(arch + ".attention.key_length", static_cast<uint32_t>(a.head_dim));
    w.AddU32(arch + ".attention.value_length", static_cast<uint32_t>(a.head_dim));
  }
  w.AddF32(arch + ".rope.freq_base", static_cast<float>(a.rope_theta));
  w.AddF32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(a.norm_eps));
}

// The HF rows of a rotary q/k tensor: dims[0] of a matrix, every element of
// a bias vector (convert_hf_to_gguf.py permutes biases as [rows, 1]).
int64_t RopeRows(const ir::Tensor& t) { return t.dims.empty() ? 1 : t.dims[0]; }
int64_t RopeCols(const ir::Tensor& t) {
  int64_t cols = 1;
  for (size_t i = 1; i < t.dims.size(); ++i) cols *= t.dims[i];
  return cols;
}

// The values of `t` as f32 (numel of them), rows permuted for rope when
// asked (the planner checked rows divide into heads of an even size).
absl::Status ReadValuesF32(const Planned& p, uint64_t numel, std::vector<float>& out) {
  const ir::Tensor& t = *p.source;
  std::vector<float> plain(numel);
  if (t.quant.quantized()) {
    ASSIGN_OR_RETURN(plain, ir::DequantizeToF32(t, *p.scale, p.zero_point));
    if (p.input_perm) {
      hf::UnpermuteColumns(*p.input_perm, static_cast<int64_t>(numel / p.input_perm->size()),
                           plain.data());
    }
  } else {
    RETURN_IF_ERROR(ir::ConvertFloats(t.dtype, t.data.data(), ir::DType::kF32,
                                      reinterpret_cast<uint8_t*>(plain.data()), numel));
  }
  if (p.rope_heads == 0) {
    out = std::move(plain);
    return absl::OkStatus();
  }
  const int64_t rows = RopeRows(t), cols = RopeCols(t);
  out.resize(numel);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = gguf::RopePermutedSourceRow(r, rows, p.rope_heads);
    std::copy_n(plain.data() + src * cols, cols, out.data() + r * cols);
  }
  return absl::OkStatus();
}

// Encodes rows [0, rows) of `values` into `dst`, rows split over threads
// (each row is encoded independently, so the bytes do not depend on the
// thread count).
absl::Status EncodeRows(TensorType type, const std::vector<float>& values, int64_t rows,
                        int64_t cols, const float* importance, int threads, uint8_t* dst,
                        uint64_t size) {
  const int64_t row_bytes = gguf::RowBytes(type, cols);
  if (static_cast<uint64_t>(row_bytes * rows) != size) {
    return absl::InternalError(absl::StrCat("encoded size ", row_bytes * rows, " != ", size));
  }
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  std::mutex mu;
  absl::Status first_error;
  support::RunOnThreads(parts, [&](int64_t part) {
    const int64_t begin = rows * part / parts, end = rows * (part + 1) / parts;
    for (int64_t r = begin; r < end; ++r) {
      absl::Status s = gguf::QuantizeRow(type, values.data() + r * cols, cols, importance,
                                         dst + r * row_bytes);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = Annotate(s, absl::StrCat("row ", r));
        return;
      }
    }
  });
  return first_error;
}

// Everything the export decides before writing: the architecture, the
// layer sizes, the preset and every tensor in file order.
struct ExportPlan {
  const ir::ArchitectureInfo* a = nullptr;
  std::vector<hf::LayerSizes> sizes;
  std::string arch;
  Preset preset;
  std::vector<Planned> planned;
};

// general.*, the architecture keys and the tokenizer: from the GGUF the
// model was imported from (its name and tokenizer keys as they were), or
// from the checkpoint's tokenizer files.
absl::Status AddNameAndTokenizer(const ir::Model& model, const ir::ArchitectureInfo& a,
                                 const std::vector<hf::LayerSizes>& sizes,
                                 const std::string& arch, const Preset& preset,
                                 gguf::GgufWriter& writer) {
  std::string model_name = std::filesystem::path(model.source_path).filename().string();
  if (model.source_format == ir::SourceFormat::kGguf) {
    ASSIGN_OR_RETURN(GgufSourceMetadata source, ReadGgufSourceMetadata(model.source_path));
    if (!source.name.empty()) model_name = source.name;
    AddArchitecture(a, sizes, arch, preset, model_name, writer);
    AddGgufSourceTokenizer(source, writer);
    return absl::OkStatus();
  }
  AddArchitecture(a, sizes, arch, preset, model_name, writer);
  TokenizerSources tok_src;
  for (const std::string& f : model.carried_files) {
    const std::string base = std::filesystem::path(f).filename().string();
    if (base == "tokenizer.json") tok_src.tokenizer_json = f;
    if (base == "tokenizer.model") tok_src.tokenizer_model = f;
    if (base == "tokenizer_config.json") tok_src.tokenizer_config_json = f;
  }
  if (tok_src.tokenizer_json.empty() && tok_src.tokenizer_model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        model.source_path, ": no tokenizer.json or tokenizer.model beside the checkpoint; "
                           "llama.cpp needs the tokenizer inside the GGUF"));
  }
  tok_src.config_json_text = a.config_json;
  tok_src.vocab_size = a.vocab_size;
  ASSIGN_OR_RETURN(TokenizerMetadata tokenizer, ReadTokenizer(tok_src));
  AddTokenizerMetadata(tokenizer, writer);
  return absl::OkStatus();
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

  return plan;
}

}  // namespace

absl::StatusOr<std::vector<MatrixTarget>> PlanMatrixTypes(const ir::Model& model,
                                                          const GgufExportOptions& options,
                                                          bool with_importance) {
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  TypeChooser chooser(plan.preset, static_cast<int>(plan.a->num_layers), plan.sizes[0].num_heads,
                      plan.sizes[0].num_kv_heads, with_importance);
  std::vector<MatrixTarget> out;
  for (const Planned& p : plan.planned) {
    const TypeChoice choice = chooser.Choose(p.slot);  // every tensor: the rules count them
    if (p.slot.rank < 2 || p.carried || p.source->quant.quantized()) continue;
    out.push_back(MatrixTarget{p.source->name, p.gguf_name, choice.type});
  }
  return out;
}

absl::StatusOr<GgufExportResult> ExportDecoderToGguf(const ir::Model& model,
                                                     const GgufExportOptions& options,
                                                     const std::string& path) {
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  const ir::ArchitectureInfo& a = *plan.a;
  const std::vector<hf::LayerSizes>& sizes = plan.sizes;
  const std::string& arch = plan.arch;
  const Preset& preset = plan.preset;
  const std::vector<Planned>& planned = plan.planned;
  gguf::GgufWriter writer;
  RETURN_IF_ERROR(AddNameAndTokenizer(model, a, sizes, arch, preset, writer));

  const GgufImportance* importance = options.importance ? &*options.importance : nullptr;
  if (importance) {
    // Every entry must name a matrix of this model with its row length: an
    // imatrix made for another model would otherwise be applied silently.
    for (const auto& entry : importance->columns) {
      // (A lambda may not capture a structured binding before C++20.)
      const std::string& name = entry.first;
      const std::vector<float>& columns = entry.second;
      auto it = std::find_if(planned.begin(), planned.end(),
                             [&name](const Planned& p) { return p.gguf_name == name; });
      if (it == planned.end() || it->slot.rank < 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            importance->file, ": imatrix entry '", name, "' names no matrix of ",
            model.source_path, " (an imatrix made for another model?)"));
      }
      if (static_cast<int64_t>(columns.size()) != it->slot.row_length) {
        return absl::InvalidArgumentError(absl::StrCat(
            importance->file, ": imatrix entry '", name, "' has ", columns.size(),
            " values; the matrix has rows of ", it->slot.row_length));
      }
    }
    writer.AddString("quantize.imatrix.file", importance->file);
    writer.AddString("quantize.imatrix.dataset", importance->dataset);
    writer.AddI64("quantize.imatrix.entries_count",
                  static_cast<int64_t>(importance->columns.size()));
    writer.AddI64("quantize.imatrix.chunks_count", importance->chunks);
  }
  // llama-quantize's rules read the first layer's head counts (hparams
  // n_head() / n_head_kv() without a layer).
  TypeChooser chooser(preset, static_cast<int>(a.num_layers), sizes[0].num_heads,
                      sizes[0].num_kv_heads, importance != nullptr);
  GgufExportResult result;
  double matrix_bits = 0, matrix_weights = 0;
  // Re-encoded quantized weights: the error the second quantization added,
  // filled while the writer encodes them.
  std::vector<std::pair<std::string, double>> requantized;
  std::mutex requantized_mu;
  for (const Planned& p : planned) {
    // Asked even for carried codes: llama-quantize's rules count tensors
    // of a kind (attn_v, ffn_down) as they go.
    TypeChoice choice = chooser.Choose(p.slot);
    if (p.carried) {
      choice = TypeChoice{};
      choice.type = *p.carried;
      ++result.carried;
    } else if (p.source->quant.quantized()) {
      ++result.requantized;
    }
    const int64_t cols = p.slot.row_length;
    const int64_t rows = p.slot.rank >= 2 ? p.source->dims[0] : 1;
    std::vector<int64_t> ne = {cols};
    if (p.slot.rank >= 2) ne.push_back(rows);
    ASSIGN_OR_RETURN(const uint64_t bytes,
                     gguf::GgufWriter::TensorBytes(p.gguf_name, ne, choice.type));
    if (p.slot.rank >= 2) {
      matrix_bits += 8.0 * static_cast<double>(bytes);
      matrix_weights += static_cast<double>(rows) * static_cast<double>(cols);
    }
    if (!choice.fallback_note.empty()) ++result.fallbacks;
    if (options.log) {
      std::string note = choice.fallback_note;
      if (options.encoded.count(p.source->name)) {
        note = options.encoded_by + (note.empty() ? "" : "; " + note);
      } else if (p.source->quant.quantized()) {
        note = p.carried ? absl::StrCat("the artifact's ", p.source->quant.algorithm, " codes as they are")
               : p.input_perm
                   ? absl::StrCat("act-order codes: columns put back in checkpoint order, "
                                  "dequantized and quantized again", note.empty() ? "" : "; " + note)
                   : absl::StrCat("no ggml type holds the artifact's layout: dequantized and "
                                  "quantized again", note.empty() ? "" : "; " + note);
      }
      options.log(absl::StrCat(p.gguf_name, " [", absl::StrJoin(ne, ", "), "] ",
                               std::string(gguf::TypeName(choice.type)),
                               note.empty() ? "" : " (" + note + ")"));
    }
    const int threads = std::max(1, options.threads);
    const float* columns = nullptr;
    // Float types store weights exactly and ggml's q8_0 has no weighted
    // search: the imatrix reaches the other quantized types.
    if (importance && !p.carried && gguf::BlockSize(choice.type) > 1 &&
        choice.type != TensorType::kQ8_0) {
      auto it = importance->columns.find(p.gguf_name);
      if (it != importance->columns.end()) {
        columns = it->second.data();
        ++result.with_importance;
      } else if (p.slot.rank >= 2 && options.log) {
        options.log(absl::StrCat(p.gguf_name, ": no imatrix entry, quantized without one"));
      }
    }
    if (p.carried) {
      RETURN_IF_ERROR(writer.AddTensor(
          p.gguf_name, ne, choice.type,
          [p, rows, type = choice.type](uint8_t* dst, uint64_t size) -> absl::Status {
            return EncodeCarriedRows(
                type, *p.source, *p.scale, p.zero_point,
                [&p, rows](int64_t r) {
                  return p.rope_heads > 0 ? gguf::RopePermutedSourceRow(r, rows, p.rope_heads) : r;
                },
                dst, size);
          }));
      ++result.tensors;
      continue;
    }
    if (auto enc = options.encoded.find(p.source->name); enc != options.encoded.end()) {
      const int64_t row_bytes = gguf::RowBytes(choice.type, cols);
      if (enc->second.type != choice.type ||
          static_cast<int64_t>(enc->second.rows.size()) != rows * row_bytes) {
        return absl::InternalError(absl::StrCat(
            p.gguf_name, ": pre-encoded as ", std::string(gguf::TypeName(enc->second.type)),
            " in ", enc->second.rows.size(), " bytes; the preset gives ",
            std::string(gguf::TypeName(choice.type)), " in ", rows * row_bytes));
      }
      RETURN_IF_ERROR(writer.AddTensor(
          p.gguf_name, ne, choice.type,
          [p, rows, row_bytes, src = enc->second.rows.data()](uint8_t* dst,
                                                               uint64_t) -> absl::Status {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t from =
                  p.rope_heads > 0 ? gguf::RopePermutedSourceRow(r, rows, p.rope_heads) : r;
              std::memcpy(dst + r * row_bytes, src + from * row_bytes,
                          static_cast<size_t>(row_bytes));
            }
            return absl::OkStatus();
          }));
      ++result.tensors;
      ++result.pre_encoded;
      continue;
    }
    const bool requantize = p.source->quant.quantized();
    RETURN_IF_ERROR(writer.AddTensor(
        p.gguf_name, ne, choice.type,
        [p, rows, cols, type = choice.type, columns, threads, requantize, &requantized,
         &requantized_mu](uint8_t* dst, uint64_t size) -> absl::Status {
          std::vector<float> values;
          RETURN_IF_ERROR(ReadValuesF32(p, static_cast<uint64_t>(rows) * cols, values));
          RETURN_IF_ERROR(EncodeRows(type, values, rows, cols, columns, threads, dst, size));
          if (requantize) {
            // Relative L2 of what ggml decodes against the artifact's values.
            std::vector<float> back(values.size());
            RETURN_IF_ERROR(gguf::DequantizeRow(type, dst, static_cast<int64_t>(values.size()),
                                                back.data()));
            double num = 0, den = 0;
            for (size_t i = 0; i < values.size(); ++i) {
              const double d = static_cast<double>(back[i]) - values[i];
              num += d * d;
              den += static_cast<double>(values[i]) * values[i];
            }
            std::lock_guard<std::mutex> lock(requantized_mu);
            requantized.emplace_back(p.gguf_name, den > 0 ? std::sqrt(num / den) : 0.0);
          }
          return absl::OkStatus();
        }));
    ++result.tensors;
  }
  if (result.pre_encoded != static_cast<int64_t>(options.encoded.size())) {
    return absl::InternalError(absl::StrCat(options.encoded.size(), " matrices pre-encoded, ",
                                            result.pre_encoded, " of them tensors of the file"));
  }
  ASSIGN_OR_RETURN(const gguf::WrittenFile written, writer.Write(path));
  for (const auto& [name, rel] : requantized) {
    result.max_requantized_rel_l2 = std::max(result.max_requantized_rel_l2, rel);
    if (options.log) {
      options.log(absl::StrCat(name, ": quantized again, relative L2 ", rel,
                               " against the artifact's dequantized values"));
    }
  }
  result.file_bytes = written.file_bytes;
  result.matrix_bits_per_weight = matrix_weights > 0 ? matrix_bits / matrix_weights : 0;
  return result;
}

}  // namespace slimpack::gguf_export
