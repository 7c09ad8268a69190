// Scheme names, the recipe's "quant" section, weight eligibility and the
// first-match-wins plan.
#include "quantize/quant_rules.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ir::Tensor F32(const std::string& name, std::vector<int64_t> dims) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = dims;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(n * 4, 0));
  return t;
}

ir::Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
                  std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = {name + "_out"};
  n.attributes = std::move(attrs);
  return n;
}

TEST(WeightSchemeTest, NamesRoundTrip) {
  for (const char* name : {"keep", "f16", "bf16", "f32", "int8", "int8-asym", "int4-g128",
                           "int4-g32-asym", "int4-row", "int3-g64", "int2-g16-asym", "int8-g32",
                           "int8-g32-asym", "int4-g32-f32scale", "int8-f16scale",
                           "int4-row-f16scale", "int8-g64-asym-f32scale"}) {
    auto s = ParseWeightScheme(name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    EXPECT_EQ(s->Name(), name);
  }
  auto bare = ParseWeightScheme("int4", 64);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->Name(), "int4-g64");
  EXPECT_EQ(ParseWeightScheme("int4")->group_size, 128);
}

// Grouped schemes store f16 scales unless told otherwise; one scale per row
// stays f32; a bare int8 is per channel whatever the default group.
TEST(WeightSchemeTest, ScaleDtypeDefaultsAndSuffixes) {
  using quant::ScaleDType;
  EXPECT_EQ(ParseWeightScheme("int4-g32")->scale_dtype, ScaleDType::kF16);
  EXPECT_EQ(ParseWeightScheme("int8-g32")->scale_dtype, ScaleDType::kF16);
  EXPECT_EQ(ParseWeightScheme("int8")->scale_dtype, ScaleDType::kF32);
  EXPECT_EQ(ParseWeightScheme("int8", 32)->group_size, 0);
  EXPECT_EQ(ParseWeightScheme("int4-row")->scale_dtype, ScaleDType::kF32);
  EXPECT_EQ(ParseWeightScheme("int4-g32-f32scale")->scale_dtype, ScaleDType::kF32);
  EXPECT_EQ(ParseWeightScheme("int8-f16scale")->scale_dtype, ScaleDType::kF16);
  const quant::Scheme n = ParseWeightScheme("int8-g32-asym")->Numerics();
  EXPECT_EQ(n, (quant::Scheme{8, 32, false, ScaleDType::kF16}));
}

