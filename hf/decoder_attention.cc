// DecoderBuilder (decoder_builder.h): attention. The values every layer
// shares (positions, RoPE cos/sin, the causal and padding mask), RoPE, and
// attention as plain ONNX ops or as one com.microsoft.GroupQueryAttention.
#include <cmath>
#include <limits>

#include "hf/decoder_builder.h"
#include "support/portable_math.h"
#include "support/status_macros.h"

namespace slimpack::hf::decoder_internal {

using ir::Attribute;

// Shape-derived values shared by every layer: [B, S], RoPE cos/sin and the
// causal mask. Without a cache: cos/sin [S, D] at positions 0..S-1, mask
// [S, S] (0 on and below the diagonal, -inf above). With one: cos/sin
// [B, 1, S, D] at position_ids, mask [B, 1, S, T] (CausalCacheMask).
void DecoderBuilder::BuildPositionalValues() {
  const int64_t d = arch_.head_dim;
  e_.SetScope("model.rotary_emb");
  batch_seq_ = e_.Op("Shape", {kInputIds});
  const std::string seq_1d =
      e_.Op("Slice", {batch_seq_, e_.ConstI64("one", {1}, {1}), e_.ConstI64("two", {1}, {2})});
  std::string pos_col;  // positions with a trailing axis of 1
  if (kv_cache_) {
    const std::string pos = e_.Op("Cast", {kPositionIds}, {{"to", Attribute::Int(1)}});
    pos_col = e_.Op("Unsqueeze", {pos, e_.ConstI64("axis2", {1}, {2})});  // [B, S, 1]
  } else {
    const std::string seq = e_.Op("Squeeze", {seq_1d, e_.ConstI64("axis0", {1}, {0})});
    const std::string seq_f = e_.Op("Cast", {seq}, {{"to", Attribute::Int(1)}});  // FLOAT
    const std::string pos =
        e_.Op("Range", {e_.ConstF32("zero_f", {}, {0.f}), seq_f, e_.ConstF32("one_f", {}, {1.f})});
    pos_col = e_.Op("Unsqueeze", {pos, e_.ConstI64("axis1", {1}, {1})});  // [S, 1]
  }
  // inv_freq as HF computes it in f32, duplicated: emb = cat(freqs, freqs).
  std::vector<float> inv(d);
  for (int64_t i = 0; i < d / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
    inv[i] = inv[i + d / 2] = 1.0f / pmath::Pow(static_cast<float>(arch_.rope_theta), exponent);
  }
  const std::string freqs = e_.Op("Mul", {pos_col, e_.ConstF32("inv_freq", {d}, inv)});
  cos_ = e_.Op("Cos", {freqs});
  sin_ = e_.Op("Sin", {freqs});
  if (gqa_) {
    // [B, S, D] -> [B, S, 1, D]: Q and K are roped as [B, S, heads, D],
    // the layout GroupQueryAttention reads ([B, S, heads * D]).
    cos_ = e_.Op("Unsqueeze", {cos_, e_.ConstI64("axis2", {1}, {2})});
    sin_ = e_.Op("Unsqueeze", {sin_, e_.ConstI64("axis2", {1}, {2})});
    e_.SetScope("model.causal_mask");
    mask_ = CausalCacheMask(seq_1d);
    // Every row sees all T keys (seqlens_k = T - 1, total_sequence_length
    // = T): padding is masked by the same additive mask the plain graph
    // adds (GroupQueryAttention's attention_bias), so left-padded rows
    // work as they do there. (ORT GenAI's builder instead derives
    // seqlens_k from the mask's row sums, which assumes right padding.)
    e_.SetScope("model.attention_lengths");
    const std::string total_1d =
        e_.Op("Slice", {e_.Op("Shape", {kAttentionMask}), e_.ConstI64("one", {1}, {1}),
                        e_.ConstI64("two", {1}, {2})});
    const std::string batch_1d =
        e_.Op("Slice", {batch_seq_, e_.ConstI64("zero", {1}, {0}), e_.ConstI64("one", {1}, {1})});
    const std::string last = e_.Op("Sub", {total_1d, e_.ConstI64("one", {1}, {1})});
    seqlens_k_ =
        e_.Op("Cast", {e_.Op("Expand", {last, batch_1d})}, {{"to", Attribute::Int(6)}});  // INT32
    total_len_ = e_.Op("Cast", {total_1d}, {{"to", Attribute::Int(6)}});
    return;
  }
  if (kv_cache_) {
    // [B, S, D] -> [B, 1, S, D]: one row of angles per batch row, shared by the heads.
    cos_ = e_.Op("Unsqueeze", {cos_, e_.ConstI64("axis1", {1}, {1})});
    sin_ = e_.Op("Unsqueeze", {sin_, e_.ConstI64("axis1", {1}, {1})});
    e_.SetScope("model.causal_mask");
    mask_ = CausalCacheMask(seq_1d);
    return;
  }
  e_.SetScope("model.causal_mask");
  const std::string ss = e_.Op("Concat", {seq_1d, seq_1d}, {{"axis", Attribute::Int(0)}});
  const std::string full = NegInfOfShape(ss);
  mask_ = e_.Op("Trilu", {full, e_.ConstI64("k_one", {}, {1})}, {{"upper", Attribute::Int(1)}});
}

// A float tensor of `shape` (a 1-d i64 value) filled with -inf: the
// masks' starting point.
std::string DecoderBuilder::NegInfOfShape(const std::string& shape) {
  ir::Tensor fill;
  fill.name = "value";
  fill.dtype = ir::DType::kF32;
  fill.dims = {1};
  const float ninf = -std::numeric_limits<float>::infinity();
  fill.data = ir::TensorData::Owned(std::vector<uint8_t>(
      reinterpret_cast<const uint8_t*>(&ninf), reinterpret_cast<const uint8_t*>(&ninf + 1)));
  return e_.Op("ConstantOfShape", {shape}, {{"value", Attribute::TensorValue(std::move(fill))}});
}

// The additive mask [B, 1, S, T] of S new queries at positions
// P..T-1 (P = T - S past tokens) over T keys: -inf where key j is in the
// query's future (j > P + i: Trilu upper from diagonal P + 1), the lowest
// float where attention_mask[b, j] is 0, else 0. T is attention_mask's
// length, as in ONNX Runtime GenAI.
std::string DecoderBuilder::CausalCacheMask(const std::string& seq_1d) {
  const std::string total_1d =
      e_.Op("Slice", {e_.Op("Shape", {kAttentionMask}), e_.ConstI64("one", {1}, {1}),
                      e_.ConstI64("two", {1}, {2})});
  const std::string st = e_.Op("Concat", {seq_1d, total_1d}, {{"axis", Attribute::Int(0)}});
  const std::string full = NegInfOfShape(st);
  const std::string past_plus_one =
      e_.Op("Add", {e_.Op("Sub", {total_1d, seq_1d}), e_.ConstI64("one", {1}, {1})});
  const std::string k = e_.Op("Squeeze", {past_plus_one, e_.ConstI64("axis0", {1}, {0})});
  const std::string causal = e_.Op("Trilu", {full, k}, {{"upper", Attribute::Int(1)}});
  // Padding takes the lowest finite float, as HF's masks do, not -inf: a
  // padded query (all its keys padding) then gets finite scores instead
  // of a NaN row that would reach the real rows through the next layer.
  const std::string keep = e_.Op("Cast", {kAttentionMask}, {{"to", Attribute::Int(9)}});  // BOOL
  const std::string pad = e_.Op(
      "Where", {keep, e_.ConstF32("zero_f", {}, {0.f}),
                e_.ConstF32("lowest_f", {}, {std::numeric_limits<float>::lowest()})});  // [B, T]
  const std::string pad4 = e_.Op("Unsqueeze", {pad, e_.ConstI64("axes12", {2}, {1, 2})});
  return e_.Op("Add", {causal, pad4});
}

// t [B, heads, S, D] -> t*cos + rotate_half(t)*sin, rotate_half(t) =
// cat(-t[..., D/2:], t[..., :D/2]).
std::string DecoderBuilder::Rope(const std::string& t) {
  const int64_t d = arch_.head_dim;
  const std::string axes = e_.ConstI64("last_axis", {1}, {-1});
  const std::string lo = e_.Op(
      "Slice", {t, e_.ConstI64("zero", {1}, {0}), e_.ConstI64("half_dim", {1}, {d / 2}), axes});
  const std::string hi = e_.Op(
      "Slice", {t, e_.ConstI64("half_dim", {1}, {d / 2}), e_.ConstI64("head_dim", {1}, {d}), axes});
  const std::string rot = e_.Op("Concat", {e_.Op("Neg", {hi}), lo}, {{"axis", Attribute::Int(-1)}});
  return e_.Op("Add", {e_.Op("Mul", {t, cos_}), e_.Op("Mul", {rot, sin_})});
}

// [T, heads*D] -> [B, heads, S, D].
std::string DecoderBuilder::SplitHeads(const std::string& t, int64_t heads) {
  const std::string shape =
      e_.Op("Concat",
            {batch_seq_,
             e_.ConstI64("heads_" + std::to_string(heads) + "_dim", {2}, {heads, arch_.head_dim})},
            {{"axis", Attribute::Int(0)}});
  return e_.Op("Transpose", {e_.Op("Reshape", {t, shape})},
               {{"perm", Attribute::Ints({0, 2, 1, 3})}});
}

// Constant name `base`, suffixed with the head counts when a pruned layer
// differs from config.json's single values (constants are shared by name).
std::string DecoderBuilder::Keyed(const std::string& base, int64_t nh, int64_t nkv) const {
  if (nh == arch_.num_heads && nkv == arch_.num_kv_heads) return base;
  return base + "_h" + std::to_string(nh) + "_kv" + std::to_string(nkv);
}

// With a cache, K and V [B, KV, S, D] are appended to the layer's past
// (present = Concat(past, new) on the sequence axis) and attention runs
// over the T = past + S keys; the shapes below hold with S or T keys.
absl::StatusOr<std::string> DecoderBuilder::Attention(int64_t layer, const std::string& p,
                                                      const std::string& h,
                                                      const LayerSizes& sizes) {
  const int64_t hid = arch_.hidden_size, d = arch_.head_dim;
  const int64_t nh = sizes.num_heads, nkv = sizes.num_kv_heads;
  const bool qwen2 = arch_.model_type == "qwen2";
  auto has_bias = [&](const char* m) {
    return qwen2 || ckpt_.graph.FindInitializer(p + m + ".bias") != nullptr;
  };
  if (gqa_) return GroupQueryAttention(layer, p, h, sizes);
  ASSIGN_OR_RETURN(std::string q, Linear(p + "q_proj", h, nh * d, hid, has_bias("q_proj")));
  q = Rope(SplitHeads(q, nh));
  ASSIGN_OR_RETURN(std::string k, Linear(p + "k_proj", h, nkv * d, hid, has_bias("k_proj")));
  k = Rope(SplitHeads(k, nkv));
  ASSIGN_OR_RETURN(std::string v, Linear(p + "v_proj", h, nkv * d, hid, has_bias("v_proj")));
  v = SplitHeads(v, nkv);
  e_.SetScope(p.substr(0, p.size() - 1));
  if (kv_cache_) {
    k = e_.Op("Concat", {PastName(layer, true), k}, {{"axis", Attribute::Int(2)}});
    k = e_.NameLastOutput(PresentName(layer, true));
    v = e_.Op("Concat", {PastName(layer, false), v}, {{"axis", Attribute::Int(2)}});
    v = e_.NameLastOutput(PresentName(layer, false));
  }
  const std::string grouped = e_.ConstI64(Keyed("kv_groups", nh, nkv), {4}, {0, nkv, -1, d});
  const std::string by_head = e_.ConstI64(Keyed("heads_rows", nh, nkv), {4}, {0, nh, -1, 0});
  const std::string kv_rows = e_.ConstI64(Keyed("kv_rows", nh, nkv), {4}, {0, nkv, -1, 0});
  const std::string kt = e_.Op("Transpose", {k}, {{"perm", Attribute::Ints({0, 1, 3, 2})}});
  std::string s = e_.Op("MatMul", {e_.Op("Reshape", {q, grouped}), kt});
  s = e_.Op("Div", {s, e_.ConstF32("sqrt_head_dim", {},
                                   {static_cast<float>(std::sqrt(static_cast<double>(d)))})});
  s = e_.Op("Add", {e_.Op("Reshape", {s, by_head}), mask_});
  s = e_.Op("Softmax", {s}, {{"axis", Attribute::Int(-1)}});
  std::string o = e_.Op("MatMul", {e_.Op("Reshape", {s, kv_rows}), v});
  o = e_.Op("Reshape", {o, e_.ConstI64(Keyed("heads_dim", nh, nkv), {4}, {0, nh, -1, d})});
  o = e_.Op("Transpose", {o}, {{"perm", Attribute::Ints({0, 2, 1, 3})}});
  o = e_.Op("Reshape", {o, e_.ConstI64(Keyed("rows_by_qdim", nh, nkv), {2}, {-1, nh * d})});
  return Linear(p + "o_proj", o, hid, nh * d, false);
}

// [T, heads*D] -> [B, S, heads, D].
std::string DecoderBuilder::SplitHeadsBshd(const std::string& t, int64_t heads) {
  const std::string shape =
      e_.Op("Concat",
            {batch_seq_,
             e_.ConstI64("heads_" + std::to_string(heads) + "_dim", {2}, {heads, arch_.head_dim})},
            {{"axis", Attribute::Int(0)}});
  return e_.Op("Reshape", {t, shape});
}

// The same attention as one com.microsoft.GroupQueryAttention node: Q and
// K roped here (at position_ids, as the plain graph does) and passed as
// [B, S, heads * D] with V; the node appends K and V to past (present =
// past + new along the sequence axis, no shared buffer), attends causally
// over all T keys and adds the plain graph's [B, 1, S, T] mask as its
// attention_bias (input 10), which ONNX Runtime's CPU kernel reads.
absl::StatusOr<std::string> DecoderBuilder::GroupQueryAttention(int64_t layer, const std::string& p,
                                                                const std::string& h,
                                                                const LayerSizes& sizes) {
  const int64_t hid = arch_.hidden_size, d = arch_.head_dim;
  const int64_t nh = sizes.num_heads, nkv = sizes.num_kv_heads;
  const bool qwen2 = arch_.model_type == "qwen2";
  auto has_bias = [&](const char* m) {
    return qwen2 || ckpt_.graph.FindInitializer(p + m + ".bias") != nullptr;
  };
  auto flat = [&](int64_t heads) {
    return e_.ConstI64("bs_by_" + std::to_string(heads * d), {3}, {0, 0, heads * d});
  };
  ASSIGN_OR_RETURN(std::string q, Linear(p + "q_proj", h, nh * d, hid, has_bias("q_proj")));
  q = e_.Op("Reshape", {Rope(SplitHeadsBshd(q, nh)), flat(nh)});
  ASSIGN_OR_RETURN(std::string k, Linear(p + "k_proj", h, nkv * d, hid, has_bias("k_proj")));
  k = e_.Op("Reshape", {Rope(SplitHeadsBshd(k, nkv)), flat(nkv)});
  ASSIGN_OR_RETURN(std::string v, Linear(p + "v_proj", h, nkv * d, hid, has_bias("v_proj")));
  v = e_.Op(
      "Reshape",
      {v, e_.Op("Concat",
                {batch_seq_, e_.ConstI64("kv_dim_" + std::to_string(nkv * d), {1}, {nkv * d})},
                {{"axis", Attribute::Int(0)}})});
  e_.SetScope(p.substr(0, p.size() - 1));
  std::vector<std::string> outs = e_.MultiOp(
      "GroupQueryAttention", "com.microsoft",
      {q, k, v, PastName(layer, true), PastName(layer, false), seqlens_k_, total_len_,
       /*cos_cache*/ "", /*sin_cache*/ "", /*position_ids*/ "", /*attention_bias*/ mask_},
      3,
      {{"num_heads", Attribute::Int(nh)},
       {"kv_num_heads", Attribute::Int(nkv)},
       {"scale", Attribute::Float(static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))))}});
  g_.nodes.back().outputs[1] = PresentName(layer, true);
  g_.nodes.back().outputs[2] = PresentName(layer, false);
  const std::string o =
      e_.Op("Reshape", {outs[0], e_.ConstI64(Keyed("rows_by_qdim", nh, nkv), {2}, {-1, nh * d})});
  return Linear(p + "o_proj", o, hid, nh * d, false);
}

}  // namespace slimpack::hf::decoder_internal
