// Tests for fuse-bn-into-conv: the whole fused graph, the folded weights
// against the formula evaluated independently in double, outputs before and
// after (tolerance 1e-5 absolute on O(1) values: weight folding rounds once
// per weight), channel layouts of ConvTranspose(group) and Gemm(transB),
// near misses and idempotence.
#include "passes/fuse/fuse_bn_into_conv.h"

#include <cmath>

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::Contains;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr double kTolerance = 1e-5;

struct BnParams {
  std::vector<float> scale, bias, mean, var;
};

BnParams RandomBn(size_t channels, uint32_t seed) {
  return {RandomFloats(channels, seed, 0.5f, 1.5f),
          RandomFloats(channels, seed + 1, -0.5f, 0.5f),
          RandomFloats(channels, seed + 2, -0.5f, 0.5f),
          RandomFloats(channels, seed + 3, 0.5f, 2.0f)};
}

std::string BnConstants(const BnParams& p, size_t channels) {
  std::string n = std::to_string(channels);
  return "  scale = Constant <value = float[" + n + "] {" + FloatList(p.scale) + "}> ()\n" +
         "  bias = Constant <value = float[" + n + "] {" + FloatList(p.bias) + "}> ()\n" +
         "  mean = Constant <value = float[" + n + "] {" + FloatList(p.mean) + "}> ()\n" +
         "  var = Constant <value = float[" + n + "] {" + FloatList(p.var) + "}> ()\n";
}

// 1x2x5x5 input, 3 output channels, 3x3 kernel with padding 1.
std::string ConvBnText(const std::vector<float>& w, const std::vector<float>& b,
                       const BnParams& p, const std::string& body) {
  return "<ir_version: 8, opset_import: [\"\" : 17]>\n"
         "g (float[1,2,5,5] x) => (float[1,3,5,5] y) {\n"
         "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n"
         "  B = Constant <value = float[3] {" + FloatList(b) + "}> ()\n" +
         BnConstants(p, 3) + body + "}\n";
}

TEST(FuseBnIntoConvTest, FoldsScaleIntoConvWeightsAndBias) {
  std::vector<float> w = RandomFloats(54, 10, -1.0f, 1.0f);
  std::vector<float> b = RandomFloats(3, 11, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 12);
  ir::Model before = ImportText(ConvBnText(w, b, p, R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  y = BatchNormalization <epsilon = 0.001> (c, scale, bias, mean, var)
)"));
  ir::Model expected = ImportText(ConvBnText(w, b, p, R"(
  y = Conv <pads = [1, 1, 1, 1]> (x, W, B)
)"));
  NameNode(expected.graph, "y", "c");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseBnIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(PrintMasked(after, {"W", "B"}), PrintMasked(expected.graph, {"W", "B"}));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[c,y]");
  EXPECT_EQ(run.context.stats().nodes_removed, 1);

  // W' and B' against the formula in double.
  std::vector<float> w2 = FloatsOf(*after.FindInitializer("W"));
  std::vector<float> b2 = FloatsOf(*after.FindInitializer("B"));
  for (int k = 0; k < 3; ++k) {
    double s = p.scale[k] / std::sqrt(static_cast<double>(p.var[k]) + 0.001f);
    EXPECT_NEAR(b2[k], (b[k] - p.mean[k]) * s + p.bias[k], 1e-6) << "channel " << k;
    for (int i = 0; i < 18; ++i) {
      EXPECT_NEAR(w2[k * 18 + i], w[k * 18 + i] * s, 1e-6) << "channel " << k;
    }
  }
  auto inputs = RandomInputs(before.graph, 13);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseBnIntoConvTest, AddsBiasWhenConvHasNone) {
  std::vector<float> w = RandomFloats(54, 20, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 21);
  ir::Model before = ImportText(ConvBnText(w, {0, 0, 0}, p, R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W)
  y = BatchNormalization(c, scale, bias, mean, var)
)"));
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseBnIntoConvPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].inputs, (std::vector<std::string>{"x", "W", "c_bias"}));
  auto inputs = RandomInputs(before.graph, 22);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseBnIntoConvTest, FoldsIntoGroupedConvTranspose) {
  // W is [C_in=4, C_out/group=3, 2, 2] with group 2: 6 output channels.
  std::vector<float> w = RandomFloats(48, 30, -1.0f, 1.0f);
  BnParams p = RandomBn(6, 31);
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1,4,3,3] x) => (float[1,6,4,4] y) {\n"
      "  W = Constant <value = float[4,3,2,2] {" + FloatList(w) + "}> ()\n" +
      BnConstants(p, 6) +
      "  c = ConvTranspose <group = 2> (x, W)\n"
      "  y = BatchNormalization(c, scale, bias, mean, var)\n}\n");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseBnIntoConvPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op_type, "ConvTranspose");
  auto inputs = RandomInputs(before.graph, 32);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

