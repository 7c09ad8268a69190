// Tests for fold-add-into-conv: a per-channel constant Add after Conv
// becomes the Conv bias (added to an existing bias, or new), outputs within
// 1e-5; an addend broadcasting along another axis is a logged near miss; a
// second run changes nothing.
#include "passes/fold/fold_add_into_conv.h"

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr double kTolerance = 1e-5;

std::string ConvText(const std::string& addend, const std::string& conv_bias,
                     const std::string& tail, bool with_conv = true) {
  std::vector<float> w = RandomFloats(54, 5, -1.0f, 1.0f);
  return "<ir_version: 8, opset_import: [\"\" : 17]>\n"
         "g (float[1,2,5,5] x) => (float[1,3,5,5] y) {\n"
         "  W = Constant <value = float[3,2,3,3] {" + FloatList(w) + "}> ()\n"
         "  B = Constant <value = float[3] {0.25, -0.5, 1}> ()\n"
         "  b = Constant <value = " + addend + "> ()\n" +
         (with_conv ? "  c = Conv <pads = [1, 1, 1, 1]> (x, W" + conv_bias + ")\n" : "") +
         tail + "}\n";
}

TEST(FoldAddIntoConvTest, AddsToExistingBias) {
  ir::Model before = ImportText(ConvText("float[1,3,1,1] {0.5, -1, 2}", ", B", "  y = Add(b, c)\n"));
  ir::Model expected = ImportText(
      ConvText("float[1,3,1,1] {0.5, -1, 2}", ", B",
               "  B_bias_folded = Constant <value = float[3] {0, 0, 0}> ()\n"
               "  y = Conv <pads = [1, 1, 1, 1]> (x, W, B_bias_folded)\n",
               /*with_conv=*/false));
  ir::Graph want = expected.graph;
  NameNode(want, "y", "c");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldAddIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(PrintMasked(after, {"B_bias_folded"}), PrintMasked(want, {"B_bias_folded"}));
  EXPECT_THAT(FloatsOf(*after.FindInitializer("B_bias_folded")),
              ElementsAre(0.25f + 0.5f, -0.5f - 1.0f, 1.0f + 2.0f));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[c,y]");
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FoldAddIntoConvTest, CreatesBiasWhenConvHasNone) {
  ir::Model before = ImportText(ConvText("float[3,1,1] {0.5, -1, 2}", "", "  y = Add(c, b)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldAddIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].inputs, (std::vector<std::string>{"x", "W", "W_bias_folded"}));
  EXPECT_THAT(FloatsOf(*after.FindInitializer("W_bias_folded")), ElementsAre(0.5f, -1.0f, 2.0f));
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FoldAddIntoConvTest, DoesNotFoldAddendAlongWidth) {
  ir::Model before = ImportText(
      ConvText("float[1,1,1,5] {1, 2, 3, 4, 5}", ", B", "  y = Add(c, b)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldAddIntoConvPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("does not broadcast along channels only")));
}

TEST(FoldAddIntoConvTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(ConvText("float[1,3,1,1] {0.5, -1, 2}", ", B", "  y = Add(b, c)\n"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FoldAddIntoConvPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FoldAddIntoConvPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
