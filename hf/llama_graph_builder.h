// Builds the decoder forward pass (input_ids -> logits) of a Hugging Face
// Llama-family checkpoint as an ONNX-op graph in the IR, using the imported
// weights as initializers without copying them.
#ifndef SLIMPACK_HF_LLAMA_GRAPH_BUILDER_H_
#define SLIMPACK_HF_LLAMA_GRAPH_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::hf {

// Graph input and output names.
inline constexpr char kInputIds[] = "input_ids";  // i64 [batch, seq]
inline constexpr char kLogits[] = "logits";       // f32 [batch, seq, vocab]
// With a KV cache (DecoderGraphOptions::kv_cache), the names and layout ONNX
// Runtime GenAI's model builder uses (HF's past_key_values / present):
inline constexpr char kAttentionMask[] = "attention_mask";  // i64 [batch, total_seq]
inline constexpr char kPositionIds[] = "position_ids";      // i64 [batch, seq]
// "past_key_values.<layer>.key|value": f32 [batch, kv_heads, past_seq, head_dim];
// "present.<layer>.key|value": f32 [batch, kv_heads, total_seq, head_dim].
std::string PastName(int64_t layer, bool key);
std::string PresentName(int64_t layer, bool key);

struct DecoderGraphOptions {
  // Adds attention_mask, position_ids and the per-layer past keys/values as
  // inputs and the present ones as outputs (see BuildDecoderGraph).
  bool kv_cache = false;
  // With kv_cache: each layer's attention is one ONNX Runtime
  // com.microsoft.GroupQueryAttention node (what ORT GenAI's model builder
  // emits) instead of plain MatMul/Softmax ops; see BuildDecoderGraph.
  bool group_query_attention = false;
};

// model_type values BuildDecoderGraph accepts.
std::vector<std::string> SupportedModelTypes();

// From a checkpoint imported by ImportSafetensors (no nodes, HF-named
// initializers, `architecture` from config.json), returns a model whose
// graph computes, with plain opset-17 ONNX ops:
//   embedding Gather -> N x [RMSNorm -> GQA attention with rotate-half RoPE
//   (positions 0..seq-1), causal mask, 1/sqrt(head_dim) -> residual ->
//   RMSNorm -> SwiGLU MLP -> residual] -> RMSNorm -> lm_head
// (the embedding matrix when tie_word_embeddings). Qwen2's q/k/v biases are
// used when present. Layers pruned to different widths take their sizes
// from config.json's per-layer lists (hf/layer_sizes.h). Linear layers are Gemm(x, W, b, transB=1) on the
// [out, in] HF weight, so each weight initializer is the checkpoint's
// tensor (same bytes; views stay views). Every node's provenance names the
// HF module it implements ("model.layers.3.self_attn.q_proj").
//
// Quantized weights (any weight with a QuantLayout, e.g. read back from an
// artifact) are used as stored: the weight, its scale and its zero point
// become initializers and the interpreter dequantizes the weight when it
// binds it (runtime/graph_plan.cc). A layout that disagrees with its
// scale / zero point is InvalidArgument naming the checkpoint and tensor.
// A weight with an input permutation `<weight>.input_perm` (i64 [in], an
// act-order checkpoint import: hf::kInputPermSuffix) is read through
// Gather(x, perm, axis=-1) on the linear's input; one that is not an i64
// [in] permutation of 0..in-1 is InvalidArgument naming it.
//
// Errors: FailedPrecondition if the model has no architecture (no
// config.json); Unimplemented naming the model_type and listing the
// supported ones; NotFound naming a missing weight and the checkpoint;
// InvalidArgument naming a size out of bounds or inconsistent with the
// weights (config_checks.h: CheckDecoderSizes), or a weight whose shape
// disagrees with the architecture, naming where the architecture was read
// (config.json, or an artifact's manifest.json);
// Unimplemented naming a weight whose dtype is not f32/f16/bf16 and that
// has no quant layout, or a
// config option the graph does not implement (see config_checks.h: rope
// scaling, non-silu activation, MLP/o_proj biases). A configured sliding
// window only adds a warning.
//
// With options.kv_cache the graph takes the cache as ONNX Runtime GenAI's
// decoders do: RoPE at position_ids (not 0..seq-1), each layer's roped K and
// its V appended to past along the sequence axis (present = concat(past,
// new), total_seq = past_seq + seq), and the queries at positions
// past_seq..total_seq-1 masked causally against the total_seq keys and by
// attention_mask (0 = padding: a key no real query attends; left padding
// takes position_ids counting real tokens, as GenAI feeds them). Logits are those of
// the seq new tokens only. Past and present are f32 whatever the weights.
absl::StatusOr<ir::Model> BuildDecoderGraph(const ir::Model& checkpoint,
                                            const DecoderGraphOptions& options = {});

}  // namespace slimpack::hf

#endif  // SLIMPACK_HF_LLAMA_GRAPH_BUILDER_H_