class FuseBnIntoGemmTest : public ::testing::TestWithParam<int> {};

TEST_P(FuseBnIntoGemmTest, FoldsIntoGemmColumns) {
  const int trans_b = GetParam();
  std::vector<float> w = RandomFloats(20, 40, -1.0f, 1.0f);
  std::vector<float> c = RandomFloats(5, 41, -1.0f, 1.0f);
  BnParams p = RandomBn(5, 42);
  std::string wdims = trans_b ? "5,4" : "4,5";
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[3,4] x) => (float[3,5] y) {\n"
      "  W = Constant <value = float[" + wdims + "] {" + FloatList(w) + "}> ()\n"
      "  C = Constant <value = float[5] {" + FloatList(c) + "}> ()\n" +
      BnConstants(p, 5) +
      "  g = Gemm <transB = " + std::to_string(trans_b) +
      ", alpha = 0.5, beta = 2.0> (x, W, C)\n"
      "  y = BatchNormalization(g, scale, bias, mean, var)\n}\n");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseBnIntoConvPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].FindAttribute("beta")->f, 1.0f);
  auto inputs = RandomInputs(before.graph, 43);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(TransB, FuseBnIntoGemmTest, ::testing::Values(0, 1));

TEST(FuseBnIntoConvTest, DoesNotFuseWhenConvOutputHasTwoUsers) {
  std::vector<float> w = RandomFloats(54, 50, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 51);
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1,2,5,5] x) => (float[1,3,5,5] y, float[1,3,5,5] r) {\n"
      "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n" +
      BnConstants(p, 3) +
      "  c = Conv <pads = [1, 1, 1, 1]> (x, W)\n"
      "  y = BatchNormalization(c, scale, bias, mean, var)\n"
      "  r = Relu(c)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseBnIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("has other readers")));
}

TEST(FuseBnIntoConvTest, DoesNotFuseWhenBnParameterIsAGraphInput) {
  std::vector<float> w = RandomFloats(54, 55, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 56);
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1,2,5,5] x, float[3] scale) => (float[1,3,5,5] y) {\n"
      "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n"
      "  bias = Constant <value = float[3] {" + FloatList(p.bias) + "}> ()\n"
      "  mean = Constant <value = float[3] {" + FloatList(p.mean) + "}> ()\n"
      "  var = Constant <value = float[3] {" + FloatList(p.var) + "}> ()\n"
      "  c = Conv <pads = [1, 1, 1, 1]> (x, W)\n"
      "  y = BatchNormalization(c, scale, bias, mean, var)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseBnIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("'scale' is not an f32 constant")));
}

TEST(FuseBnIntoConvTest, LeavesSharedWeightUntouched) {
  std::vector<float> w = RandomFloats(54, 60, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 61);
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1,2,5,5] x) => (float[1,3,5,5] y, float[1,3,5,5] z) {\n"
      "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n" +
      BnConstants(p, 3) +
      "  c = Conv <pads = [1, 1, 1, 1]> (x, W)\n"
      "  y = BatchNormalization(c, scale, bias, mean, var)\n"
      "  z = Conv <pads = [1, 1, 1, 1]> (x, W)\n}\n");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseBnIntoConvPass(), after).status, IsOk());
  EXPECT_EQ(FloatsOf(*after.FindInitializer("W")), w);
  EXPECT_EQ(after.nodes[0].inputs[1], "c_weight");
  auto inputs = RandomInputs(before.graph, 62);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseBnIntoConvTest, SecondRunChangesNothing) {
  std::vector<float> w = RandomFloats(54, 70, -1.0f, 1.0f);
  BnParams p = RandomBn(3, 71);
  ir::Model before = ImportText(ConvBnText(w, {1, 2, 3}, p, R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  y = BatchNormalization(c, scale, bias, mean, var)
)"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseBnIntoConvPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseBnIntoConvPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
