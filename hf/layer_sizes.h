// Per-layer sizes of a decoder whose layers were pruned to different widths:
// config.json keeps the largest value in intermediate_size /
// num_attention_heads / num_key_value_heads (so readers of one value see an
// upper bound) and adds one list per field with a value for every layer.
// Stock Hugging Face transformers ignores the lists and cannot load such a
// checkpoint (its shapes disagree with the single values).
#ifndef SLIMPACK_HF_LAYER_SIZES_H_
#define SLIMPACK_HF_LAYER_SIZES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::hf {

inline constexpr char kIntermediateSizePerLayer[] = "intermediate_size_per_layer";
inline constexpr char kNumAttentionHeadsPerLayer[] = "num_attention_heads_per_layer";
inline constexpr char kNumKeyValueHeadsPerLayer[] = "num_key_value_heads_per_layer";

struct LayerSizes {
  int64_t intermediate_size = 0, num_heads = 0, num_kv_heads = 0;
};

// One entry per layer: the list values from architecture.config_json where
// present, the single values otherwise. InvalidArgument naming
// `source` (the checkpoint) and the field for a list that is not
// num_hidden_layers positive integers no larger than the single value, or a
// layer whose head count is not a multiple of its KV head count.
absl::StatusOr<std::vector<LayerSizes>> ReadLayerSizes(const ir::ArchitectureInfo& arch,
                                                       const std::string& source);

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_LAYER_SIZES_H_
