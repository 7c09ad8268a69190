// Checks a checkpoint before the decoder graph is built from it: the
// architecture numbers against their bounds, each other and the weights
// present (nothing may be allocated from an unchecked number), and the
// config.json options the graph does not implement, so a checkpoint that
// needs them fails loudly instead of giving wrong logits.
#ifndef SLIMPACK_HF_CONFIG_CHECKS_H_
#define SLIMPACK_HF_CONFIG_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace slimpack::hf {

// Unimplemented naming the option for: a non-null rope_scaling (llama3,
// linear, dynamic, yarn ...), hidden_act other than silu, mlp_bias true,
// or an o_proj / MLP bias tensor in the checkpoint. Appends a warning when
// a sliding window is configured (mistral; qwen2 with use_sliding_window):
// the graph attends to the full causal context, which equals HF only for
// sequences up to the window. InvalidArgument if config_json is not JSON.
absl::Status CheckUnsupportedOptions(const ir::Model& checkpoint,
                                     std::vector<std::string>& warnings);

// The lowest layer index below num_layers that no tensor named
// "model.layers.<i>.*" belongs to, or num_layers when every layer has one.
// Both importers call it before sizing per-layer tables from a count read
// from a file (config.json's num_hidden_layers, GGUF's block_count).
int64_t FirstLayerWithoutWeights(const std::vector<ir::Tensor>& tensors, int64_t num_layers);

// Where `a`'s numbers were read, as errors name it: "config.json" or
// "manifest.json architecture".
std::string ArchitectureSourceLabel(const ir::ArchitectureInfo& a);

// The sizes the decoder graph is built from (num_layers, num_heads,
// num_kv_heads, hidden_size, intermediate_size, vocab_size, head_dim,
// max_position_embeddings), checked before anything is sized from them.
// InvalidArgument naming the checkpoint, the source (config.json or the
// artifact manifest, with that file's field name) and the value when:
//  - a size is not in [1, kMaxArchitectureSize] (max_position_embeddings
//    may be 0: absent);
//  - head_dim is odd, or num_heads is not a multiple of num_kv_heads;
//  - the embedding is not [vocab_size, hidden_size];
//  - a layer below num_layers has no weights at all;
//  - a layer's q_proj rows are not its head count times head_dim.
// NotFound naming the weight when a layer with weights lacks q_proj; the
// per-layer list errors of ReadLayerSizes (hf/layer_sizes.h).
absl::Status CheckDecoderSizes(const ir::Model& checkpoint);

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_CONFIG_CHECKS_H_
