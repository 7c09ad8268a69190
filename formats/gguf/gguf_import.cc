#include "formats/gguf/gguf_import.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/gguf/llama_names.h"
#include "hf/config_checks.h"
#include "hf/hf_config.h"
#include "hf/layer_sizes.h"
#include "hf/weight_roles.h"
#include "nlohmann/json.hpp"
#include "support/checked_math.h"
#include "support/input_pages.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::gguf {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<uint64_t> RequiredUInt(const GgufFile& f, const std::string& key) {
  const Value* v = f.FindValue(key);
  if (v == nullptr) return Bad(f.label, absl::StrCat("metadata key '", key, "' is missing"));
  std::optional<uint64_t> u = v->is_array() ? std::nullopt : v->GetUInt();
  if (!u) return Bad(f.label, absl::StrCat("metadata '", key, "' is ", v->Describe(),
                                           ", expected a non-negative integer"));
  return *u;
}

std::optional<double> OptionalFloat(const GgufFile& f, const std::string& key) {
  const Value* v = f.FindValue(key);
  return v == nullptr || v->is_array() ? std::nullopt : v->GetFloat();
}

// A per-layer width: llama.cpp's get_key_or_arr reads one value for every
// layer or an array of `layers` values. Sets config.json's single field to
// the largest and, when the layers differ, its per-layer list
// (hf/layer_sizes.h), as slimpack's pruning writes them.
absl::Status PerLayerField(const GgufFile& f, const std::string& key, uint64_t layers,
                           const std::string& field, const std::string& list_field, json& c) {
  const Value* v = f.FindValue(key);
  if (v == nullptr || !v->is_array()) {
    ASSIGN_OR_RETURN(c[field], RequiredUInt(f, key));
    return absl::OkStatus();
  }
  if (v->size() != layers) {
    return Bad(f.label, absl::StrCat("metadata '", key, "' has ", v->size(),
                                     " values; block_count is ", layers));
  }
  std::vector<uint64_t> values;
  for (uint64_t i = 0; i < layers; ++i) {
    const std::optional<uint64_t> u = v->GetUInt(i);
    if (!u) return Bad(f.label, absl::StrCat("metadata '", key, "'[", i, "] is not a "
                                             "non-negative integer (", v->Describe(), ")"));
    values.push_back(*u);
  }
  c[field] = *std::max_element(values.begin(), values.end());
  if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) != values.end()) {
    c[list_field] = values;
  }
  return absl::OkStatus();
}

