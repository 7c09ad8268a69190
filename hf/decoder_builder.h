// DecoderBuilder writes a llama / mistral / qwen2 decoder as an FP32 graph,
// node by node, for BuildDecoderGraph (hf/llama_graph_builder.h, whose top
// comment gives the shapes). Internal to hf/. decoder_attention.cc holds the
// attention half (positions and masks, RoPE, the plain and the
// GroupQueryAttention forms), decoder_builder.cc the rest (inputs and
// outputs, layers, norms, MLP, weights).
#ifndef SLIMPACK_HF_DECODER_BUILDER_H_
#define SLIMPACK_HF_DECODER_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hf/graph_emitter.h"
#include "hf/layer_sizes.h"
#include "hf/llama_graph_builder.h"
#include "ir/graph.h"

namespace slimpack::hf::decoder_internal {

class DecoderBuilder {
 public:
  DecoderBuilder(const ir::Model& checkpoint, const DecoderGraphOptions& options, ir::Model& out)
      : ckpt_(checkpoint),
        arch_(*checkpoint.architecture),
        kv_cache_(options.kv_cache),
        gqa_(options.kv_cache && options.group_query_attention),
        g_(out.graph),
        e_(out.graph) {}

  absl::Status Build();

 private:
  // Graph inputs attention_mask, position_ids and past_key_values.*, and
  // outputs present.* (produced by Attention's Concat).
  void AddCacheInputsAndOutputs();

  // Shape-derived values shared by every layer: [B, S], RoPE cos/sin and the
  // causal mask. Without a cache: cos/sin [S, D] at positions 0..S-1, mask
  // [S, S] (0 on and below the diagonal, -inf above). With one: cos/sin
  // [B, 1, S, D] at position_ids, mask [B, 1, S, T] (CausalCacheMask).
  void BuildPositionalValues();

  // A float tensor of `shape` (1-d i64) filled with -inf.
  std::string NegInfOfShape(const std::string& shape);

  // The additive mask [B, 1, S, T] of S new queries at positions
  // P..T-1 (P = T - S past tokens) over T keys: -inf where key j is in the
  // query's future (j > P + i: Trilu upper from diagonal P + 1), the lowest
  // float where attention_mask[b, j] is 0, else 0. T is attention_mask's
  // length, as in ONNX Runtime GenAI.
  std::string CausalCacheMask(const std::string& seq_1d);

  absl::StatusOr<std::string> Layer(int64_t l, const std::string& x);

  // weight * (x * 1/sqrt(mean(x^2) + eps)), all f32 like HF's LlamaRMSNorm.
  absl::StatusOr<std::string> RmsNorm(const std::string& x, const std::string& weight_name);

  // x [T, in] -> [T, out] with the HF [out, in] weight and optional bias.
  absl::StatusOr<std::string> Linear(const std::string& module, const std::string& x, int64_t out,
                                     int64_t in, bool bias);

  // t [B, heads, S, D] -> t*cos + rotate_half(t)*sin, rotate_half(t) =
  // cat(-t[..., D/2:], t[..., :D/2]).
  std::string Rope(const std::string& t);

  // [T, heads*D] -> [B, heads, S, D].
  std::string SplitHeads(const std::string& t, int64_t heads);

  // Constant name `base`, suffixed with the head counts when a pruned layer
  // differs from config.json's single values (constants are shared by name).
  std::string Keyed(const std::string& base, int64_t nh, int64_t nkv) const;

  // With a cache, K and V [B, KV, S, D] are appended to the layer's past
  // (present = Concat(past, new) on the sequence axis) and attention runs
  // over the T = past + S keys; the shapes below hold with S or T keys.
  absl::StatusOr<std::string> Attention(int64_t layer, const std::string& p, const std::string& h,
                                        const LayerSizes& sizes);

  // [T, heads*D] -> [B, S, heads, D].
  std::string SplitHeadsBshd(const std::string& t, int64_t heads);

  // The same attention as one com.microsoft.GroupQueryAttention node: Q and
  // K roped here (at position_ids, as the plain graph does) and passed as
  // [B, S, heads * D] with V; the node appends K and V to past (present =
  // past + new along the sequence axis, no shared buffer), attends causally
  // over all T keys and adds the plain graph's [B, 1, S, T] mask as its
  // attention_bias (input 10), which ONNX Runtime's CPU kernel reads.
  absl::StatusOr<std::string> GroupQueryAttention(int64_t layer, const std::string& p,
                                                  const std::string& h, const LayerSizes& sizes);

  // down(silu(gate(x)) * up(x)).
  absl::StatusOr<std::string> Mlp(const std::string& p, const std::string& h, int64_t inter);

  // Adds the checkpoint tensor `name` (same bytes) after checking it.
  absl::StatusOr<std::string> Weight(const std::string& name, const std::vector<int64_t>& dims);

  // The weight's `<weight>.input_perm` (hf::kInputPermSuffix), checked to
  // be an i64 [in] permutation of 0..in-1, or "" when there is none.
  absl::StatusOr<std::string> InputPerm(const std::string& weight, int64_t in);

  // A quantized weight goes into the graph as it is stored, with its scale
  // and zero point beside it; the interpreter dequantizes it when it binds
  // initializers, so the nodes are those of the float graph.
  absl::StatusOr<std::string> QuantizedWeight(const ir::Tensor& t);

  const ir::Model& ckpt_;
  const ir::ArchitectureInfo& arch_;
  const bool kv_cache_;
  const bool gqa_;  // GroupQueryAttention nodes (needs kv_cache_)
  ir::Graph& g_;
  GraphEmitter e_;
  std::string batch_seq_, cos_, sin_, mask_;
  std::string seqlens_k_, total_len_;  // GroupQueryAttention's i32 lengths
  std::vector<LayerSizes> sizes_;      // per layer (pruned checkpoints differ)
};

}  // namespace slimpack::hf::decoder_internal

#endif  // SLIMPACK_HF_DECODER_BUILDER_H_
