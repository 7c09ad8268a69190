// The decoder graph, written to match HF transformers' modeling_llama /
// modeling_qwen2 in FP32. Shapes: the residual stream is kept as a 2-D
// [T = batch*seq, hidden] matrix so every linear layer is one Gemm with
// transB=1 on the untouched [out, in] weight (no transposed copy, and one
// BLAS call per projection). Only attention reshapes to 4-D.
//
// Grouped-query attention without repeating K/V: query heads h = j*rep + r
// share KV head j (HF repeat_kv), so Q [B, H, S, D] viewed as
// [B, KV, rep*S, D] is contiguous and one batched MatMul against K^T
// [B, KV, D, S] gives all scores. The mask add and softmax happen on the
// [B, H, S, S] view of the same buffer.
#include "hf/llama_graph_builder.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/quant.h"
#include "hf/config_checks.h"
#include "hf/graph_emitter.h"
#include "hf/input_perm.h"
#include "hf/layer_sizes.h"
#include "hf/weight_roles.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::hf {
namespace {

using ir::Attribute;

constexpr int64_t kOpset = 17;

class DecoderBuilder {
 public:
  DecoderBuilder(const ir::Model& checkpoint, const DecoderGraphOptions& options, ir::Model& out)
      : ckpt_(checkpoint),
        arch_(*checkpoint.architecture),
        kv_cache_(options.kv_cache),
        gqa_(options.kv_cache && options.group_query_attention),
        g_(out.graph),
        e_(out.graph) {}

  absl::Status Build() {
    ASSIGN_OR_RETURN(sizes_, ReadLayerSizes(arch_, ckpt_.source_path));
    const int64_t hidden = arch_.hidden_size, vocab = arch_.vocab_size;
    g_.name = arch_.model_type + "_decoder";
    g_.inputs.push_back({kInputIds, ir::DType::kI64,
                         ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq")})});
    g_.outputs.push_back({kLogits, ir::DType::kF32,
                          ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq"),
                                     ir::Dim::Static(vocab)})});
    if (kv_cache_) AddCacheInputsAndOutputs();
    e_.SetScope("model.embed_tokens");
    ASSIGN_OR_RETURN(std::string embed, Weight("model.embed_tokens.weight", {vocab, hidden}));
    BuildPositionalValues();
    e_.SetScope("model.embed_tokens");
    std::string x = e_.Op("Gather", {embed, kInputIds});
    x = e_.Op("Reshape", {x, e_.ConstI64("rows_by_hidden", {2}, {-1, hidden})});
    for (int64_t l = 0; l < arch_.num_layers; ++l) {
      ASSIGN_OR_RETURN(x, Layer(l, x));
    }
    e_.SetScope("model.norm");
    ASSIGN_OR_RETURN(x, RmsNorm(x, "model.norm.weight"));
    e_.SetScope("lm_head");
    std::string head_name = "lm_head.weight";
    if (arch_.tie_word_embeddings && ckpt_.graph.FindInitializer(head_name) == nullptr) {
      head_name = "model.embed_tokens.weight";
    }
    ASSIGN_OR_RETURN(std::string head, Weight(head_name, {vocab, hidden}));
    x = e_.Op("Gemm", {x, head}, {{"transB", Attribute::Int(1)}});
    e_.Op("Reshape", {x, e_.Op("Concat", {batch_seq_, e_.ConstI64("vocab", {1}, {vocab})},
                                 {{"axis", Attribute::Int(0)}})});
    e_.NameLastOutput(kLogits);
    return e_.status();
  }

