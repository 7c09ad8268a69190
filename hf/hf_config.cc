#include "hf/hf_config.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "support/small_file.h"
#include "support/strict_json.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::hf {
namespace {

using nlohmann::json;

constexpr int kMaxConfigDepth = 64;
constexpr int64_t kMaxConfigInt = kMaxArchitectureSize;

// Finds `field`; null is treated as absent (HF writes "head_dim": null).
const json* Find(const json& root, const char* field) {
  auto it = root.find(field);
  if (it == root.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status FieldError(const std::string& path, const char* field,
                        const std::string& want, const json& found) {
  return absl::InvalidArgumentError(path + ": field '" + field + "' must be " +
                                    want + ", found " + support::DescribeJson(found));
}

absl::StatusOr<std::optional<int64_t>> PositiveInt(const json& root,
                                                   const char* field,
                                                   const std::string& path) {
  const json* v = Find(root, field);
  if (v == nullptr) return std::optional<int64_t>();
  const std::string want =
      "a positive integer up to " + std::to_string(kMaxConfigInt);
  if (v->is_number_unsigned()) {
    uint64_t x = v->get<uint64_t>();
    if (x == 0 || x > static_cast<uint64_t>(kMaxConfigInt)) {
      return FieldError(path, field, want, *v);
    }
    return std::optional<int64_t>(static_cast<int64_t>(x));
  }
  return FieldError(path, field, want, *v);
}

absl::StatusOr<std::optional<double>> PositiveNumber(const json* v,
                                                     const char* field,
                                                     const std::string& path) {
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number() || !std::isfinite(v->get<double>()) ||
      v->get<double>() <= 0) {
    return FieldError(path, field, "a positive finite number", *v);
  }
  return std::optional<double>(v->get<double>());
}

absl::StatusOr<std::string> OptionalString(const json& root, const char* field,
                                           const std::string& path) {
  const json* v = Find(root, field);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return FieldError(path, field, "a string", *v);
  return v->get<std::string>();
}

absl::Status ParseNumbers(const json& root, const std::string& path,
                          ir::ArchitectureInfo& info) {
  struct IntField {
    const char* name;
    int64_t* out;
    bool required;  // for known families
  };
  const IntField fields[] = {
      {"num_hidden_layers", &info.num_layers, true},
      {"num_attention_heads", &info.num_heads, true},
      {"num_key_value_heads", &info.num_kv_heads, false},
      {"hidden_size", &info.hidden_size, true},
      {"intermediate_size", &info.intermediate_size, true},
      {"vocab_size", &info.vocab_size, true},
      {"head_dim", &info.head_dim, false},
      {"max_position_embeddings", &info.max_position_embeddings, false},
  };
  for (const IntField& f : fields) {
    ASSIGN_OR_RETURN(std::optional<int64_t> v, PositiveInt(root, f.name, path));
    if (v) {
      *f.out = *v;
    } else if (f.required && info.known) {
      return absl::InvalidArgumentError(path + ": " + info.model_type +
                                        " config has no field '" + f.name +
                                        "'");
    }
  }
  // Newer transformers nest rope_theta under rope_parameters.
  const json* rope = Find(root, "rope_theta");
  if (rope == nullptr) {
    const json* params = Find(root, "rope_parameters");
    if (params != nullptr && params->is_object()) {
      rope = Find(*params, "rope_theta");
    }
  }
  ASSIGN_OR_RETURN(auto theta, PositiveNumber(rope, "rope_theta", path));
  if (theta) info.rope_theta = *theta;
  ASSIGN_OR_RETURN(auto eps, PositiveNumber(Find(root, "rms_norm_eps"),
                                            "rms_norm_eps", path));
  if (eps) info.norm_eps = *eps;
  return absl::OkStatus();
}

// Defaults and the divisibility rules attention relies on.
absl::Status CheckRelations(const std::string& path,
                            ir::ArchitectureInfo& info) {
  const bool has_heads = info.num_heads > 0;
  if (info.num_kv_heads == 0) info.num_kv_heads = info.num_heads;
  if (info.known && info.num_heads % info.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        path + ": field 'num_attention_heads' (" +
        std::to_string(info.num_heads) +
        ") must be a multiple of 'num_key_value_heads' (" +
        std::to_string(info.num_kv_heads) + ")");
  }
  if (info.head_dim == 0 && has_heads && info.hidden_size > 0) {
    if (info.hidden_size % info.num_heads == 0) {
      info.head_dim = info.hidden_size / info.num_heads;
    } else if (info.known) {
      return absl::InvalidArgumentError(
          path + ": field 'hidden_size' (" + std::to_string(info.hidden_size) +
          ") must be divisible by 'num_attention_heads' (" +
          std::to_string(info.num_heads) + ") when 'head_dim' is not given");
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsKnownFamily(std::string_view model_type) {
  return model_type == "llama" || model_type == "mistral" ||
         model_type == "qwen2";
}

absl::StatusOr<ir::ArchitectureInfo> ParseHfConfig(std::string_view text,
                                                   const std::string& path) {
  ASSIGN_OR_RETURN(json root, support::ParseStrictJson(text, path, kMaxConfigDepth));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(path + ": must be a JSON object, found " +
                                      support::DescribeJson(root));
  }
  ir::ArchitectureInfo info;
  info.config_json = std::string(text);
  ASSIGN_OR_RETURN(info.model_type, OptionalString(root, "model_type", path));
  info.known = IsKnownFamily(info.model_type);
  if (const json* a = Find(root, "architectures")) {
    if (!a->is_array()) {
      return FieldError(path, "architectures", "an array of strings", *a);
    }
    for (const json& e : *a) {
      if (!e.is_string()) {
        return FieldError(path, "architectures", "an array of strings", e);
      }
      info.architectures.push_back(e.get<std::string>());
    }
  }
  RETURN_IF_ERROR(ParseNumbers(root, path, info));
  RETURN_IF_ERROR(CheckRelations(path, info));
  if (const json* t = Find(root, "tie_word_embeddings")) {
    if (!t->is_boolean()) {
      return FieldError(path, "tie_word_embeddings", "a boolean", *t);
    }
    info.tie_word_embeddings = t->get<bool>();
  }
  // transformers >= 4.56 writes "dtype" instead of "torch_dtype".
  ASSIGN_OR_RETURN(info.torch_dtype, OptionalString(root, "torch_dtype", path));
  if (info.torch_dtype.empty()) {
    ASSIGN_OR_RETURN(info.torch_dtype, OptionalString(root, "dtype", path));
  }
  return info;
}

absl::StatusOr<ir::ArchitectureInfo> ReadHfConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, support::ReadSmallFile(path, support::kMaxSideFileBytes));
  return ParseHfConfig(text, path);
}

}  // namespace slimpack::hf
