// Tests for fuse-gelu: erf and tanh forms (both tails, operands either
// order) become one Gelu; slimpack.Gelu below opset 20; outputs within
// 1e-6; near misses; idempotence.
#include "passes/fuse/fuse_gelu.h"

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

constexpr double kTolerance = 1e-6;
constexpr char kConstants[] =
    "  sqrt2 = Constant <value = float {1.4142135381698608}> ()\n"
    "  one = Constant <value = float {1.0}> ()\n"
    "  half = Constant <value = float {0.5}> ()\n"
    "  three = Constant <value = float {3.0}> ()\n"
    "  coef = Constant <value = float {0.044715}> ()\n"
    "  k = Constant <value = float {0.7978845608}> ()\n";

std::string Text(const std::string& body, const std::string& opsets = "\"\" : 17") {
  return "<ir_version: 8, opset_import: [" + opsets + "]>\n"
         "g (float[2,8] x) => (float[2,8] y) {\n" + std::string(kConstants) + body + "}\n";
}

constexpr char kErfForm[] =
    "  a = Div(x, sqrt2)\n  e = Erf(a)\n  b = Add(e, one)\n"
    "  c = Mul(x, b)\n  y = Mul(c, half)\n";

TEST(FuseGeluTest, FusesErfFormIntoSlimpackGeluBeforeOpset20) {
  ir::Model before = ImportText(Text(kErfForm));
  ir::Model expected = ImportText(
      Text("  y = slimpack.Gelu <approximate = \"none\"> (x)\n", "\"\" : 17, \"slimpack\" : 1"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[a,e,b,c,y]");
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseGeluTest, EmitsOnnxGeluFromOpset20) {
  ir::Model before = ImportText(Text(kErfForm));
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FuseGeluPass(), after, /*opset=*/20).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].domain, "");
  EXPECT_EQ(after.nodes[0].op_type, "Gelu");
}

TEST(FuseGeluTest, FusesTanhFormWithHalfFirstTail) {
  ir::Model before = ImportText(Text(
      "  p = Pow(x, three)\n  q = Mul(coef, p)\n  r = Add(x, q)\n  s = Mul(r, k)\n"
      "  t = Tanh(s)\n  b = Add(one, t)\n  h = Mul(x, half)\n  y = Mul(h, b)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op_type, "Gelu");
  EXPECT_EQ(after.nodes[0].FindAttribute("approximate")->s, "tanh");
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[p,q,r,s,t,b,h,y]");
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseGeluTest, DoesNotFuseWrongScale) {
  ir::Model before = ImportText(Text(
      "  a = Div(x, one)\n  e = Erf(a)\n  b = Add(e, one)\n  c = Mul(x, b)\n  y = Mul(c, half)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("not 1 + erf/tanh(x)")));
}

TEST(FuseGeluTest, DoesNotFuseWhenErfOutputHasTwoUsers) {
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[2,8] x) => (float[2,8] y, float[2,8] e) {\n" + std::string(kConstants) + kErfForm + "}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

TEST(FuseGeluTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Text(kErfForm));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseGeluPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseGeluPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
