// Reading the quantization config of an already-quantized checkpoint
// (prequantized.h): which library packed it and with which grid.
#include <string>

#include "formats/safetensors/prequantized.h"
#include "support/small_file.h"
#include "support/status_macros.h"
#include "support/strict_json.h"

namespace slimpack::safetensors {
namespace {

absl::Status Field(const std::string& source, const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(source + ": " + key + " " + what);
}

// A string field whose value (or absence) names a scheme not carried:
// "<source>: <key> \"<value>\" is not supported<context> (supported: ...)".
absl::Status Unsupported(const std::string& source, const std::string& key,
                         const std::optional<std::string>& value, const std::string& context,
                         const std::string& supported) {
  return absl::UnimplementedError(source + ": " + key + " " +
                                  (value ? "\"" + *value + "\"" : std::string("(missing)")) +
                                  " is not supported" + context + " (supported: " + supported +
                                  ")");
}

// An optional integer field (absent or null: `fallback`).
absl::StatusOr<int64_t> IntField(const nlohmann::json& j, const std::string& source,
                                 const std::string& key, std::optional<int64_t> fallback,
                                 const std::string& prefix = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Field(source, prefix + key, "is missing");
  }
  if (!it->is_number_integer()) {
    return Field(source, prefix + key, "must be an integer, found " + support::DescribeJson(*it));
  }
  return it->get<int64_t>();
}

absl::StatusOr<bool> BoolField(const nlohmann::json& j, const std::string& source,
                               const std::string& key, bool fallback,
                               const std::string& prefix = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return Field(source, prefix + key,
                 "must be true or false, found " + support::DescribeJson(*it));
  }
  return it->get<bool>();
}

absl::StatusOr<std::optional<std::string>> StringField(const nlohmann::json& j,
                                                       const std::string& source,
                                                       const std::string& key,
                                                       const std::string& prefix = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return Field(source, prefix + key, "must be a string, found " + support::DescribeJson(*it));
  }
  return std::optional<std::string>(it->get<std::string>());
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

