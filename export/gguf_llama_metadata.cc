#include "export/gguf_llama_metadata.h"

#include <cstdint>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "export/gguf_source.h"
#include "export/gguf_tokenizer.h"
#include "formats/gguf/gguf_import.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {
namespace {

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

}  // namespace

absl::Status AddNameAndTokenizer(const ir::Model& model, const ir::ArchitectureInfo& a,
                                 const std::vector<hf::LayerSizes>& sizes,
                                 const std::string& arch, const Preset& preset,
                                 bool allow_requantize, gguf::GgufWriter& writer) {
  std::string model_name = std::filesystem::path(model.source_path).filename().string();
  if (model.source_format == ir::SourceFormat::kGguf) {
    ASSIGN_OR_RETURN(GgufSourceMetadata source,
                     ReadGgufSourceMetadata(model.source_path, allow_requantize));
    if (!source.name.empty()) model_name = source.name;
    AddArchitecture(a, sizes, arch, preset, model_name, writer);
    AddGgufSourceTokenizer(source, writer);
    return absl::OkStatus();
  }
  TokenizerSources tok_src;
  std::string side_file;  // an artifact made from a GGUF: its tokenizer keys
  for (const std::string& f : model.carried_files) {
    const std::string base = std::filesystem::path(f).filename().string();
    if (base == "tokenizer.json") tok_src.tokenizer_json = f;
    if (base == "tokenizer.model") tok_src.tokenizer_model = f;
    if (base == "tokenizer_config.json") tok_src.tokenizer_config_json = f;
    if (base == gguf::kTokenizerSideFile) side_file = f;
  }
  if (!side_file.empty()) {
    // llama.cpp's own keys, copied as the source GGUF had them.
    ASSIGN_OR_RETURN(GgufSourceMetadata source, ReadGgufSourceMetadata(side_file));
    if (!source.name.empty()) model_name = source.name;
    AddArchitecture(a, sizes, arch, preset, model_name, writer);
    AddGgufSourceTokenizer(source, writer);
    return absl::OkStatus();
  }
  AddArchitecture(a, sizes, arch, preset, model_name, writer);
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

}  // namespace slimpack::gguf_export
