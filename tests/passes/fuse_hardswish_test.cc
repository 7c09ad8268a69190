// Tests for fuse-hardswish: x*HardSigmoid(x) and x*Clip(x+3,0,6)/6 (Div or
// Mul by 1/6) become HardSwish at opset >= 14 and slimpack.HardSwish below;
// outputs within 1e-6; near misses logged; a second run changes nothing.
#include "passes/fuse/fuse_hardswish.h"

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

// HardSwish computes x/6 + 0.5, the decomposition (x + 3) / 6: one
// rounding apart for |x| <= 2.
constexpr double kTolerance = 1e-6;

std::string Header(int opset) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) +
         ", \"slimpack\" : 1]>\n";
}

std::string ClipForm(int opset, const std::string& hi, const std::string& tail) {
  return Header(opset) + R"(g (float[2,6] x) => (float[2,6] y) {
  three = Constant <value = float {3.0}> ()
  zero = Constant <value = float {0.0}> ()
  six = Constant <value = float {)" + hi + R"(}> ()
  k = Constant <value = float {6.0}> ()
  a = Add(x, three)
  c = Clip(a, zero, six)
  m = Mul(x, c)
  )" + tail + "\n}\n";
}

std::string ClipConstants(const std::string& extra = "") {
  return R"(  three = Constant <value = float {3.0}> ()
  zero = Constant <value = float {0.0}> ()
  six = Constant <value = float {6.0}> ()
  k = Constant <value = float {6.0}> ()
)" + extra;
}

TEST(FuseHardSwishTest, FusesHardSigmoidFormAtOpset17) {
  ir::Model before = ImportText(Header(17) + R"(g (float[2,6] x) => (float[2,6] y) {
  h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (x)
  y = Mul(h, x)
}
)");
  ir::Model expected = ImportText(Header(17) + R"(g (float[2,6] x) => (float[2,6] y) {
  y = HardSwish(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseHardSwishPass(), after, 17);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[h,y]");
  auto inputs = RandomInputs(before.graph, 9);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseHardSwishTest, FusesClipDivFormAsSlimpackOpBelowOpset14) {
  ir::Model before = ImportText(ClipForm(12, "6.0", "y = Div(m, k)"));
  ir::Model expected = ImportText(Header(12) + "g (float[2,6] x) => (float[2,6] y) {\n" +
                                  ClipConstants() + "  y = slimpack.HardSwish(x)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseHardSwishPass(), after, 12);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[a,c,m,y]");
  EXPECT_EQ(run.context.required_opset(), 0);  // no opset raise below 14
  auto inputs = RandomInputs(before.graph, 10);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs, 12), Evaluate(after, inputs, 12)),
            kTolerance);
}

TEST(FuseHardSwishTest, FusesClipTimesOneSixthAtOpset14) {
  ir::Model before = ImportText(ClipForm(14, "6.0",
                                         "sixth = Constant <value = float {0.16666667}> ()\n"
                                         "  y = Mul(sixth, m)"));
  ir::Model expected = ImportText(
      Header(14) + "g (float[2,6] x) => (float[2,6] y) {\n" +
      ClipConstants("  sixth = Constant <value = float {0.16666667}> ()\n") +
      "  y = HardSwish(x)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseHardSwishPass(), after, 14);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  auto inputs = RandomInputs(before.graph, 11);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs, 14), Evaluate(after, inputs, 14)),
            kTolerance);
}

TEST(FuseHardSwishTest, DoesNotFuseWhenClipIsNotRelu6) {
  ir::Model before = ImportText(ClipForm(14, "5.0", "y = Div(m, k)"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseHardSwishPass(), after, 14);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("not [0, 6]")));
}

TEST(FuseHardSwishTest, DoesNotFuseHardSigmoidWithOtherSlope) {
  ir::Model before = ImportText(Header(17) + R"(g (float[2,6] x) => (float[2,6] y) {
  h = HardSigmoid <alpha = 0.2, beta = 0.5> (x)
  y = Mul(x, h)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseHardSwishPass(), after, 17);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("are not 1/6 and 0.5")));
}

TEST(FuseHardSwishTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(ClipForm(14, "6.0", "y = Div(m, k)"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseHardSwishPass(), once, 14).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseHardSwishPass(), twice, 14);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
