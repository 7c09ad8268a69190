// Tests for eliminate-transpose-pair: cancelling pairs disappear, other
// pairs become one Transpose with the composed perm, bit-exact; a pair
// whose first output has other readers only loses what it can; a second
// run changes nothing.
#include "passes/cleanup/eliminate_transpose_pair.h"

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

const char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

TEST(EliminateTransposePairTest, RemovesCancellingPair) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[2,3,4] y) {
  t = Transpose <perm = [1, 2, 0]> (x)
  u = Transpose <perm = [2, 0, 1]> (t)
  y = Relu(u)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[2,3,4] y) {
  y = Relu(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateTransposePairPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().nodes_removed, 2);
  EXPECT_EQ(run.context.stats().bytes_saved, 2 * 24 * 4);
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateTransposePairTest, MergesNonCancellingPair) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[4,3,2] y) {
  t = Transpose <perm = [1, 0, 2]> (x)
  y = Transpose <perm = [2, 0, 1]> (t)
}
)");
  // y[j] = x[p1[p2[j]]]: p1 = [1,0,2], p2 = [2,0,1] -> [2,1,0].
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[4,3,2] y) {
  y = Transpose <perm = [2, 1, 0]> (x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateTransposePairPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[t,y]");
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateTransposePairTest, KeepsMergeWhenFirstOutputHasAnotherReader) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[4,3,2] y, float[3,2,4] t) {
  t = Transpose <perm = [1, 0, 2]> (x)
  y = Transpose <perm = [2, 0, 1]> (t)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateTransposePairPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("output 't' of node 't' (Transpose) has other readers")));
}

TEST(EliminateTransposePairTest, CancellingPairKeepsSharedFirstTranspose) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3] x) => (float[2,3] y, float[3,2] t) {
  t = Transpose(x)
  u = Transpose(t)
  y = Neg(u)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[2,3] x) => (float[2,3] y, float[3,2] t) {
  t = Transpose(x)
  y = Neg(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateTransposePairPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  auto inputs = RandomInputs(before.graph, 3);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateTransposePairTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3,4] x) => (float[4,3,2] y) {
  t = Transpose <perm = [1, 0, 2]> (x)
  y = Transpose <perm = [2, 0, 1]> (t)
}
)");
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(EliminateTransposePairPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(EliminateTransposePairPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