TEST(WeightSchemeTest, BadNamesSayWhy) {
  EXPECT_THAT(ParseWeightScheme("int9"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  AllOf(HasSubstr("'int9'"), HasSubstr("forms"))));
  EXPECT_THAT(ParseWeightScheme("int6-g32"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("for 5 and 6 bits use llama.cpp's block types")));
  EXPECT_THAT(ParseWeightScheme("int4-g32-f64scale"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("forms")));
  EXPECT_THAT(ParseWeightScheme("int6"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("store 2..4 or 8 bits")));
  EXPECT_THAT(ParseWeightScheme("int4-g0"), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(ParseWeightScheme("fp4"), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(QuantConfigTest, ParsesEveryKeyAndRoundTrips) {
  auto j = nlohmann::json::parse(R"({
    "scheme": "int4-g32", "algorithm": "gptq", "mse_clip": true, "calib_samples": 16,
    "gptq": {"damp": 0.05, "block": 64, "act_order": true}, "awq": {"grid": 10},
    "rules": [{"match": "lm_head", "scheme": "int8", "reason": "slimpack report fallback: mean_kld"},
              {"op": "Linear", "role": "down_proj", "scheme": "int4-g128", "algorithm": "rtn"}]})");
  auto c = ParseQuantConfig(j, "r.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheme->Name(), "int4-g32");
  EXPECT_EQ(c->algorithm, Algorithm::kGptq);
  EXPECT_TRUE(c->gptq_act_order);
  EXPECT_EQ(c->gptq_block, 64);
  EXPECT_EQ(c->awq_grid, 10);
  ASSERT_EQ(c->rules.size(), 2u);
  EXPECT_EQ(c->rules[1].role, "down_proj");
  auto again = ParseQuantConfig(QuantConfigToJson(*c), "r.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(QuantConfigToJson(*again), QuantConfigToJson(*c));
}

// int8 activations are recorded (and read back); the uint8 default is not
// written, so artifacts made before the key existed keep their manifests.
TEST(QuantConfigTest, W8a8ActivationTypeRoundTrips) {
  auto s8 = ParseQuantConfig(
      nlohmann::json::parse(R"({"scheme": "w8a8", "activation_type": "int8"})"), "r.json");
  ASSERT_TRUE(s8.ok()) << s8.status();
  EXPECT_TRUE(s8->w8a8 && s8->w8a8_int8_activations);
  EXPECT_EQ(QuantConfigToJson(*s8),
            nlohmann::json::parse(
                R"({"scheme": "w8a8", "calib_method": "minmax", "activation_type": "int8"})"));
  auto u8 = ParseQuantConfig(
      nlohmann::json::parse(R"({"scheme": "w8a8", "activation_type": "uint8"})"), "r.json");
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_FALSE(u8->w8a8_int8_activations);
  EXPECT_EQ(QuantConfigToJson(*u8),
            nlohmann::json::parse(R"({"scheme": "w8a8", "calib_method": "minmax"})"));
}

TEST(QuantConfigTest, ErrorsNameFileKeyAndValue) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"sheme": "int4"})", "quant.sheme: unknown key"},
      {R"({"scheme": 4})", "quant.scheme: expected a scheme name"},
      {R"({"scheme": "int4-gx"})", "unknown scheme 'int4-gx'"},
      {R"({"algorithm": "gtpq"})", "unknown algorithm 'gtpq'"},
      {R"({"calib_samples": 0})", "quant.calib_samples: 0 is outside"},
      {R"({"gptq": {"damp": 2}})", "quant.gptq.damp"},
      {R"({"gptq": {"blocks": 2}})", "quant.gptq.blocks: unknown key"},
      {R"({"rules": [{"match": "(", "scheme": "int8"}]})", "quant.rules[0].match: invalid regex"},
      {R"({"rules": [{"op": "Conv2d", "scheme": "int8"}]})", "unknown op 'Conv2d'"},
      {R"({"rules": [{"role": "qproj", "scheme": "int8"}]})", "unknown role 'qproj'"},
      {R"({"rules": [{"match": "x"}]})", "needs \"scheme\" or \"algorithm\""},
      {R"({"rules": {}})", "quant.rules: expected an array"},
      {R"({"scheme": "w8a8", "activation_type": "s8"})",
       R"(quant.activation_type: expected "uint8" or "int8", found "s8")"},
      {R"({"scheme": "int8", "activation_type": "int8"})",
       "quant.activation_type: applies to \"scheme\": \"w8a8\" only"},
      {R"({"scheme": "int4", "activation_type": "uint8"})",
       "quant.activation_type: applies to \"scheme\": \"w8a8\" only"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseQuantConfig(nlohmann::json::parse(c.json), "my.json"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("my.json"), HasSubstr(c.want))))
        << c.json;
  }
}

// A graph with every kind of use: MatMul B [K,N], Gemm B with and without
// transB, Conv W, Gather table, and a weight also read as an activation.
ir::Model MixedModel() {
  ir::Model m;
  ir::Graph& g = m.graph;
  for (auto t : {F32("mm", {8, 4}), F32("gemm_t", {4, 8}), F32("gemm", {8, 4}),
                 F32("conv", {4, 2, 3, 3}), F32("table", {10, 8}), F32("shared", {8, 8}),
                 F32("bias", {4})}) {
    EXPECT_TRUE(g.AddInitializer(t).ok());
  }
  g.nodes.push_back(MakeNode("n_mm", "MatMul", {"x", "mm"}));
  g.nodes.push_back(MakeNode("n_gemm_t", "Gemm", {"x", "gemm_t", "bias"},
                             {{"transB", ir::Attribute::Int(1)}}));
  g.nodes.push_back(MakeNode("n_gemm", "Gemm", {"x", "gemm"}));
  g.nodes.push_back(MakeNode("n_conv", "Conv", {"img", "conv"}));
  g.nodes.push_back(MakeNode("n_gather", "Gather", {"table", "ids"}));
  g.nodes.push_back(MakeNode("n_shared", "MatMul", {"x", "shared"}));
  g.nodes.push_back(MakeNode("n_add", "Add", {"shared", "x"}));
  return m;
}