// config.json as a Hugging Face checkpoint of this model would have it, so
// the one config parser (hf/hf_config.h) checks and fills the architecture.
// A "deci" file (a llama pruned per layer) becomes a llama with per-layer
// lists.
absl::StatusOr<std::string> ConfigFromMetadata(const GgufFile& f, const std::string& arch) {
  json c;
  c["model_type"] = arch == "qwen2" ? "qwen2" : "llama";
  c["architectures"] = json::array({arch == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"});
  ASSIGN_OR_RETURN(c["hidden_size"], RequiredUInt(f, arch + ".embedding_length"));
  ASSIGN_OR_RETURN(const uint64_t layers, RequiredUInt(f, arch + ".block_count"));
  c["num_hidden_layers"] = layers;
  RETURN_IF_ERROR(PerLayerField(f, arch + ".feed_forward_length", layers, "intermediate_size",
                                hf::kIntermediateSizePerLayer, c));
  RETURN_IF_ERROR(PerLayerField(f, arch + ".attention.head_count", layers, "num_attention_heads",
                                hf::kNumAttentionHeadsPerLayer, c));
  c["num_key_value_heads"] = c["num_attention_heads"];
  if (c.contains(hf::kNumAttentionHeadsPerLayer)) {
    c[hf::kNumKeyValueHeadsPerLayer] = c[hf::kNumAttentionHeadsPerLayer];
  }
  if (f.FindValue(arch + ".attention.head_count_kv") != nullptr) {
    c.erase(hf::kNumKeyValueHeadsPerLayer);
    RETURN_IF_ERROR(PerLayerField(f, arch + ".attention.head_count_kv", layers,
                                  "num_key_value_heads", hf::kNumKeyValueHeadsPerLayer, c));
  }
  if (f.FindValue(arch + ".attention.key_length") != nullptr) {
    ASSIGN_OR_RETURN(c["head_dim"], RequiredUInt(f, arch + ".attention.key_length"));
  }
  const TensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr || embd->ne.size() != 2) {
    return Bad(f.label, "tensor 'token_embd.weight' (the embedding, [hidden, vocab]) is missing");
  }
  c["vocab_size"] = embd->ne[1];
  c["max_position_embeddings"] = 2048;
  if (f.FindValue(arch + ".context_length") != nullptr) {
    ASSIGN_OR_RETURN(c["max_position_embeddings"], RequiredUInt(f, arch + ".context_length"));
  }
  c["rope_theta"] = OptionalFloat(f, arch + ".rope.freq_base").value_or(10000.0);
  const std::optional<double> eps = OptionalFloat(f, arch + ".attention.layer_norm_rms_epsilon");
  if (!eps) return Bad(f.label, absl::StrCat("metadata '", arch,
                                             ".attention.layer_norm_rms_epsilon' is missing"));
  c["rms_norm_eps"] = *eps;
  c["tie_word_embeddings"] = f.FindTensor("output.weight") == nullptr;
  c["torch_dtype"] = "float32";
  for (const auto& [key, field] : {std::pair<const char*, const char*>{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                   {"tokenizer.ggml.eos_token_id", "eos_token_id"}}) {
    const Value* v = f.FindValue(key);
    if (v != nullptr && !v->is_array() && v->GetUInt()) c[field] = *v->GetUInt();
  }
  return c.dump(2);
}

// A tensor in HF layout without data yet (dtype f32 until DecodeInto
// sets it): dims reversed from ne.
ir::Tensor Shell(const TensorInfo& t, const std::string& hf_name) {
  ir::Tensor out;
  out.name = hf_name;
  out.dtype = ir::DType::kF32;
  for (auto it = t.ne.rbegin(); it != t.ne.rend(); ++it) out.dims.push_back(*it);
  return out;
}

// Rows of `t` (`row_bytes` each) in HF order: rotary q/k rows of llama.cpp's
// interleaved layout put back in HF's half-split order (rope_heads > 0).
absl::StatusOr<ir::TensorData> HfRowOrder(const GgufFile& f, const TensorInfo& t,
                                                const uint8_t* rows_in, uint64_t row_bytes,
                                                int64_t rope_heads) {
  const int64_t cols = t.ne.size() >= 2 ? t.ne[0] : 1;
  const int64_t rows = static_cast<int64_t>(t.n_elements) / cols;
  if (rows % rope_heads != 0 || (rows / rope_heads) % 2 != 0) {
    return Bad(f.label, absl::StrCat("tensor '", std::string(t.name), "' has ", rows,
                                     " rows, not an even number per head for ", rope_heads,
                                     " heads"));
  }
  // Every byte is copied over, so the buffer is not zeroed first (a
  // vector's zeroing was a twentieth of an F16 GGUF's whole re-encoding).
  support::PrefaultRead(rows_in, row_bytes * static_cast<uint64_t>(rows));
  uint8_t* hf_order = nullptr;
  ir::TensorData data =
      ir::TensorData::OwnedUninitialized(row_bytes * static_cast<uint64_t>(rows), &hf_order);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(hf_order + RopePermutedSourceRow(r, rows, rope_heads) * row_bytes,
                rows_in + r * row_bytes, row_bytes);
  }
  return data;
}

// The IR dtype holding a float GGUF type's bytes as they are.
std::optional<ir::DType> FloatDType(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
    case TensorType::kF32: return ir::DType::kF32;
    case TensorType::kF16: return ir::DType::kF16;
    case TensorType::kBF16: return ir::DType::kBF16;
    default: return std::nullopt;
  }
}

