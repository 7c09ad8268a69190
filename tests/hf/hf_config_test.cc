// config.json parsing (fields, defaults, validation) and weight-role tagging
// on generated tiny llama/qwen2 layouts.
#include "hf/hf_config.h"

#include "hf/weight_roles.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::hf {
namespace {

using ::slimpack::safetensors::testing::MakeBf16;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(HfConfigTest, ParsesLlamaFieldsAndKeepsText) {
  const std::string text = R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "num_hidden_layers": 16, "num_attention_heads": 32,
    "num_key_value_heads": 8, "hidden_size": 2048, "intermediate_size": 8192,
    "vocab_size": 128256, "max_position_embeddings": 131072,
    "rope_theta": 500000.0, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "rope_scaling": {"factor": 32.0, "rope_type": "llama3"}})";
  auto info = ParseHfConfig(text, "config.json");
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->model_type, "llama");
  EXPECT_TRUE(info->known);
  EXPECT_THAT(info->architectures, ElementsAre("LlamaForCausalLM"));
  EXPECT_EQ(info->num_layers, 16);
  EXPECT_EQ(info->num_heads, 32);
  EXPECT_EQ(info->num_kv_heads, 8);
  EXPECT_EQ(info->hidden_size, 2048);
  EXPECT_EQ(info->intermediate_size, 8192);
  EXPECT_EQ(info->vocab_size, 128256);
  EXPECT_EQ(info->head_dim, 64);  // 2048 / 32
  EXPECT_EQ(info->max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(info->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(info->norm_eps, 1e-5);
  EXPECT_TRUE(info->tie_word_embeddings);
  EXPECT_EQ(info->torch_dtype, "bfloat16");
  EXPECT_EQ(info->config_json, text);
}

TEST(HfConfigTest, DefaultsAndAlternateSpellings) {
  // No kv heads (= heads), head_dim null (= hidden/heads), rope_theta under
  // rope_parameters, "dtype" instead of "torch_dtype".
  auto info = ParseHfConfig(
      R"({"model_type":"qwen2","num_hidden_layers":2,"num_attention_heads":4,)"
      R"("hidden_size":64,"intermediate_size":128,"vocab_size":100,)"
      R"("head_dim":null,"rope_parameters":{"rope_theta":1000000},)"
      R"("dtype":"float16"})",
      "config.json");
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->num_kv_heads, 4);
  EXPECT_EQ(info->head_dim, 16);
  EXPECT_DOUBLE_EQ(info->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(info->norm_eps, 1e-6);  // default
  EXPECT_FALSE(info->tie_word_embeddings);
  EXPECT_EQ(info->torch_dtype, "float16");
}

TEST(HfConfigTest, ExplicitHeadDimNeedNotDivideHidden) {
  auto info = ParseHfConfig(
      R"({"model_type":"mistral","num_hidden_layers":1,"num_attention_heads":3,)"
      R"("hidden_size":10,"intermediate_size":4,"vocab_size":5,"head_dim":8})",
      "config.json");
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->head_dim, 8);
}

TEST(HfConfigTest, UnknownFamilyIsLenient) {
  auto info = ParseHfConfig(
      R"({"model_type":"gpt2","n_layer":12,"n_head":12,"vocab_size":50257,)"
      R"("hidden_size":10,"num_attention_heads":3})",
      "config.json");
  ASSERT_THAT(info, IsOk());
  EXPECT_FALSE(info->known);
  EXPECT_EQ(info->vocab_size, 50257);
  EXPECT_EQ(info->head_dim, 0);  // 10 % 3 != 0: unknown, not an error
}

TEST(HfConfigTest, RejectsBadValuesNamingFileAndField) {
  struct Case {
    std::string json;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"model_type":"x","hidden_size":0})",
       "field 'hidden_size' must be a positive integer"},
      {R"({"model_type":"x","hidden_size":64.0})", "field 'hidden_size'"},
      {R"({"model_type":"x","vocab_size":2147483648})",
       "found number 2147483648"},
      {R"({"model_type":"x","rope_theta":-1})",
       "field 'rope_theta' must be a positive finite"},
      {R"({"model_type":"x","tie_word_embeddings":1})",
       "field 'tie_word_embeddings' must be a boolean"},
      {R"({"model_type":7})", "field 'model_type' must be a string"},
      {R"({"architectures":"LlamaForCausalLM"})",
       "field 'architectures' must be an array"},
      {R"({"architectures":[1]})", "field 'architectures' must be an array"},
      {R"({"model_type":"llama","model_type":"qwen2"})",
       "duplicate key 'model_type'"},
      {R"({"model_type":"qwen2","num_hidden_layers":1,"num_attention_heads":4,)"
       R"("num_key_value_heads":3,"hidden_size":8,"intermediate_size":8,"vocab_size":8})",
       "must be a multiple of 'num_key_value_heads' (3)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_THAT(ParseHfConfig(c.json, "dir/config.json"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::AllOf(HasSubstr("dir/config.json"),
                                          HasSubstr(c.message))));
  }
}

