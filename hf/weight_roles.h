// Tags HF decoder weights (llama, mistral, qwen2) with their WeightRole and
// layer index, and checks their shapes against config.json.
#ifndef SLIMPACK_HF_WEIGHT_ROLES_H_
#define SLIMPACK_HF_WEIGHT_ROLES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace slimpack::hf {

// Suffix of the i64 [in] tensor `<module>.weight.input_perm` an act-order
// checkpoint import adds (formats/safetensors/prequantized.h): the weight's
// input rows are stored permuted, and the decoder graph reads the linear's
// input through Gather(x, perm, axis=-1).
inline constexpr char kInputPermSuffix[] = ".input_perm";

// For a known family (arch.known), sets role and layer on every tensor whose
// name follows the HF layout:
//   model.embed_tokens.weight                      embedding  [vocab, hidden]
//   model.layers.N.self_attn.q_proj.weight         q_proj     [H*D, hidden]
//   model.layers.N.self_attn.{k,v}_proj.weight     k/v_proj   [KV*D, hidden]
//   model.layers.N.self_attn.o_proj.weight         o_proj     [hidden, H*D]
//   model.layers.N.self_attn.{q,k,v}_proj.bias     bias       [H*D] / [KV*D]
//   model.layers.N.mlp.{gate,up}_proj.weight       gate/up    [inter, hidden]
//   model.layers.N.mlp.down_proj.weight            down_proj  [hidden, inter]
//   model.layers.N.input_layernorm.weight          attn_norm  [hidden]
//   model.layers.N.post_attention_layernorm.weight mlp_norm   [hidden]
//   model.norm.weight                              final_norm [hidden]
//   lm_head.weight                                 lm_head    [vocab, hidden]
// The scale and zero-point tensors a quantized weight's layout names, and
// a weight's `<weight>.input_perm`, take the weight's layer and role and are
// not reported as unrecognised.
// Biases are accepted for every known family (qwen2 always has them; llama
// and mistral with attention_bias). Errors (InvalidArgument, naming the
// tensor, its file and config.json): a layer index >= num_hidden_layers, or
// a shape other than the expected one. Names that do not match are left
// kUnknown and summarised in one warning; missing weights (per layer, the
// embedding, final norm, lm_head unless tied) are summarised in another.
// Does nothing for unknown families.
absl::Status TagWeightRoles(const ir::ArchitectureInfo& arch,
                            const std::string& config_path,
                            std::vector<ir::Tensor>& tensors,
                            std::vector<std::string>& warnings);

// The same missing-weights summary TagWeightRoles warns with, for a model
// already imported ("" when nothing is missing or the family is unknown).
// The converter refuses an incomplete checkpoint unless asked not to: its
// artifact could not run as a decoder.
std::string DescribeMissingWeights(const ir::ArchitectureInfo& arch,
                                   const std::vector<ir::Tensor>& tensors);

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_WEIGHT_ROLES_H_