// Fills `out` (a Shell) from `t`. A quantized tensor keeps its ggml blocks
// (layout ggml_blocks: the bytes llama.cpp reads, viewing the mapping when
// no rows move), so a GGUF converts into an artifact or back to GGUF with
// its codes intact and dequantizes exactly where it is used. f32/f16/bf16
// tensors keep their dtype and bytes the same way: an F16 GGUF re-encoded
// to Q4_K (llama-quantize's own job) reads its weights from the mapping
// instead of holding an f32 copy twice the file's size.
absl::Status DecodeInto(const GgufFile& f, const TensorInfo& t, int64_t rope_heads,
                        ir::Tensor& out) {
  out.provenance.file = f.label;
  out.provenance.offset = static_cast<int64_t>(t.data - f.mapping->data());
  const auto block_type = static_cast<ir::GgmlType>(t.type);
  // A rotary q/k bias (rank 1) is permuted element by element, which
  // blocks cannot be: it is decoded like a float tensor.
  const bool keep_blocks = rope_heads == 0 || t.ne.size() >= 2;
  if (ir::GgmlTypeGeometry(block_type) && keep_blocks) {
    const int64_t cols = t.ne.empty() ? 1 : t.ne[0];
    out.dtype = ir::DType::kU8;
    out.quant.kind = ir::QuantKind::kGgmlBlocks;
    out.quant.block_type = block_type;
    out.quant.axis = static_cast<int>(out.dims.size()) - 1;
    out.quant.group_size = ir::GgmlTypeGeometry(block_type)->block_size;
    out.quant.algorithm = "gguf";
    if (rope_heads > 0) {
      ASSIGN_OR_RETURN(out.data,
                       HfRowOrder(f, t, t.data, *ir::GgmlRowBytes(block_type, cols), rope_heads));
    } else {
      out.data = ir::TensorData::View(f.mapping, t.data, t.n_bytes);
    }
    return absl::OkStatus();
  }
  if (const std::optional<ir::DType> dtype = FloatDType(t.type)) {
    out.dtype = *dtype;
    if (rope_heads > 0) {
      const uint64_t cols = static_cast<uint64_t>(t.ne.size() >= 2 ? t.ne[0] : 1);
      ASSIGN_OR_RETURN(out.data,
                       HfRowOrder(f, t, t.data, cols * ir::DTypeBits(*dtype) / 8, rope_heads));
    } else {
      out.data = ir::TensorData::View(f.mapping, t.data, t.n_bytes);
    }
    return absl::OkStatus();
  }
  const std::optional<uint64_t> bytes = CheckedMul(t.n_elements, 4);
  if (!bytes) return Bad(f.label, absl::StrCat("tensor '", std::string(t.name), "' is too large"));
  std::vector<uint8_t> decoded(*bytes);
  float* values = reinterpret_cast<float*>(decoded.data());
  RETURN_IF_ERROR(DequantizeRow(static_cast<TensorType>(t.type), t.data,
                                static_cast<int64_t>(t.n_elements), values));
  if (rope_heads > 0) {
    const uint64_t row_bytes = static_cast<uint64_t>(t.ne.size() >= 2 ? t.ne[0] : 1) * 4;
    ASSIGN_OR_RETURN(out.data, HfRowOrder(f, t, decoded.data(), row_bytes, rope_heads));
    return absl::OkStatus();
  }
  out.data = ir::TensorData::Owned(std::move(decoded));
  return absl::OkStatus();
}

}  // namespace

bool HasGgufMagic(std::string_view head) {
  uint32_t magic = 0;
  if (head.size() < sizeof(magic)) return false;
  std::memcpy(&magic, head.data(), sizeof(magic));
  return magic == kMagic;
}