TEST(HfConfigTest, ReadHfConfigMissingFileIsNotFound) {
  EXPECT_THAT(ReadHfConfig("/nonexistent/dir/config.json"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/dir/config.json")));
}

ir::ArchitectureInfo Parse(const TinyDecoder& d) {
  auto info = ParseHfConfig(d.ConfigJson(), "config.json");
  EXPECT_THAT(info, IsOk());
  return info.ok() ? *info : ir::ArchitectureInfo();
}

const ir::Tensor& Find(const std::vector<ir::Tensor>& ts,
                       const std::string& name) {
  for (const auto& t : ts) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  static const ir::Tensor kNone;
  return kNone;
}

TEST(WeightRolesTest, TagsEveryLlamaWeight) {
  TinyDecoder d;
  std::vector<ir::Tensor> ts = d.Tensors();
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  EXPECT_THAT(warnings, IsEmpty());
  using R = ir::WeightRole;
  const std::vector<std::pair<std::string, R>> want = {
      {"self_attn.q_proj.weight", R::kQProj},
      {"self_attn.k_proj.weight", R::kKProj},
      {"self_attn.v_proj.weight", R::kVProj},
      {"self_attn.o_proj.weight", R::kOProj},
      {"mlp.gate_proj.weight", R::kGateProj},
      {"mlp.up_proj.weight", R::kUpProj},
      {"mlp.down_proj.weight", R::kDownProj},
      {"input_layernorm.weight", R::kAttnNorm},
      {"post_attention_layernorm.weight", R::kMlpNorm},
  };
  for (int layer = 0; layer < 2; ++layer) {
    for (const auto& [suffix, role] : want) {
      const auto& t =
          Find(ts, "model.layers." + std::to_string(layer) + "." + suffix);
      EXPECT_EQ(t.role, role) << t.name;
      EXPECT_EQ(t.layer, layer) << t.name;
    }
  }
  EXPECT_EQ(Find(ts, "model.embed_tokens.weight").role, R::kEmbedding);
  EXPECT_EQ(Find(ts, "model.embed_tokens.weight").layer, -1);
  EXPECT_EQ(Find(ts, "model.norm.weight").role, R::kFinalNorm);
  EXPECT_EQ(Find(ts, "lm_head.weight").role, R::kLmHead);
}

TEST(WeightRolesTest, Qwen2BiasesAreTaggedAndShapeChecked) {
  TinyDecoder d;
  d.model_type = "qwen2";
  d.biases = true;
  d.tie = true;
  std::vector<ir::Tensor> ts = d.Tensors();
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  EXPECT_THAT(warnings, IsEmpty());  // tied: no lm_head expected
  const auto& b = Find(ts, "model.layers.1.self_attn.k_proj.bias");
  EXPECT_EQ(b.role, ir::WeightRole::kBias);
  EXPECT_EQ(b.layer, 1);

  // A k_proj bias sized for q_proj is caught.
  for (auto& t : ts) {
    if (t.name == "model.layers.1.self_attn.k_proj.bias")
      t = MakeBf16(t.name, {8}, 0);
  }
  EXPECT_THAT(
      TagWeightRoles(Parse(d), "config.json", ts, warnings),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("tensor 'model.layers.1.self_attn.k_proj.bias' (bias, "
                         "layer 1) has shape [8], expected [4] = "
                         "[num_key_value_heads*head_dim]")));
}

TEST(WeightRolesTest, Qwen2WithoutBiasesWarnsAboutThem) {
  TinyDecoder d;
  d.model_type = "qwen2";
  std::vector<ir::Tensor> ts = d.Tensors();
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("6 expected weights missing: "
                                     "model.layers.0.self_attn.q_proj.bias"));
}

TEST(WeightRolesTest, UnrecognisedAndMissingWeightsBecomeWarnings) {
  TinyDecoder d;
  d.layers = 3;  // the checkpoint only has layers 0 and 1 below
  std::vector<ir::Tensor> ts = TinyDecoder().Tensors();
  ts.erase(std::remove_if(
               ts.begin(), ts.end(),
               [](const ir::Tensor& t) { return t.name == "lm_head.weight"; }),
           ts.end());
  ts.push_back(
      MakeBf16("model.layers.0.self_attn.rotary_emb.inv_freq", {2}, 0));
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0],
              HasSubstr("1 tensors not recognised as llama weights, left "
                        "untagged: model.layers.0.self_attn.rotary_emb"));
  EXPECT_THAT(warnings[1], HasSubstr("1 of 3 layers have no weights"));
  EXPECT_THAT(warnings[1], HasSubstr("lm_head.weight"));
  const auto& inv = Find(ts, "model.layers.0.self_attn.rotary_emb.inv_freq");
  EXPECT_EQ(inv.role, ir::WeightRole::kUnknown);
  EXPECT_EQ(inv.layer, 0);
}

TEST(WeightRolesTest, ExplicitHeadDimDrivesProjectionShapes) {
  TinyDecoder d;
  d.head_dim = 6;  // heads*head_dim = 12 != hidden 8: config sets head_dim
  std::vector<ir::Tensor> ts = d.Tensors();
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  EXPECT_THAT(Find(ts, "model.layers.0.self_attn.o_proj.weight").dims,
              ElementsAre(8, 12));
}

TEST(WeightRolesTest, UnknownFamilyIsLeftUntagged) {
  TinyDecoder d;
  d.model_type = "gemma";
  std::vector<ir::Tensor> ts = d.Tensors();
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  for (const auto& t : ts) {
    EXPECT_EQ(t.role, ir::WeightRole::kUnknown) << t.name;
    EXPECT_EQ(t.layer, -1) << t.name;
  }
}

TEST(WeightRolesTest, LeadingZeroLayerIndexIsNotALayer) {
  TinyDecoder d;
  std::vector<ir::Tensor> ts = {
      MakeBf16("model.layers.01.input_layernorm.weight", {8}, 0)};
  std::vector<std::string> warnings;
  ASSERT_THAT(TagWeightRoles(Parse(d), "config.json", ts, warnings), IsOk());
  EXPECT_EQ(ts[0].layer, -1);
  EXPECT_EQ(ts[0].role, ir::WeightRole::kUnknown);
}

}  // namespace
}  // namespace slimpack::hf