 private:
  // Graph inputs attention_mask, position_ids and past_key_values.*, and
  // outputs present.* (produced by Attention's Concat).
  void AddCacheInputsAndOutputs() {
    const ir::Dim batch = ir::Dim::Symbolic("batch");
    g_.inputs.push_back({kAttentionMask, ir::DType::kI64,
                         ir::Shape({batch, ir::Dim::Symbolic("total_seq")})});
    g_.inputs.push_back({kPositionIds, ir::DType::kI64,
                         ir::Shape({batch, ir::Dim::Symbolic("seq")})});
    for (int64_t l = 0; l < arch_.num_layers; ++l) {
      const ir::Dim kv = ir::Dim::Static(sizes_[l].num_kv_heads);
      const ir::Dim d = ir::Dim::Static(arch_.head_dim);
      for (bool key : {true, false}) {
        g_.inputs.push_back({PastName(l, key), ir::DType::kF32,
                             ir::Shape({batch, kv, ir::Dim::Symbolic("past_seq"), d})});
        g_.outputs.push_back({PresentName(l, key), ir::DType::kF32,
                              ir::Shape({batch, kv, ir::Dim::Symbolic("total_seq"), d})});
      }
    }
  }

  // Shape-derived values shared by every layer: [B, S], RoPE cos/sin and the
  // causal mask. Without a cache: cos/sin [S, D] at positions 0..S-1, mask
  // [S, S] (0 on and below the diagonal, -inf above). With one: cos/sin
  // [B, 1, S, D] at position_ids, mask [B, 1, S, T] (CausalCacheMask).
  void BuildPositionalValues() {
    const int64_t d = arch_.head_dim;
    e_.SetScope("model.rotary_emb");
    batch_seq_ = e_.Op("Shape", {kInputIds});
    const std::string seq_1d = e_.Op(
        "Slice", {batch_seq_, e_.ConstI64("one", {1}, {1}), e_.ConstI64("two", {1}, {2})});
    std::string pos_col;  // positions with a trailing axis of 1
    if (kv_cache_) {
      const std::string pos = e_.Op("Cast", {kPositionIds}, {{"to", Attribute::Int(1)}});
      pos_col = e_.Op("Unsqueeze", {pos, e_.ConstI64("axis2", {1}, {2})});  // [B, S, 1]
    } else {
      const std::string seq = e_.Op("Squeeze", {seq_1d, e_.ConstI64("axis0", {1}, {0})});
      const std::string seq_f = e_.Op("Cast", {seq}, {{"to", Attribute::Int(1)}});  // FLOAT
      const std::string pos = e_.Op(
          "Range", {e_.ConstF32("zero_f", {}, {0.f}), seq_f, e_.ConstF32("one_f", {}, {1.f})});
      pos_col = e_.Op("Unsqueeze", {pos, e_.ConstI64("axis1", {1}, {1})});  // [S, 1]
    }
    // inv_freq as HF computes it in f32, duplicated: emb = cat(freqs, freqs).
    std::vector<float> inv(d);
    for (int64_t i = 0; i < d / 2; ++i) {
      const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
      inv[i] = inv[i + d / 2] =
          1.0f / pmath::Pow(static_cast<float>(arch_.rope_theta), exponent);
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
      const std::string batch_1d = e_.Op(
          "Slice", {batch_seq_, e_.ConstI64("zero", {1}, {0}), e_.ConstI64("one", {1}, {1})});
      const std::string last = e_.Op("Sub", {total_1d, e_.ConstI64("one", {1}, {1})});
      seqlens_k_ = e_.Op("Cast", {e_.Op("Expand", {last, batch_1d})},
                         {{"to", Attribute::Int(6)}});  // INT32
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
    ir::Tensor neg_inf;
    neg_inf.name = "value";
    neg_inf.dtype = ir::DType::kF32;
    neg_inf.dims = {1};
    const float ninf = -std::numeric_limits<float>::infinity();
    neg_inf.data = ir::TensorData::Owned(std::vector<uint8_t>(
        reinterpret_cast<const uint8_t*>(&ninf), reinterpret_cast<const uint8_t*>(&ninf + 1)));
    const std::string full = e_.Op("ConstantOfShape", {ss},
                                   {{"value", Attribute::TensorValue(std::move(neg_inf))}});
    mask_ = e_.Op("Trilu", {full, e_.ConstI64("k_one", {}, {1})}, {{"upper", Attribute::Int(1)}});
  }

  // The additive mask [B, 1, S, T] of S new queries at positions
  // P..T-1 (P = T - S past tokens) over T keys: -inf where key j is in the
  // query's future (j > P + i: Trilu upper from diagonal P + 1), the lowest
  // float where attention_mask[b, j] is 0, else 0. T is attention_mask's
  // length, as in ONNX Runtime GenAI.
  std::string CausalCacheMask(const std::string& seq_1d) {
    const std::string total_1d =
        e_.Op("Slice", {e_.Op("Shape", {kAttentionMask}), e_.ConstI64("one", {1}, {1}),
                        e_.ConstI64("two", {1}, {2})});
    const std::string st = e_.Op("Concat", {seq_1d, total_1d}, {{"axis", Attribute::Int(0)}});
    ir::Tensor fill;
    fill.name = "value";
    fill.dtype = ir::DType::kF32;
    fill.dims = {1};
    const float ninf = -std::numeric_limits<float>::infinity();
    fill.data = ir::TensorData::Owned(std::vector<uint8_t>(
        reinterpret_cast<const uint8_t*>(&ninf), reinterpret_cast<const uint8_t*>(&ninf + 1)));
    const std::string full =
        e_.Op("ConstantOfShape", {st}, {{"value", Attribute::TensorValue(std::move(fill))}});
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

  absl::StatusOr<std::string> Layer(int64_t l, const std::string& x) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    e_.SetScope(p + "input_layernorm");
    ASSIGN_OR_RETURN(std::string h, RmsNorm(x, p + "input_layernorm.weight"));
    ASSIGN_OR_RETURN(std::string attn, Attention(l, p + "self_attn.", h, sizes_[l]));
    e_.SetScope(p + "self_attn");
    const std::string x1 = e_.Op("Add", {x, attn});
    e_.SetScope(p + "post_attention_layernorm");
    ASSIGN_OR_RETURN(h, RmsNorm(x1, p + "post_attention_layernorm.weight"));
    ASSIGN_OR_RETURN(std::string mlp, Mlp(p + "mlp.", h, sizes_[l].intermediate_size));
    e_.SetScope(p + "mlp");
    return e_.Op("Add", {x1, mlp});
  }

  // weight * (x * 1/sqrt(mean(x^2) + eps)), all f32 like HF's LlamaRMSNorm.
  absl::StatusOr<std::string> RmsNorm(const std::string& x, const std::string& weight_name) {
    ASSIGN_OR_RETURN(std::string w, Weight(weight_name, {arch_.hidden_size}));
    const std::string ms = e_.Op("ReduceMean", {e_.Op("Mul", {x, x})},
                                 {{"axes", Attribute::Ints({-1})}, {"keepdims", Attribute::Int(1)}});
    const std::string var = e_.Op("Add", {ms, e_.ConstF32("rms_eps", {}, {static_cast<float>(arch_.norm_eps)})});
    const std::string inv = e_.Op("Reciprocal", {e_.Op("Sqrt", {var})});
    return e_.Op("Mul", {w, e_.Op("Mul", {x, inv})});
  }

  // x [T, in] -> [T, out] with the HF [out, in] weight and optional bias.
  absl::StatusOr<std::string> Linear(const std::string& module, const std::string& x,
                                     int64_t out, int64_t in, bool bias) {
    e_.SetScope(module);
    ASSIGN_OR_RETURN(std::string w, Weight(module + ".weight", {out, in}));
    ASSIGN_OR_RETURN(std::string perm, InputPerm(module + ".weight", in));
    // An act-order import stores the weight's input rows permuted
    // (W'[:, j] = W[:, perm[j]]): the input is permuted the same way, so
    // x' W'^T = x W^T.
    const std::string xin =
        perm.empty() ? x : e_.Op("Gather", {x, perm}, {{"axis", Attribute::Int(-1)}});
    std::vector<std::string> inputs = {xin, w};
    if (bias) {
      ASSIGN_OR_RETURN(std::string b, Weight(module + ".bias", {out}));
      inputs.push_back(b);
    }
    return e_.Op("Gemm", inputs, {{"transB", Attribute::Int(1)}});
  }

  // t [B, heads, S, D] -> t*cos + rotate_half(t)*sin, rotate_half(t) =
  // cat(-t[..., D/2:], t[..., :D/2]).
  std::string Rope(const std::string& t) {
    const int64_t d = arch_.head_dim;
    const std::string axes = e_.ConstI64("last_axis", {1}, {-1});
    const std::string lo = e_.Op("Slice", {t, e_.ConstI64("zero", {1}, {0}),
                                           e_.ConstI64("half_dim", {1}, {d / 2}), axes});
    const std::string hi = e_.Op("Slice", {t, e_.ConstI64("half_dim", {1}, {d / 2}),
                                           e_.ConstI64("head_dim", {1}, {d}), axes});
    const std::string rot = e_.Op("Concat", {e_.Op("Neg", {hi}), lo}, {{"axis", Attribute::Int(-1)}});
    return e_.Op("Add", {e_.Op("Mul", {t, cos_}), e_.Op("Mul", {rot, sin_})});
  }

  // [T, heads*D] -> [B, heads, S, D].
  std::string SplitHeads(const std::string& t, int64_t heads) {
    const std::string shape = e_.Op(
        "Concat", {batch_seq_, e_.ConstI64("heads_" + std::to_string(heads) + "_dim",
                                           {2}, {heads, arch_.head_dim})},
        {{"axis", Attribute::Int(0)}});
    return e_.Op("Transpose", {e_.Op("Reshape", {t, shape})},
                 {{"perm", Attribute::Ints({0, 2, 1, 3})}});
  }

  // Constant name `base`, suffixed with the head counts when a pruned layer
  // differs from config.json's single values (constants are shared by name).
  std::string Keyed(const std::string& base, int64_t nh, int64_t nkv) const {
    if (nh == arch_.num_heads && nkv == arch_.num_kv_heads) return base;
    return base + "_h" + std::to_string(nh) + "_kv" + std::to_string(nkv);
  }

  // With a cache, K and V [B, KV, S, D] are appended to the layer's past
  // (present = Concat(past, new) on the sequence axis) and attention runs
  // over the T = past + S keys; the shapes below hold with S or T keys.
  absl::StatusOr<std::string> Attention(int64_t layer, const std::string& p,
                                        const std::string& h, const LayerSizes& sizes) {
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
    s = e_.Op("Div", {s, e_.ConstF32("sqrt_head_dim", {}, {static_cast<float>(std::sqrt(static_cast<double>(d)))})});
    s = e_.Op("Add", {e_.Op("Reshape", {s, by_head}), mask_});
    s = e_.Op("Softmax", {s}, {{"axis", Attribute::Int(-1)}});
    std::string o = e_.Op("MatMul", {e_.Op("Reshape", {s, kv_rows}), v});
    o = e_.Op("Reshape", {o, e_.ConstI64(Keyed("heads_dim", nh, nkv), {4}, {0, nh, -1, d})});
    o = e_.Op("Transpose", {o}, {{"perm", Attribute::Ints({0, 2, 1, 3})}});
    o = e_.Op("Reshape", {o, e_.ConstI64(Keyed("rows_by_qdim", nh, nkv), {2}, {-1, nh * d})});
    return Linear(p + "o_proj", o, hid, nh * d, false);
  }

  // [T, heads*D] -> [B, S, heads, D].
  std::string SplitHeadsBshd(const std::string& t, int64_t heads) {
    const std::string shape = e_.Op(
        "Concat", {batch_seq_, e_.ConstI64("heads_" + std::to_string(heads) + "_dim",
                                           {2}, {heads, arch_.head_dim})},
        {{"axis", Attribute::Int(0)}});
    return e_.Op("Reshape", {t, shape});
  }

  // The same attention as one com.microsoft.GroupQueryAttention node: Q and
  // K roped here (at position_ids, as the plain graph does) and passed as
  // [B, S, heads * D] with V; the node appends K and V to past (present =
  // past + new along the sequence axis, no shared buffer), attends causally
  // over all T keys and adds the plain graph's [B, 1, S, T] mask as its
  // attention_bias (input 10), which ONNX Runtime's CPU kernel reads.
  absl::StatusOr<std::string> GroupQueryAttention(int64_t layer, const std::string& p,
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
    v = e_.Op("Reshape", {v, e_.Op("Concat", {batch_seq_, e_.ConstI64(
                                                  "kv_dim_" + std::to_string(nkv * d), {1},
                                                  {nkv * d})},
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
    const std::string o = e_.Op(
        "Reshape", {outs[0], e_.ConstI64(Keyed("rows_by_qdim", nh, nkv), {2}, {-1, nh * d})});
    return Linear(p + "o_proj", o, hid, nh * d, false);
  }

  // down(silu(gate(x)) * up(x)).
  absl::StatusOr<std::string> Mlp(const std::string& p, const std::string& h, int64_t inter) {
    const int64_t hid = arch_.hidden_size;
    ASSIGN_OR_RETURN(std::string gate, Linear(p + "gate_proj", h, inter, hid, false));
    const std::string silu = e_.Op("Mul", {gate, e_.Op("Sigmoid", {gate})});
    ASSIGN_OR_RETURN(std::string up, Linear(p + "up_proj", h, inter, hid, false));
    const std::string act = e_.Op("Mul", {silu, up});
    return Linear(p + "down_proj", act, hid, inter, false);
  }

  // Adds the checkpoint tensor `name` (same bytes) after checking it.
  absl::StatusOr<std::string> Weight(const std::string& name, const std::vector<int64_t>& dims) {
    if (g_.FindInitializer(name) != nullptr) return name;
    const ir::Tensor* t = ckpt_.graph.FindInitializer(name);
    if (t == nullptr) {
      return absl::NotFoundError(ckpt_.source_path + ": " + arch_.model_type +
                                 " checkpoint lacks weight '" + name + "'");
    }
    if (t->dims != dims) {
      return absl::InvalidArgumentError(
          ckpt_.source_path + ": weight '" + name + "' has shape " +
          ir::Shape::FromDims(t->dims).ToString() + ", " + ArchitectureSourceLabel(arch_) +
          " implies " + ir::Shape::FromDims(dims).ToString());
    }
    if (t->quant.quantized()) return QuantizedWeight(*t);
    if (t->dtype != ir::DType::kF32 && t->dtype != ir::DType::kF16 &&
        t->dtype != ir::DType::kBF16) {
      return absl::UnimplementedError(ckpt_.source_path + ": weight '" + name + "' has dtype " +
                                      std::string(ir::DTypeName(t->dtype)) +
                                      " (supported: f32, f16, bf16, or i8/u8/i4/u4 with a "
                                      "quant layout)");
    }
    RETURN_IF_ERROR(g_.AddInitializer(*t));
    return name;
  }

  // The weight's `<weight>.input_perm` (hf::kInputPermSuffix), checked to
  // be an i64 [in] permutation of 0..in-1, or "" when there is none.
  absl::StatusOr<std::string> InputPerm(const std::string& weight, int64_t in) {
    const std::string name = weight + kInputPermSuffix;
    if (g_.FindInitializer(name) != nullptr) return name;
    ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                     ReadInputPermutation(ckpt_.graph, weight, in, ckpt_.source_path));
    if (perm.empty()) return std::string();
    RETURN_IF_ERROR(g_.AddInitializer(*ckpt_.graph.FindInitializer(name)));
    return name;
  }

  // A quantized weight goes into the graph as it is stored, with its scale
  // and zero point beside it; the interpreter dequantizes it when it binds
  // initializers, so the nodes are those of the float graph.
  absl::StatusOr<std::string> QuantizedWeight(const ir::Tensor& t) {
    const ir::Tensor* scale = ckpt_.graph.FindInitializer(t.quant.scale);
    const ir::Tensor* zp = t.quant.zero_point.empty()
                               ? nullptr
                               : ckpt_.graph.FindInitializer(t.quant.zero_point);
    absl::Status s = ir::ValidateQuantLayout(t, scale, zp);
    if (!s.ok()) return Annotate(s, ckpt_.source_path);
    RETURN_IF_ERROR(g_.AddInitializer(t));
    for (const ir::Tensor* aux : {scale, zp}) {
      if (aux != nullptr && g_.FindInitializer(aux->name) == nullptr) {
        RETURN_IF_ERROR(g_.AddInitializer(*aux));
      }
    }
    return t.name;
  }

  const ir::Model& ckpt_;
  const ir::ArchitectureInfo& arch_;
  const bool kv_cache_;
  const bool gqa_;  // GroupQueryAttention nodes (needs kv_cache_)
  ir::Graph& g_;
  GraphEmitter e_;
  std::string batch_seq_, cos_, sin_, mask_;
  std::string seqlens_k_, total_len_;  // GroupQueryAttention's i32 lengths
  std::vector<LayerSizes> sizes_;  // per layer (pruned checkpoints differ)
};

absl::Status CheckArchitecture(const ir::Model& m) {
  if (!m.architecture) {
    return absl::FailedPreconditionError(
        m.source_path + ": no architecture (config.json) to build a decoder graph from");
  }
  const ir::ArchitectureInfo& a = *m.architecture;
  bool supported = false;
  std::string list;
  for (const std::string& t : SupportedModelTypes()) {
    supported |= t == a.model_type;
    list += (list.empty() ? "" : ", ") + t;
  }
  if (!supported) {
    return absl::UnimplementedError(m.source_path + ": model_type '" + a.model_type +
                                    "' has no graph builder (supported: " + list + ")");
  }
  // Before anything is sized from them: an artifact's manifest can hold
  // any number (head_dim 2^40 used to end in std::bad_alloc).
  return CheckDecoderSizes(m);
}

}  // namespace

std::vector<std::string> SupportedModelTypes() { return {"llama", "mistral", "qwen2"}; }

std::string PastName(int64_t layer, bool key) {
  return "past_key_values." + std::to_string(layer) + (key ? ".key" : ".value");
}

std::string PresentName(int64_t layer, bool key) {
  return "present." + std::to_string(layer) + (key ? ".key" : ".value");
}

absl::StatusOr<ir::Model> BuildDecoderGraph(const ir::Model& checkpoint,
                                            const DecoderGraphOptions& options) {
  RETURN_IF_ERROR(CheckArchitecture(checkpoint));
  if (options.group_query_attention) {
    if (!options.kv_cache) {
      return absl::InvalidArgumentError(
          "GroupQueryAttention is the KV-cache decoder's attention: it needs the cache inputs");
    }
    // ONNX Runtime's kernel refuses other head sizes at run time.
    if (checkpoint.architecture->head_dim % 8 != 0) {
      return absl::UnimplementedError(
          checkpoint.source_path + ": head_dim " +
          std::to_string(checkpoint.architecture->head_dim) + " (" +
          ArchitectureSourceLabel(*checkpoint.architecture) +
          ") is not a multiple of 8, which ONNX Runtime's GroupQueryAttention requires");
    }
  }
  ir::Model out;
  out.source_format = checkpoint.source_format;
  out.source_path = checkpoint.source_path;
  out.ir_version = 8;
  out.opset_imports[""] = kOpset;
  out.producer_name = "slimpack";
  out.architecture = checkpoint.architecture;
  out.input_files = checkpoint.input_files;
  out.carried_files = checkpoint.carried_files;
  out.carried_overrides = checkpoint.carried_overrides;
  out.metadata_props = checkpoint.metadata_props;
  out.warnings = checkpoint.warnings;
  RETURN_IF_ERROR(CheckUnsupportedOptions(checkpoint, out.warnings));
  DecoderBuilder builder(checkpoint, options, out);
  RETURN_IF_ERROR(builder.Build());
  if (options.group_query_attention) out.opset_imports["com.microsoft"] = 1;
  size_t unused = 0;
  std::string example;
  for (const ir::Tensor& t : checkpoint.graph.initializers()) {
    if (out.graph.FindInitializer(t.name) == nullptr) {
      if (unused++ == 0) example = t.name;
    }
  }
  if (unused > 0) {
    out.warnings.push_back(std::to_string(unused) +
                           " checkpoint tensor(s) not used by the decoder graph, e.g. '" +
                           example + "'");
  }
  return out;
}

}  // namespace slimpack::hf
