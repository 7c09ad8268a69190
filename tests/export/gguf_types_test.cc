// The per-tensor type rules against llama-quantize's (src/llama-quant.cpp,
// llama_tensor_get_type), written out by hand for a 32-layer model.
#include "export/gguf_types.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

TensorSlot Matrix(const std::string& name, int layer, int64_t row = 4096,
                  const std::string& tensor = "") {
  TensorSlot s;
  s.tensor = tensor;
  s.gguf_name = name;
  s.row_length = row;
  s.rank = 2;
  s.layer = layer;
  s.is_output = name == "output.weight";
  return s;
}

// Layers whose attn_v / ffn_down get Q6_K under Q4_K_M with 32 layers:
// i < 4, i >= 28, or (i - 4) % 3 == 2.
std::vector<int> MoreBitsLayers32() {
  return {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
}

TEST(GgufTypes, Q4KMGivesQ6KToTheSameLayersAsLlamaQuantize) {
  auto preset = ParsePreset("Q4_K_M");
  ASSERT_THAT(preset, IsOk());
  EXPECT_EQ(preset->file_type, 15u);
  TypeChooser chooser(*preset, 32, 32, 8);
  EXPECT_EQ(chooser.Choose(Matrix("token_embd.weight", -1)).type, TensorType::kQ4_K);
  std::vector<int> v_q6, down_q6;
  for (int i = 0; i < 32; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(chooser.Choose(Matrix(blk + "attn_q.weight", i)).type, TensorType::kQ4_K);
    EXPECT_EQ(chooser.Choose(Matrix(blk + "attn_k.weight", i)).type, TensorType::kQ4_K);
    if (chooser.Choose(Matrix(blk + "attn_v.weight", i)).type == TensorType::kQ6_K) v_q6.push_back(i);
    EXPECT_EQ(chooser.Choose(Matrix(blk + "attn_output.weight", i)).type, TensorType::kQ4_K);
    EXPECT_EQ(chooser.Choose(Matrix(blk + "ffn_gate.weight", i)).type, TensorType::kQ4_K);
    EXPECT_EQ(chooser.Choose(Matrix(blk + "ffn_up.weight", i)).type, TensorType::kQ4_K);
    const TypeChoice down = chooser.Choose(Matrix(blk + "ffn_down.weight", i, 11008));
    // 11008 = 43 * 256: ffn_down's row divides a super-block.
    if (down.type == TensorType::kQ6_K) down_q6.push_back(i);
    else EXPECT_EQ(down.type, TensorType::kQ4_K);
  }
  EXPECT_EQ(v_q6, MoreBitsLayers32());
  EXPECT_EQ(down_q6, MoreBitsLayers32());
  EXPECT_EQ(chooser.Choose(Matrix("output.weight", -1)).type, TensorType::kQ6_K);
}

TEST(GgufTypes, Q3KMAndQ2KBumpAttentionAndFfnDown) {
  auto q3 = ParsePreset("q3_k_m");
  ASSERT_THAT(q3, IsOk());
  TypeChooser c3(*q3, 32, 32, 32);
  EXPECT_EQ(c3.Choose(Matrix("blk.0.attn_v.weight", 0)).type, TensorType::kQ5_K);
  EXPECT_EQ(c3.Choose(Matrix("blk.1.attn_v.weight", 1)).type, TensorType::kQ5_K);
  EXPECT_EQ(c3.Choose(Matrix("blk.2.attn_v.weight", 2)).type, TensorType::kQ4_K);
  EXPECT_EQ(c3.Choose(Matrix("blk.1.ffn_down.weight", 1)).type, TensorType::kQ5_K);  // 1 < 32/16
  EXPECT_EQ(c3.Choose(Matrix("blk.2.ffn_down.weight", 2)).type, TensorType::kQ4_K);
  EXPECT_EQ(c3.Choose(Matrix("blk.2.attn_output.weight", 2)).type, TensorType::kQ4_K);
  EXPECT_EQ(c3.Choose(Matrix("blk.2.ffn_up.weight", 2)).type, TensorType::kQ3_K);

  auto q2 = ParsePreset("q2_k");
  ASSERT_THAT(q2, IsOk());
  TypeChooser gqa8(*q2, 32, 32, 4);  // n_gqa 8 >= 4: attn_v gets Q4_K
  EXPECT_EQ(gqa8.Choose(Matrix("blk.0.attn_v.weight", 0)).type, TensorType::kQ4_K);
  TypeChooser mha(*q2, 32, 32, 32);
  EXPECT_EQ(mha.Choose(Matrix("blk.0.attn_v.weight", 0)).type, TensorType::kQ3_K);
  EXPECT_EQ(mha.Choose(Matrix("blk.0.ffn_down.weight", 0)).type, TensorType::kQ3_K);
  EXPECT_EQ(mha.Choose(Matrix("blk.0.ffn_gate.weight", 0)).type, TensorType::kQ2_K);
}

TEST(GgufTypes, OneDimensionalTensorsStayF32AndFloatPresetsAreUniform) {
  auto f16 = ParsePreset("f16");
  ASSERT_THAT(f16, IsOk());
  TypeChooser chooser(*f16, 4, 4, 2);
  TensorSlot norm = Matrix("blk.0.attn_norm.weight", 0, 128);
  norm.rank = 1;
  EXPECT_EQ(chooser.Choose(norm).type, TensorType::kF32);
  EXPECT_EQ(chooser.Choose(Matrix("output.weight", -1, 344)).type, TensorType::kF16);
  EXPECT_EQ(chooser.Choose(Matrix("blk.0.ffn_down.weight", 0, 344)).type, TensorType::kF16);
}

TEST(GgufTypes, RowsThatDoNotDivideABlockFallBackLikeLlamaQuantize) {
  auto preset = ParsePreset("q4_k_m");
  ASSERT_THAT(preset, IsOk());
  TypeChooser chooser(*preset, 4, 4, 2);
  // 128 divides 32 but not 256: Q4_K -> Q5_0, Q6_K -> Q8_0.
  const TypeChoice q = chooser.Choose(Matrix("blk.1.attn_q.weight", 1, 128));
  EXPECT_EQ(q.type, TensorType::kQ5_0);
  EXPECT_THAT(q.fallback_note, HasSubstr("row length 128 is not a multiple of 256 (q4_K): using q5_0"));
  // With 4 layers, use_more_bits picks attn_v of layers 2 and 3 (Q6_K,
  // which falls back to Q8_0 on 128-weight rows); layers 0 and 1 keep Q4_K.
  EXPECT_EQ(chooser.Choose(Matrix("blk.0.attn_v.weight", 0, 128)).type, TensorType::kQ5_0);
  EXPECT_EQ(chooser.Choose(Matrix("blk.1.attn_v.weight", 1, 128)).type, TensorType::kQ5_0);
  EXPECT_EQ(chooser.Choose(Matrix("blk.2.attn_v.weight", 2, 128)).type, TensorType::kQ8_0);
  EXPECT_EQ(chooser.Choose(Matrix("blk.3.attn_v.weight", 3, 128)).type, TensorType::kQ8_0);
  // The output matrix: Q8_0 when its row does not divide the base block.
  EXPECT_EQ(chooser.Choose(Matrix("output.weight", -1, 128)).type, TensorType::kQ8_0);
  // 344 divides neither 256 nor 32: f16.
  const TypeChoice down = chooser.Choose(Matrix("blk.1.ffn_down.weight", 1, 344));
  EXPECT_EQ(down.type, TensorType::kF16);
  EXPECT_THAT(down.fallback_note, HasSubstr("using f16"));

  auto q8 = ParsePreset("q8_0");
  ASSERT_THAT(q8, IsOk());
  TypeChooser c8(*q8, 4, 4, 2);
  EXPECT_EQ(c8.Choose(Matrix("output.weight", -1, 128)).type, TensorType::kQ8_0);
  EXPECT_EQ(c8.Choose(Matrix("blk.0.ffn_down.weight", 0, 344)).type, TensorType::kF16);
}

TEST(GgufTypes, WithAnImatrixTheFirstEighthOfFfnDownLeavesQ4_0AndQ5_0) {
  // llama.cpp's guard against q4_0/q5_0 on early ffn_down, applied only
  // when an imatrix is given (so plain runs keep their old types).
  for (const auto& [name, guarded] : {std::pair<const char*, TensorType>{"q4_0", TensorType::kQ4_1},
                                      {"q5_0", TensorType::kQ5_1}}) {
    auto preset = ParsePreset(name);
    ASSERT_THAT(preset, IsOk());
    TypeChooser plain(*preset, 32, 32, 8);
    TypeChooser weighted(*preset, 32, 32, 8, /*has_imatrix=*/true);
    int checked = 0;
    for (int layer = 0; layer < 32; ++layer) {
      const TensorSlot down = Matrix("blk." + std::to_string(layer) + ".ffn_down.weight", layer);
      EXPECT_EQ(plain.Choose(down).type, preset->base) << name << " layer " << layer;
      EXPECT_EQ(weighted.Choose(down).type, layer < 4 ? guarded : preset->base)
          << name << " layer " << layer;
      // Other matrices are not affected.
      const TensorSlot up = Matrix("blk." + std::to_string(layer) + ".ffn_up.weight", layer);
      EXPECT_EQ(weighted.Choose(up).type, preset->base) << name << " layer " << layer;
      ++checked;
    }
    EXPECT_EQ(checked, 32);
  }
}

TEST(GgufTypes, OverridesWinOverThePresetInOrderAndKeepItsCounting) {
  auto preset = ParsePreset("q4_k_m");
  ASSERT_THAT(preset, IsOk());
  std::vector<TypeOverride> overrides;
  for (const auto& [pattern, type] : {std::pair<const char*, const char*>{"blk\\.0\\.", "Q8_0"},
                                      {"v_proj", "q5_k"},
                                      {"attn_v|ffn_down", "q4_0"}}) {
    auto o = ParseTypeOverride(pattern, type);
    ASSERT_THAT(o, IsOk());
    overrides.push_back(*o);
  }
  TypeChooser chooser(*preset, 32, 32, 8, false, overrides);
  for (int i = 0; i < 32; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const TensorSlot v = Matrix(blk + "attn_v.weight", i, 4096, hf + "self_attn.v_proj.weight");
    const TensorSlot q = Matrix(blk + "attn_q.weight", i, 4096, hf + "self_attn.q_proj.weight");
    const TensorSlot down = Matrix(blk + "ffn_down.weight", i, 11008, hf + "mlp.down_proj.weight");
    // The first override matches the GGUF name, the second the checkpoint
    // name; the third is shadowed by the second for attn_v.
    EXPECT_EQ(chooser.Choose(v).type, i == 0 ? TensorType::kQ8_0 : TensorType::kQ5_K) << i;
    EXPECT_EQ(chooser.Choose(q).type, i == 0 ? TensorType::kQ8_0 : TensorType::kQ4_K) << i;
    EXPECT_EQ(chooser.Choose(down).type, i == 0 ? TensorType::kQ8_0 : TensorType::kQ4_0) << i;
  }
  // A later tensor the overrides do not match gets the preset's type.
  EXPECT_EQ(chooser.Choose(Matrix("output.weight", -1)).type, TensorType::kQ6_K);
  // 1-D tensors stay f32 whatever matches them.
  TensorSlot norm = Matrix("blk.0.attn_norm.weight", 0);
  norm.rank = 1;
  EXPECT_EQ(chooser.Choose(norm).type, TensorType::kF32);
  // An overridden type still needs whole blocks: q5_K on a 128-wide row
  // falls back as llama-quantize does, naming the rule.
  const TypeChoice narrow = chooser.Choose(
      Matrix("blk.5.attn_v.weight", 5, 128, "model.layers.5.self_attn.v_proj.weight"));
  EXPECT_EQ(narrow.type, TensorType::kQ5_1);
  EXPECT_THAT(narrow.fallback_note,
              HasSubstr("row length 128 is not a multiple of 256 (q5_K (by 'v_proj')): using q5_1"));
}

TEST(GgufTypes, OverrideTheAttnVCounterStillRuns) {
  // llama-quantize's attn_v rule counts attn_v tensors as it goes; an
  // override of some of them must not shift which later ones get Q6_K.
  auto preset = ParsePreset("q4_k_m");
  ASSERT_THAT(preset, IsOk());
  auto o = ParseTypeOverride("^blk\\.1\\.", "q8_0");
  ASSERT_THAT(o, IsOk());
  TypeChooser plain(*preset, 32, 32, 8);
  TypeChooser chooser(*preset, 32, 32, 8, false, {*o});
  for (int i = 0; i < 32; ++i) {
    const TensorSlot v = Matrix("blk." + std::to_string(i) + ".attn_v.weight", i);
    const TensorType want = plain.Choose(v).type;
    EXPECT_EQ(chooser.Choose(v).type, i == 1 ? TensorType::kQ8_0 : want) << i;
  }
}

TEST(GgufTypes, OverrideParsingNamesWhatIsWrong) {
  EXPECT_THAT(ParseTypeOverride("attn_v", "q4_k_m").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("type 'q4_k_m' for 'attn_v' is not a GGUF tensor type (f32, f16")));
  EXPECT_THAT(ParseTypeOverride("attn_v(", "q8_0").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid regex 'attn_v('")));
  EXPECT_THAT(ParseTypeOverride("", "q8_0").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty tensor pattern")));
  auto bf16 = ParseTypeOverride("output", "BF16");
  ASSERT_THAT(bf16, IsOk());
  EXPECT_EQ(bf16->type, TensorType::kBF16);
}

TEST(GgufTypes, UnknownPresetNamesTheAcceptedOnes) {
  EXPECT_THAT(ParsePreset("q4_k_x").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("GGUF type 'q4_k_x' is not one of: f32, f16, bf16, q8_0")));
}

}  // namespace
}  // namespace slimpack::gguf_export