absl::StatusOr<PrequantConfig> ParseGptq(const nlohmann::json& j, const std::string& source) {
  PrequantConfig c;
  c.method = PrequantMethod::kGptq;
  c.source = source;
  ASSIGN_OR_RETURN(int64_t bits, IntField(j, source, "bits", std::nullopt));
  if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
    return absl::UnimplementedError(source + ": bits " + std::to_string(bits) +
                                    " is not supported (supported: 2, 3, 4, 8)");
  }
  c.bits = static_cast<int>(bits);
  ASSIGN_OR_RETURN(c.group_size, IntField(j, source, "group_size", std::nullopt));
  if (c.group_size != -1 && c.group_size < 1) {
    return Field(source, "group_size", std::to_string(c.group_size) + " must be -1 or >= 1");
  }
  ASSIGN_OR_RETURN(c.sym, BoolField(j, source, "sym", true));
  ASSIGN_OR_RETURN(c.desc_act, BoolField(j, source, "desc_act", false));
  ASSIGN_OR_RETURN(bool marlin, BoolField(j, source, "is_marlin_format", false));
  if (marlin) {
    return absl::UnimplementedError(source +
                                    ": is_marlin_format true is not supported (supported: the "
                                    "GPTQ packing, checkpoint_format gptq or gptq_v2)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> fmt, StringField(j, source, "checkpoint_format"));
  std::string fmt_key = "checkpoint_format";
  if (!fmt) {
    ASSIGN_OR_RETURN(fmt, StringField(j, source, "format"));
    fmt_key = "format";
  }
  const std::string f = fmt ? Lower(*fmt) : "gptq";
  if (f == "gptq") {
    c.zeros_minus_one = true;
  } else if (f == "gptq_v2") {
    c.zeros_minus_one = false;
  } else {
    return absl::UnimplementedError(source + ": " + fmt_key + " \"" + *fmt +
                                    "\" is not supported (supported: \"gptq\" (v1, zeros stored "
                                    "minus one), \"gptq_v2\")");
  }
  return c;
}

absl::StatusOr<PrequantConfig> ParseAwq(const nlohmann::json& j, const std::string& source) {
  PrequantConfig c;
  c.method = PrequantMethod::kAwq;
  c.source = source;
  c.sym = false;
  const bool autoawq = j.contains("w_bit");  // quant_config.json spelling
  const std::string bits_key = autoawq ? "w_bit" : "bits";
  const std::string group_key = autoawq ? "q_group_size" : "group_size";
  ASSIGN_OR_RETURN(int64_t bits, IntField(j, source, bits_key, std::nullopt));
  if (bits != 4) {
    return absl::UnimplementedError(source + ": " + bits_key + " " + std::to_string(bits) +
                                    " is not supported (supported: 4)");
  }
  c.bits = 4;
  ASSIGN_OR_RETURN(c.group_size, IntField(j, source, group_key, std::nullopt));
  if (c.group_size < 1 && c.group_size != -1) {
    return Field(source, group_key, std::to_string(c.group_size) +
                                        " must be >= 1, or -1 (one group per row)");
  }
  ASSIGN_OR_RETURN(bool zero_point, BoolField(j, source, "zero_point", true));
  if (!zero_point) {
    return absl::UnimplementedError(source +
                                    ": zero_point false is not supported (supported: true)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> version, StringField(j, source, "version"));
  if (version && Lower(*version) != "gemm" && Lower(*version) != "gemv") {
    return absl::UnimplementedError(source + ": version \"" + *version +
                                    "\" is not supported (supported: \"gemm\", \"gemv\")");
  }
  c.awq_gemv = version && Lower(*version) == "gemv";
  // AutoAWQ sizes the GEMV zero and scale rows only for these groups
  // (calculate_zeros_width raises for others): nothing else was written.
  if (c.awq_gemv && c.group_size != -1 && c.group_size != 32 && c.group_size != 64 &&
      c.group_size < 128) {
    return Field(source, group_key, std::to_string(c.group_size) +
                                        " is not a group size AutoAWQ's GEMV layout has (32, 64 "
                                        "or >= 128)");
  }
  return c;
}

// The block [rows, cols] of a "weight_block_size" / "block_structure"
// value: two integers >= 1.
absl::Status ReadBlock(const nlohmann::json& v, const std::string& source,
                       const std::string& key, PrequantConfig& c) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() ||
      !v[1].is_number_integer() || v[0].get<int64_t>() < 1 || v[1].get<int64_t>() < 1) {
    return Field(source, key, "must be two integers >= 1 ([rows, cols]), found " +
                                  support::DescribeJson(v));
  }
  c.fp8_block_rows = v[0].get<int64_t>();
  c.fp8_block_cols = v[1].get<int64_t>();
  return absl::OkStatus();
}

// compressed-tensors float-quantized: FP8 E4M3 weights, static, symmetric,
// strategy channel, tensor or block.
absl::StatusOr<PrequantConfig> ParseFloatWeights(const nlohmann::json& w, const std::string& wk,
                                                 PrequantConfig c) {
  const std::string& source = c.source;
  ASSIGN_OR_RETURN(std::optional<std::string> type, StringField(w, source, "type", wk));
  if (!type || *type != "float") {
    return Unsupported(source, wk + "type", type, " with format \"float-quantized\"",
                       "\"float\"");
  }
  ASSIGN_OR_RETURN(int64_t bits, IntField(w, source, "num_bits", std::nullopt, wk));
  if (bits != 8) {
    return absl::UnimplementedError(source + ": " + wk + "num_bits " + std::to_string(bits) +
                                    " is not supported for float weights (supported: 8, E4M3)");
  }
  c.bits = 8;
  ASSIGN_OR_RETURN(c.sym, BoolField(w, source, "symmetric", true, wk));
  ASSIGN_OR_RETURN(bool dynamic, BoolField(w, source, "dynamic", false, wk));
  if (!c.sym || dynamic) {
    return absl::UnimplementedError(source + ": " + wk + (dynamic ? "dynamic true" : "symmetric false") +
                                    " is not supported for float weights (supported: static, "
                                    "symmetric)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> strategy, StringField(w, source, "strategy", wk));
  if (strategy && *strategy == "channel") {
    c.fp8_block_rows = 1;
  } else if (strategy && *strategy == "tensor") {
    // One scale: block 0 x 0 (the whole matrix).
  } else if (strategy && *strategy == "block") {
    auto b = w.find("block_structure");
    if (b == w.end()) return Field(source, wk + "block_structure", "is missing");
    RETURN_IF_ERROR(ReadBlock(*b, source, wk + "block_structure", c));
  } else {
    return Unsupported(source, wk + "strategy", strategy, " for float weights",
                       "\"channel\", \"tensor\", \"block\"");
  }
  return c;
}

// Hugging Face's FineGrainedFP8 ("fp8", DeepSeek-V3's config): E4M3 weights
// with weight_scale_inv over weight_block_size blocks (multiplied in, as
// DeepSeek's weight_dequant does, despite the name).
absl::StatusOr<PrequantConfig> ParseHfFp8(const nlohmann::json& j, const std::string& source) {
  PrequantConfig c;
  c.method = PrequantMethod::kFp8;
  c.source = source;
  c.bits = 8;
  c.fp8_scale_suffix = ".weight_scale_inv";
  ASSIGN_OR_RETURN(std::optional<std::string> fmt, StringField(j, source, "fmt"));
  if (fmt && Lower(*fmt) != "e4m3") {
    return absl::UnimplementedError(source + ": fmt \"" + *fmt +
                                    "\" is not supported (supported: \"e4m3\")");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> act, StringField(j, source, "activation_scheme"));
  if (act && *act != "dynamic") {
    return absl::UnimplementedError(source + ": activation_scheme \"" + *act +
                                    "\" is not supported (supported: \"dynamic\")");
  }
  auto b = j.find("weight_block_size");
  if (b == j.end() || b->is_null()) {
    return Field(source, "weight_block_size", "is missing (per-tensor \"fp8\" checkpoints "
                                              "have no weight_scale_inv blocks to read)");
  }
  RETURN_IF_ERROR(ReadBlock(*b, source, "weight_block_size", c));
  return c;
}

// compressed-tensors: one weight-only integer scheme, pack-quantized.
absl::StatusOr<PrequantConfig> ParseCompressedTensors(const nlohmann::json& j,
                                                      const std::string& source) {
  PrequantConfig c;
  c.method = PrequantMethod::kCompressedTensors;
  c.source = source;
  ASSIGN_OR_RETURN(std::optional<std::string> fmt, StringField(j, source, "format"));
  if (!fmt || (*fmt != "pack-quantized" && *fmt != "float-quantized")) {
    return Unsupported(source, "format", fmt, "", "\"pack-quantized\", \"float-quantized\"");
  }
  const bool fp8 = *fmt == "float-quantized";
  if (fp8) {
    c.method = PrequantMethod::kFp8;
    c.fp8_scale_suffix = ".weight_scale";
  }
  auto sparsity = j.find("sparsity_config");
  if (sparsity != j.end() && !sparsity->is_null() && !sparsity->empty()) {
    auto sf = sparsity->is_object() ? sparsity->find("format") : sparsity->end();
    if (!sparsity->is_object() || sf == sparsity->end() || *sf != "dense") {
      return absl::UnimplementedError(source + ": sparsity_config " +
                                      support::DescribeJson(*sparsity) +
                                      " is not supported (supported: none, or format \"dense\")");
    }
  }
  auto groups = j.find("config_groups");
  if (groups == j.end() || !groups->is_object() || groups->empty()) {
    return Field(source, "config_groups", "must be a non-empty object");
  }
  const nlohmann::json* weights = nullptr;
  std::string first;
  for (auto it = groups->begin(); it != groups->end(); ++it) {
    const std::string key = "config_groups." + it.key();
    if (!it->is_object()) return Field(source, key, "must be an object");
    for (const char* act : {"input_activations", "output_activations"}) {
      auto a = it->find(act);
      if (a != it->end() && !a->is_null() && fp8 && std::string(act) == "input_activations") {
        // FP8 activations quantized per token at run time (FP8-Dynamic):
        // nothing is stored for them, so the weights are the whole
        // checkpoint; slimpack computes activations in f32.
        ASSIGN_OR_RETURN(bool dyn, BoolField(*a, source, "dynamic", false, key + "." + act + "."));
        if (dyn) continue;
      }
      if (a != it->end() && !a->is_null()) {
        return absl::UnimplementedError(source + ": " + key + "." + act + " " +
                                        support::DescribeJson(*a) +
                                        " is not supported (supported: weight-only schemes, " +
                                        act + " null)");
      }
    }
    ASSIGN_OR_RETURN(std::optional<std::string> gfmt, StringField(*it, source, "format", key + "."));
    if (gfmt && *gfmt != *fmt) {
      return absl::UnimplementedError(source + ": " + key + ".format \"" + *gfmt +
                                      "\" is not supported (supported: \"" + *fmt +
                                      "\", the checkpoint's format)");
    }
    auto w = it->find("weights");
    if (w == it->end() || !w->is_object()) {
      return Field(source, key + ".weights", "must be an object");
    }
    if (weights == nullptr) {
      weights = &*w;
      first = key;
    } else if (*w != *weights) {
      return absl::UnimplementedError(source + ": " + key + ".weights differs from " + first +
                                      ".weights (supported: one weight scheme for every group)");
    }
  }
  const std::string wk = first + ".weights.";
  const nlohmann::json& w = *weights;
  ASSIGN_OR_RETURN(std::optional<std::string> type, StringField(w, source, "type", wk));
  if (fp8) return ParseFloatWeights(w, wk, std::move(c));
  if (type && *type != "int") {
    return Unsupported(source, wk + "type", type, "", "\"int\"");
  }
  ASSIGN_OR_RETURN(int64_t bits, IntField(w, source, "num_bits", std::nullopt, wk));
  if (bits != 2 && bits != 4 && bits != 8) {
    return absl::UnimplementedError(source + ": " + wk + "num_bits " + std::to_string(bits) +
                                    " is not supported (supported: 2, 4, 8)");
  }
  c.bits = static_cast<int>(bits);
  ASSIGN_OR_RETURN(c.sym, BoolField(w, source, "symmetric", true, wk));
  ASSIGN_OR_RETURN(bool dynamic, BoolField(w, source, "dynamic", false, wk));
  if (dynamic) {
    return absl::UnimplementedError(source + ": " + wk +
                                    "dynamic true is not supported (supported: static weights)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> strategy, StringField(w, source, "strategy", wk));
  if (strategy && *strategy == "group") {
    ASSIGN_OR_RETURN(c.group_size, IntField(w, source, "group_size", std::nullopt, wk));
    if (c.group_size < 1) {
      return Field(source, wk + "group_size", std::to_string(c.group_size) + " must be >= 1");
    }
  } else if (strategy && *strategy == "channel") {
    c.group_size = -1;
  } else {
    return Unsupported(source, wk + "strategy", strategy, "", "\"group\", \"channel\"");
  }
  return c;
}

}  // namespace

absl::StatusOr<PrequantConfig> ParsePrequantConfig(const nlohmann::json& j,
                                                   const std::string& source) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(source + " must be an object, found " +
                                      support::DescribeJson(j));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> method, StringField(j, source, "quant_method"));
  if (!method) {
    if (j.contains("w_bit")) return ParseAwq(j, source);
    return ParseGptq(j, source);
  }
  const std::string m = Lower(*method);
  if (m == "gptq") return ParseGptq(j, source);
  if (m == "awq") return ParseAwq(j, source);
  if (m == "compressed-tensors") return ParseCompressedTensors(j, source);
  if (m == "fp8") return ParseHfFp8(j, source);
  return absl::UnimplementedError(source + ": quant_method \"" + *method +
                                  "\" is not supported (supported: \"gptq\", \"awq\", "
                                  "\"compressed-tensors\", \"fp8\")");
}

absl::StatusOr<std::optional<PrequantConfig>> ReadPrequantConfig(const std::string& dir) {
  const std::string config_path = dir + "/config.json";
  auto text = support::ReadSmallFile(config_path, support::kMaxSideFileBytes);
  if (text.ok()) {
    ASSIGN_OR_RETURN(nlohmann::json j, support::ParseStrictJson(*text, config_path, 64));
    if (j.is_object()) {
      auto it = j.find("quantization_config");
      if (it != j.end() && !it->is_null()) {
        ASSIGN_OR_RETURN(PrequantConfig c,
                         ParsePrequantConfig(*it, config_path + ": quantization_config"));
        return std::optional<PrequantConfig>(std::move(c));
      }
    }
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  for (const char* name : {"quantize_config.json", "quant_config.json"}) {
    const std::string path = dir + "/" + name;
    auto side = support::ReadSmallFile(path, support::kMaxSideFileBytes);
    if (absl::IsNotFound(side.status())) continue;
    RETURN_IF_ERROR(side.status());
    ASSIGN_OR_RETURN(nlohmann::json j, support::ParseStrictJson(*side, path, 64));
    ASSIGN_OR_RETURN(PrequantConfig c, ParsePrequantConfig(j, path));
    return std::optional<PrequantConfig>(std::move(c));
  }
  return std::optional<PrequantConfig>();
}

}  // namespace slimpack::safetensors