absl::StatusOr<ir::Model> ImportGguf(const std::string& path, int threads) {
  ASSIGN_OR_RETURN(GgufFile f, OpenGgufFile(path));
  const Value* arch_value = f.FindValue("general.architecture");
  if (arch_value == nullptr || !arch_value->GetString()) {
    return Bad(path, "metadata 'general.architecture' is missing or not a string");
  }
  const std::string arch(*arch_value->GetString());
  if (arch != "llama" && arch != "qwen2" && arch != "deci") {
    return absl::UnimplementedError(absl::StrCat(
        path, ": general.architecture '", arch, "' is not imported (llama, deci, qwen2)"));
  }
  ASSIGN_OR_RETURN(const std::string config, ConfigFromMetadata(f, arch));
  ASSIGN_OR_RETURN(ir::ArchitectureInfo info,
                   hf::ParseHfConfig(config, path + " (GGUF metadata)"));

  ir::Model model;
  model.source_format = ir::SourceFormat::kGguf;
  model.source_path = path;
  model.graph.name = std::string(arch_value->GetString().value());
  model.input_files.push_back(path);
  // Shapes first (names, sizes, shapes against the architecture), decoding
  // after: nothing is allocated for a tensor the checks would refuse.
  std::vector<std::pair<std::string, const TensorInfo*>> order;
  for (const TensorInfo& t : f.tensors) {
    const std::string name(t.name);
    const std::string hf_name = HfNameFromGguf(name);
    if (hf_name.empty()) {
      return absl::UnimplementedError(absl::StrCat(
          path, ": tensor '", name, "' has no Hugging Face llama counterpart",
          name == "rope_freqs.weight" ? " (rope scaling is not supported)" : ""));
    }
    if (t.n_elements == 0) {
      return Bad(path, absl::StrCat("tensor '", name, "' has no elements"));
    }
    order.emplace_back(hf_name, &t);
  }
  // Name order, as the safetensors importer keeps them.
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ir::Tensor> tensors;
  for (const auto& [hf_name, t] : order) tensors.push_back(Shell(*t, hf_name));
  RETURN_IF_ERROR(hf::TagWeightRoles(info, path, tensors, model.warnings));
  // block_count sizes per-layer tables below: tie it to the blk.N tensors
  // first (llama.cpp fails on the same file with "missing tensor").
  const int64_t absent = hf::FirstLayerWithoutWeights(tensors, info.num_layers);
  if (absent < info.num_layers) {
    return Bad(path, absl::StrCat("metadata '", arch, ".block_count' is ", info.num_layers,
                                  " but no tensor is named 'blk.", absent, ".*'"));
  }
  ASSIGN_OR_RETURN(const std::vector<hf::LayerSizes> sizes, hf::ReadLayerSizes(info, path));
  std::vector<int64_t> rope_heads(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string name(order[i].second->name);
    // Rotary rows are permuted per head of the tensor's own layer.
    const int layer = tensors[i].layer;
    const hf::LayerSizes own = layer >= 0 && layer < static_cast<int>(sizes.size())
                                   ? sizes[layer]
                                   : hf::LayerSizes{info.intermediate_size, info.num_heads,
                                                    info.num_kv_heads};
    if (arch != "qwen2" && IsRopeQ(name)) rope_heads[i] = own.num_heads;
    if (arch != "qwen2" && IsRopeK(name)) rope_heads[i] = own.num_kv_heads;
  }
  // Most tensors view the mapping; the rotary ones are copied into fresh
  // memory, whose first touch (the kernel zeroing it) is most of a GGUF
  // import: 0.3 s of the 2.4 s an F16 7B-layer GGUF takes to re-encode to
  // Q4_K_M, on one thread. Threads take tensors in turn; the first failing
  // tensor in name order is the error reported, at any thread count.
  std::vector<absl::Status> decoded(order.size());
  std::atomic<size_t> next{0};
  support::RunOnThreads(support::ThreadsOrCores(threads), [&](int64_t) {
    for (size_t i = next++; i < order.size(); i = next++) {
      decoded[i] = DecodeInto(f, *order[i].second, rope_heads[i], tensors[i]);
    }
  });
  for (const absl::Status& s : decoded) RETURN_IF_ERROR(s);
  model.carried_overrides["config.json"] = config;
  // The tokenizer as llama.cpp reads it (every tokenizer.* key, byte for
  // byte) and general.name, kept beside an artifact made from this file as a
  // GGUF of metadata alone, so exporting that artifact to GGUF again needs
  // no tokenizer.json (export/gguf_llama_metadata.cc).
  if (f.FindValue("tokenizer.ggml.model") != nullptr) {
    GgufWriter side;
    for (const KeyValue& kv : f.metadata) {
      if (kv.key == "general.name" || kv.key.substr(0, 10) == "tokenizer.") {
        side.AddEncoded(std::string(kv.key), kv.value.type(), kv.value.Encoded());
      }
    }
    ASSIGN_OR_RETURN(model.carried_overrides[kTokenizerSideFile], side.MetadataOnlyFile());
  }
  model.architecture = std::move(info);
  for (ir::Tensor& t : tensors) RETURN_IF_ERROR(model.graph.AddInitializer(std::move(t)));
  return model;
}

}  // namespace slimpack::gguf
