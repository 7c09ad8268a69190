// Checks the config.json options the decoder graph does not implement, so a
// checkpoint that needs them fails loudly instead of giving wrong logits.
#ifndef SLIMPACK_HF_CONFIG_CHECKS_H_
#define SLIMPACK_HF_CONFIG_CHECKS_H_

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

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_CONFIG_CHECKS_H_
