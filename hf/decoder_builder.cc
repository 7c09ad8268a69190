// DecoderBuilder (decoder_builder.h): the graph's inputs and outputs, the
// layers' skeleton, RMSNorm, linear layers, the MLP and the checkpoint's
// weights as initializers.
#include "hf/decoder_builder.h"

#include "hf/config_checks.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "ir/quant.h"
#include "support/status_macros.h"

namespace slimpack::hf::decoder_internal {

using ir::Attribute;

absl::Status DecoderBuilder::Build() {
  ASSIGN_OR_RETURN(sizes_, ReadLayerSizes(arch_, ckpt_.source_path));
  const int64_t hidden = arch_.hidden_size, vocab = arch_.vocab_size;
  g_.name = arch_.model_type + "_decoder";
  g_.inputs.push_back({kInputIds, ir::DType::kI64,
                       ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq")})});
  g_.outputs.push_back(
      {kLogits, ir::DType::kF32,
       ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq"), ir::Dim::Static(vocab)})});
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

// Graph inputs attention_mask, position_ids and past_key_values.*, and
// outputs present.* (produced by Attention's Concat).
void DecoderBuilder::AddCacheInputsAndOutputs() {
  const ir::Dim batch = ir::Dim::Symbolic("batch");
  g_.inputs.push_back(
      {kAttentionMask, ir::DType::kI64, ir::Shape({batch, ir::Dim::Symbolic("total_seq")})});
  g_.inputs.push_back(
      {kPositionIds, ir::DType::kI64, ir::Shape({batch, ir::Dim::Symbolic("seq")})});
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

absl::StatusOr<std::string> DecoderBuilder::Layer(int64_t l, const std::string& x) {
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
absl::StatusOr<std::string> DecoderBuilder::RmsNorm(const std::string& x,
                                                    const std::string& weight_name) {
  ASSIGN_OR_RETURN(std::string w, Weight(weight_name, {arch_.hidden_size}));
  const std::string ms = e_.Op("ReduceMean", {e_.Op("Mul", {x, x})},
                               {{"axes", Attribute::Ints({-1})}, {"keepdims", Attribute::Int(1)}});
  const std::string var =
      e_.Op("Add", {ms, e_.ConstF32("rms_eps", {}, {static_cast<float>(arch_.norm_eps)})});
  const std::string inv = e_.Op("Reciprocal", {e_.Op("Sqrt", {var})});
  return e_.Op("Mul", {w, e_.Op("Mul", {x, inv})});
}

// x [T, in] -> [T, out] with the HF [out, in] weight and optional bias.
absl::StatusOr<std::string> DecoderBuilder::Linear(const std::string& module, const std::string& x,
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

// down(silu(gate(x)) * up(x)).
absl::StatusOr<std::string> DecoderBuilder::Mlp(const std::string& p, const std::string& h,
                                                int64_t inter) {
  const int64_t hid = arch_.hidden_size;
  ASSIGN_OR_RETURN(std::string gate, Linear(p + "gate_proj", h, inter, hid, false));
  const std::string silu = e_.Op("Mul", {gate, e_.Op("Sigmoid", {gate})});
  ASSIGN_OR_RETURN(std::string up, Linear(p + "up_proj", h, inter, hid, false));
  const std::string act = e_.Op("Mul", {silu, up});
  return Linear(p + "down_proj", act, hid, inter, false);
}

// Adds the checkpoint tensor `name` (same bytes) after checking it.
absl::StatusOr<std::string> DecoderBuilder::Weight(const std::string& name,
                                                   const std::vector<int64_t>& dims) {
  if (g_.FindInitializer(name) != nullptr) return name;
  const ir::Tensor* t = ckpt_.graph.FindInitializer(name);
  if (t == nullptr) {
    return absl::NotFoundError(ckpt_.source_path + ": " + arch_.model_type +
                               " checkpoint lacks weight '" + name + "'");
  }
  if (t->dims != dims) {
    return absl::InvalidArgumentError(ckpt_.source_path + ": weight '" + name + "' has shape " +
                                      ir::Shape::FromDims(t->dims).ToString() + ", " +
                                      ArchitectureSourceLabel(arch_) + " implies " +
                                      ir::Shape::FromDims(dims).ToString());
  }
  if (t->quant.quantized()) return QuantizedWeight(*t);
  if (t->dtype != ir::DType::kF32 && t->dtype != ir::DType::kF16 && t->dtype != ir::DType::kBF16) {
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
absl::StatusOr<std::string> DecoderBuilder::InputPerm(const std::string& weight, int64_t in) {
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
absl::StatusOr<std::string> DecoderBuilder::QuantizedWeight(const ir::Tensor& t) {
  const ir::Tensor* scale = ckpt_.graph.FindInitializer(t.quant.scale);
  const ir::Tensor* zp =
      t.quant.zero_point.empty() ? nullptr : ckpt_.graph.FindInitializer(t.quant.zero_point);
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

}  // namespace slimpack::hf::decoder_internal
