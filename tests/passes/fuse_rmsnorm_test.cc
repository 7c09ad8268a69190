// Tests for fuse-rmsnorm: the PyTorch decompositions (Pow or x*x, Div or
// Reciprocal+Mul, with and without Casts to float) become one
// slimpack.RMSNorm; the Div form is bit-exact, the Reciprocal form within
// 1e-5; near misses are logged with the reason; a second run changes
// nothing.
#include "passes/fuse/fuse_rmsnorm.h"

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

// Reciprocal then Mul rounds differently from one Div.
constexpr double kTolerance = 1e-5;

struct Variant {
  bool cast = false;        // Cast(to=FLOAT) around the normalization
  bool mul_square = false;  // Mul(x, x) instead of Pow(x, 2)
  bool reciprocal = false;  // Mul(x, Reciprocal(s)) instead of Div(x, s)
  bool rsqrt_div = false;   // Mul(x, Div(1, s)), torch.rsqrt's export
  std::string two = "2.0";
  std::string extra_output;  // e.g. ", float[2,3,8] xc"
};

const char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17, \"slimpack\" : 1]>\n";

std::string Constants() {
  return "  two = Constant <value = float {2.0}> ()\n"
         "  eps = Constant <value = float {1e-6}> ()\n"
         "  w = Constant <value = float[8] {" +
         FloatList(RandomFloats(8, 3, 0.5f, 1.5f)) + "}> ()\n";
}

std::string Decomposed(const Variant& v) {
  std::string s = std::string(kHeader) +
                  "g (float[2,3,8] x) => (float[2,3,8] y" + v.extra_output + ") {\n" +
                  Constants();
  if (v.two != "2.0") s += "  three = Constant <value = float {" + v.two + "}> ()\n";
  std::string xc = v.cast ? "xc" : "x";
  if (v.cast) s += "  xc = Cast <to = 1> (x)\n";
  s += v.mul_square ? "  sq = Mul(" + xc + ", " + xc + ")\n"
                    : "  sq = Pow(" + xc + ", " + (v.two != "2.0" ? "three" : "two") + ")\n";
  s += "  var = ReduceMean <axes = [-1]> (sq)\n"
       "  ve = Add(eps, var)\n"
       "  s = Sqrt(ve)\n";
  if (v.rsqrt_div) {
    s += "  one = Constant <value = float {1.0}> ()\n"
         "  r = Div(one, s)\n  n = Mul(r, " + xc + ")\n";
  } else if (v.reciprocal) {
    s += "  r = Reciprocal(s)\n  n = Mul(" + xc + ", r)\n";
  } else {
    s += "  n = Div(" + xc + ", s)\n";
  }
  if (v.cast) s += "  nc = Cast <to = 1> (n)\n";
  s += std::string("  y = Mul(") + (v.cast ? "nc" : "n") + ", w)\n}\n";
  return s;
}

ir::Model Expected() {
  ir::Model expected = ImportText(std::string(kHeader) +
                                  "g (float[2,3,8] x) => (float[2,3,8] y) {\n" + Constants() +
                                  "  y = slimpack.RMSNorm <axis = -1, epsilon = 1e-6> (x, w)\n}\n");
  return expected;
}

TEST(FuseRmsNormTest, FusesDivFormBitExact) {
  ir::Model before = ImportText(Decomposed({}));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseRmsNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(Expected().graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[sq,var,ve,s,n,y]");
  EXPECT_EQ(run.context.stats().nodes_removed, 5);
  // 5 intermediates of 2*3*8 or 2*3*1 floats no longer exist.
  EXPECT_EQ(run.context.stats().bytes_saved, (48 + 6 + 6 + 6 + 48) * 4);
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

// A Variant with every field named (aggregate initialisation of a prefix
// leaves -Wmissing-field-initializers warnings).
Variant Form(bool cast, bool mul_square, bool reciprocal, bool rsqrt_div) {
  Variant v;
  v.cast = cast;
  v.mul_square = mul_square;
  v.reciprocal = reciprocal;
  v.rsqrt_div = rsqrt_div;
  return v;
}

class FuseRmsNormVariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(FuseRmsNormVariantTest, FusesAndKeepsOutputs) {
  ir::Model before = ImportText(Decomposed(GetParam()));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseRmsNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  // The Div(1, s) form leaves its constant 1 behind (dead-node
  // elimination drops it); compare the rest.
  after.RemoveInitializer("one");
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(Expected().graph));
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, FuseRmsNormVariantTest,
    ::testing::Values(Form(/*cast=*/true, false, false, false),
                      Form(false, /*mul_square=*/true, false, false),
                      Form(false, false, /*reciprocal=*/true, false),
                      Form(true, true, true, false),
                      Form(true, false, false, /*rsqrt_div=*/true)));

TEST(FuseRmsNormTest, DoesNotFuseWhenExponentIsNotTwo) {
  Variant v;
  v.two = "3.0";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseRmsNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("Pow exponent is not the constant 2")));
}

TEST(FuseRmsNormTest, DoesNotFuseWhenVarianceHasAnotherReader) {
  Variant v;
  v.extra_output = ", float[2,3,1] var";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseRmsNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(),
              Contains(HasSubstr("epsilon Add has no single-use ReduceMean operand")));
}

// The input Cast also feeds a graph output: it stays, and the fused op
// reads its output.
TEST(FuseRmsNormTest, KeepsAnInputCastWithOtherReaders) {
  Variant v;
  v.cast = true;
  v.extra_output = ", float[2,3,8] xc";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseRmsNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  ASSERT_EQ(after.nodes.size(), 2u);
  EXPECT_EQ(after.nodes[0].op_type, "Cast");
  EXPECT_EQ(after.nodes[1].op_type, "RMSNorm");
  EXPECT_EQ(after.nodes[1].inputs, (std::vector<std::string>{"xc", "w"}));
  auto inputs = RandomInputs(before.graph, 5);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseRmsNormTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Decomposed({}));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseRmsNormPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseRmsNormPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
