// Tests for fuse-conv-activation: whole fused graph, bit-exact outputs for
// every supported activation (the fused kernel runs the same kernels), near
// misses and idempotence.
#include "passes/fuse/fuse_conv_activation.h"

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

std::string ConvText(const std::string& outputs, const std::string& body,
                     const std::string& extra_opsets = "") {
  std::vector<float> w = RandomFloats(54, 5, -1.0f, 1.0f);
  return "<ir_version: 8, opset_import: [\"\" : 17" + extra_opsets + "]>\n"
         "g (float[1,2,5,5] x) => (" + outputs + ") {\n"
         "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n"
         "  B = Constant <value = float[3] {0.25, -0.5, 1}> ()\n" + body + "}\n";
}

TEST(FuseConvActivationTest, FusesConvRelu) {
  ir::Model before = ImportText(ConvText("float[1,3,5,5] y", R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  y = Relu(c)
)"));
  ir::Model expected = ImportText(ConvText("float[1,3,5,5] y", R"(
  y = slimpack.FusedConv <pads = [1, 1, 1, 1], activation = "Relu"> (x, W, B)
)", ", \"slimpack\" : 1"));
  NameNode(expected.graph, "y", "c");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseConvActivationPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[c,y]");
  auto inputs = RandomInputs(before.graph, 6);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

// Each activation is bit-exact after fusion.
class FuseConvActivationKindTest
    : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(FuseConvActivationKindTest, OutputsAreBitExact) {
  const auto& [activation_line, expected_params] = GetParam();
  ir::Model before = ImportText(ConvText("float[1,3,5,5] y",
      "  lo = Constant <value = float {-0.5}> ()\n"
      "  hi = Constant <value = float {0.75}> ()\n"
      "  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)\n" + activation_line + "\n"));
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseConvActivationPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op_type, "FusedConv");
  const ir::Attribute* params = after.nodes[0].FindAttribute("activation_params");
  std::string printed;
  if (params != nullptr) {
    for (float f : params->floats) printed += (printed.empty() ? "" : ",") + FloatList({f});
  }
  EXPECT_EQ(printed, expected_params);
  auto inputs = RandomInputs(before.graph, 7);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Activations, FuseConvActivationKindTest,
    ::testing::Values(std::make_pair("  y = Relu(c)", ""),
                      std::make_pair("  y = Sigmoid(c)", ""),
                      std::make_pair("  y = HardSwish(c)", ""),
                      std::make_pair("  y = LeakyRelu <alpha = 0.2> (c)", "0.200000003"),
                      std::make_pair("  y = Clip(c, lo, hi)", "-0.5,0.75"),
                      std::make_pair("  y = Clip(c, , hi)", "-inf,0.75")));

TEST(FuseConvActivationTest, FusesGemmActivation) {
  ir::Model before = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,2] y) {
  W = Constant <value = float[2,3] {0.5, -1, 2, 1.5, 0.25, -0.75}> ()
  C = Constant <value = float[2] {0.1, -0.2}> ()
  m = Gemm <transB = 1> (x, W, C)
  y = Sigmoid(m)
}
)");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseConvActivationPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].domain, "slimpack");
  EXPECT_EQ(after.nodes[0].op_type, "FusedGemm");
  auto inputs = RandomInputs(before.graph, 8);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseConvActivationTest, DoesNotFuseWhenConvOutputHasTwoUsers) {
  ir::Model before = ImportText(ConvText("float[1,3,5,5] y, float[1,3,5,5] c", R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  y = Relu(c)
)"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseConvActivationPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("has other readers")));
}

TEST(FuseConvActivationTest, DoesNotFuseClipWithRuntimeBound) {
  ir::Model before = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x, float hi) => (float[2,2] y) {
  W = Constant <value = float[2,3] {0.5, -1, 2, 1.5, 0.25, -0.75}> ()
  m = Gemm <transB = 1> (x, W)
  y = Clip(m, , hi)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseConvActivationPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("'hi' is not a scalar constant")));
}

TEST(FuseConvActivationTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(ConvText("float[1,3,5,5] y", R"(
  c = Conv <pads = [1, 1, 1, 1]> (x, W, B)
  r = Relu(c)
  y = Relu(r)
)"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseConvActivationPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseConvActivationPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
  EXPECT_EQ(once.nodes.size(), 2u);
}

}  // namespace
}  // namespace slimpack::passes
