// Tests for fuse-matmul-add: 2-D MatMul + bias becomes Gemm (either Add
// operand order), batched MatMul + bias becomes slimpack.MatMulAdd
// (bit-exact), non-constant or misshapen bias is kept.
#include "passes/fuse/fuse_matmul_add.h"

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

// Gemm may add the bias inside the accumulation; values are O(1).
constexpr double kTolerance = 1e-6;

std::string Text(const std::string& x_type, const std::string& y_type,
                 const std::string& body) {
  std::vector<float> w = RandomFloats(12, 1, -1.0f, 1.0f);
  return "<ir_version: 8, opset_import: [\"\" : 17]>\n"
         "g (" + x_type + " x) => (" + y_type + " y) {\n"
         "  W = Constant <value = float[4,3] {" + FloatList(w) + "}> ()\n"
         "  b = Constant <value = float[3] {0.5, -0.25, 1}> ()\n" + body + "}\n";
}

TEST(FuseMatMulAddTest, RewritesTwoDimensionalMatMulAddAsGemm) {
  for (const char* add : {"  y = Add(m, b)\n", "  y = Add(b, m)\n"}) {
    ir::Model before = ImportText(Text("float[N,4]", "float[N,3]",
                                       std::string("  m = MatMul(x, W)\n") + add));
    ir::Model expected = ImportText(Text("float[N,4]", "float[N,3]", "  y = Gemm(x, W, b)\n"));
    NameNode(expected.graph, "y", "m");
    ir::Graph after = before.graph;
    PassRun run = RunPass(FuseMatMulAddPass(), after);
    ASSERT_THAT(run.status, IsOk());
    EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph)) << add;
    EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[m,y]");
    auto inputs = RandomInputs(before.graph, 2);
    EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
  }
}

TEST(FuseMatMulAddTest, KeepsBatchedMatMulByDefault) {
  ir::Model before = ImportText(Text("float[2,5,4]", "float[2,5,3]",
                                     "  m = MatMul(x, W)\n  y = Add(m, b)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseMatMulAddPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("has rank 3, Gemm needs 2")));
}

TEST(FuseMatMulAddTest, RewritesBatchedMatMulAddAsSlimpackMatMulAdd) {
  ir::Model before = ImportText(Text("float[2,5,4]", "float[2,5,3]",
                                     "  m = MatMul(x, W)\n  y = Add(b, m)\n"));
  ir::Model expected = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17, \"slimpack\" : 1]>\n"
      "g (float[2,5,4] x) => (float[2,5,3] y) {\n"
      "  W = Constant <value = float[4,3] {" + FloatList(RandomFloats(12, 1, -1.0f, 1.0f)) +
      "}> ()\n"
      "  b = Constant <value = float[3] {0.5, -0.25, 1}> ()\n"
      "  y = slimpack.MatMulAdd(x, W, b)\n}\n");
  NameNode(expected.graph, "y", "m");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseMatMulAddPass({/*batched=*/true}), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().bytes_saved, 2 * 5 * 3 * 4);
  auto inputs = RandomInputs(before.graph, 3);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseMatMulAddTest, DoesNotFuseWhenMatMulOutputHasTwoUsers) {
  ir::Model before = ImportText(Text("float[2,4]", "float[2,3]",
                                     "  m = MatMul(x, W)\n  a = Add(m, b)\n  y = Mul(a, m)\n"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseMatMulAddPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("MatMul output has other readers")));
}

TEST(FuseMatMulAddTest, DoesNotFuseBiasOfWrongShape) {
  ir::Model before = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,3] y) {
  W = Constant <value = float[4,3] {1,2,3,4,5,6,7,8,9,10,11,12}> ()
  b = Constant <value = float[2,1] {1, 2}> ()
  m = MatMul(x, W)
  y = Add(m, b)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseMatMulAddPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("has shape [2,1], expected [3] or [1,3]")));
}

TEST(FuseMatMulAddTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Text("float[2,4]", "float[2,3]",
                                     "  m = MatMul(x, W)\n  y = Add(m, b)\n"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseMatMulAddPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseMatMulAddPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
