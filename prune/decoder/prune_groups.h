// Coupled groups of a Hugging Face Llama-family decoder checkpoint for
// structured pruning: what must be removed together so every shape still
// lines up and config.json stays a single set of sizes.
//
//  - MLP intermediate channel c of layer L:
//      gate_proj row c, up_proj row c, down_proj column c.
//  - KV head k of layer L (GQA-aware): k_proj rows and v_proj rows of head
//    k, and the q_proj rows and o_proj columns of every query head that
//    shares it (query heads k*r .. k*r+r-1, r = num_heads / num_kv_heads, as
//    HF's repeat_kv lays them out), plus the q/k/v biases (qwen2). Heads are
//    therefore removed only in whole KV groups and the head counts stay
//    divisible.
//  - Residual-stream (hidden) channels are not prunable: each one ties the
//    embedding, every layer's norms, q/k/v/gate/up inputs and o/down outputs,
//    the final norm and lm_head.
#ifndef SLIMPACK_PRUNE_DECODER_PRUNE_GROUPS_H_
#define SLIMPACK_PRUNE_DECODER_PRUNE_GROUPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::prune {

// A contiguous range of one tensor along `axis` (0 = rows = output
// features of an HF [out, in] weight, or a bias; 1 = columns = inputs).
struct TensorSlice {
  std::string tensor;
  int axis = 0;
  int64_t begin = 0, end = 0;
  bool operator==(const TensorSlice& o) const {
    return tensor == o.tensor && axis == o.axis && begin == o.begin && end == o.end;
  }
};

enum class GroupKind { kMlpChannel, kKvHead };

struct PruneGroup {
  GroupKind kind = GroupKind::kMlpChannel;
  int64_t layer = 0;
  int64_t index = 0;  // intermediate channel or KV head
  std::vector<TensorSlice> members;
};

// Tensor names of one decoder layer (biases empty when absent).
struct LayerTensors {
  int64_t layer = 0;
  std::string q, k, v, o, q_bias, k_bias, v_bias;
  std::string gate, up, down;
};

struct DecoderGroups {
  int64_t num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t intermediate_size = 0, hidden_size = 0;
  std::vector<LayerTensors> layers;
  // Dimensions that are never pruned, each with the reason (shown by -v).
  std::vector<std::string> unprunable;
};

// Names the layer tensors of `checkpoint` (an ImportSafetensors model) and
// checks their shapes against its architecture. FailedPrecondition without
// an architecture; NotFound naming a missing tensor; InvalidArgument naming
// a tensor whose shape disagrees with config.json or a head count that is
// not a multiple of the KV head count.
absl::StatusOr<DecoderGroups> BuildDecoderGroups(const ir::Model& checkpoint);

// The members of one group (the layout documented above).
PruneGroup MlpChannelGroup(const DecoderGroups& g, int64_t layer, int64_t channel);
PruneGroup KvHeadGroup(const DecoderGroups& g, int64_t layer, int64_t kv_head);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_DECODER_PRUNE_GROUPS_H_
