// Reader for Hugging Face config.json: architecture numbers used to tag and
// shape-check the weights of known decoder families.
#ifndef SLIMPACK_HF_HF_CONFIG_H_
#define SLIMPACK_HF_HF_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::hf {

// Largest size any architecture number may have (config.json or an
// artifact's manifest): larger than any real dimension, small enough that
// products of two such values fit in int64 without checks downstream.
inline constexpr int64_t kMaxArchitectureSize = int64_t{1} << 30;

// Families whose weight names and shapes we know: llama, mistral, qwen2.
bool IsKnownFamily(std::string_view model_type);

// Parses config.json text; `path` names the file in errors. Every error is
// InvalidArgument naming the file and the field with the value found:
//  - not a JSON object, duplicate key, bad UTF-8;
//  - a present numeric field that is not a positive integer (null counts as
//    absent), rope_theta / rms_norm_eps not a positive finite number,
//    tie_word_embeddings not a bool, model_type / torch_dtype not a string,
//    architectures not an array of strings;
//  - for known families only: a required field missing (num_hidden_layers,
//    num_attention_heads, hidden_size, intermediate_size, vocab_size),
//    num_key_value_heads not dividing num_attention_heads, or (without an
//    explicit head_dim) num_attention_heads not dividing hidden_size.
// Defaults: num_key_value_heads = num_attention_heads, head_dim =
// hidden_size / num_attention_heads (0 when unknown). `config_json` keeps
// the text.
absl::StatusOr<ir::ArchitectureInfo> ParseHfConfig(std::string_view text,
                                                   const std::string& path);

// Reads and parses the file at `path`; NotFound if it does not exist.
absl::StatusOr<ir::ArchitectureInfo> ReadHfConfig(const std::string& path);

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_HF_CONFIG_H_