TEST(FindQuantizableWeightsTest, OrientationAndSkips) {
  const ir::Model m = MixedModel();
  std::vector<std::string> skipped;
  auto uses = FindQuantizableWeights(m, &skipped);
  std::vector<std::string> got;
  for (const WeightUse& u : uses) {
    got.push_back(u.tensor + ":" + u.op + (u.transposed ? ":T" : ""));
  }
  EXPECT_THAT(got, ElementsAre("mm:MatMul:T", "gemm_t:Gemm", "gemm:Gemm:T", "conv:Conv",
                               "table:Gather"));
  EXPECT_THAT(skipped, ElementsAre(HasSubstr("shared: also read as an activation")));
}

TEST(PlanWeightsTest, FirstMatchingRuleWinsAndConvFallsBackToInt8) {
  const ir::Model m = MixedModel();
  auto c = ParseQuantConfig(nlohmann::json::parse(R"({
      "scheme": "int4-g32", "algorithm": "rtn-mse",
      "rules": [{"op": "Gather", "scheme": "f16"},
                {"match": "^gemm", "scheme": "int8"},
                {"match": "gemm_t", "scheme": "keep"}]})"),
                            "r.json");
  ASSERT_TRUE(c.ok()) << c.status();
  auto plans = PlanWeights(m, *c);
  ASSERT_TRUE(plans.ok()) << plans.status();
  std::map<std::string, std::string> got;
  for (const TensorPlan& p : *plans) got[p.use.tensor] = p.scheme.Name() + "/" + std::to_string(p.rule);
  EXPECT_EQ(got["mm"], "int4-g32/-1");
  EXPECT_EQ(got["gemm_t"], "int8/1");  // rule 1 matches first; rule 2 never runs
  EXPECT_EQ(got["gemm"], "int8/1");
  EXPECT_EQ(got["table"], "f16/0");
  EXPECT_EQ(got["conv"], "int8/-1");
  for (const TensorPlan& p : *plans) {
    if (p.use.tensor == "conv") {  // braces: gtest's macros end in a bare `else`
      EXPECT_THAT(p.note, HasSubstr("spatial kernel"));
    }
  }
}

TEST(PlanWeightsTest, HfRolesDecideEligibility) {
  ir::Model m;
  auto add = [&](const std::string& n, ir::WeightRole r, std::vector<int64_t> d) {
    ir::Tensor t = F32(n, d);
    t.role = r;
    ASSERT_TRUE(m.graph.AddInitializer(t).ok());
  };
  add("model.embed_tokens.weight", ir::WeightRole::kEmbedding, {16, 8});
  add("model.layers.0.self_attn.q_proj.weight", ir::WeightRole::kQProj, {8, 8});
  add("model.layers.0.input_layernorm.weight", ir::WeightRole::kAttnNorm, {8});
  add("model.layers.0.mlp.down_proj.weight", ir::WeightRole::kDownProj, {8, 12});
  add("lm_head.weight", ir::WeightRole::kLmHead, {16, 8});
  QuantConfig c;
  c.scheme = *ParseWeightScheme("int4-g8");
  c.algorithm = Algorithm::kGptq;
  c.rules.push_back({"", "Linear", "down_proj", *ParseWeightScheme("int8"), std::nullopt, 0, ""});
  auto plans = PlanWeights(m, c);
  ASSERT_TRUE(plans.ok());
  std::vector<std::string> got;
  for (const TensorPlan& p : *plans) {
    got.push_back(p.use.tensor + " " + p.use.op + " " + p.scheme.Name() + " " +
                  std::string(AlgorithmName(p.algorithm)));
  }
  // The embedding has no input statistics: GPTQ becomes rtn-mse there.
  EXPECT_THAT(got, ElementsAre("model.embed_tokens.weight Gather int4-g8 rtn-mse",
                               "model.layers.0.self_attn.q_proj.weight Linear int4-g8 gptq",
                               "model.layers.0.mlp.down_proj.weight Linear int8 gptq",
                               "lm_head.weight Linear int4-g8 gptq"));
}

}  // namespace
}  // namespace slimpack::quantize
