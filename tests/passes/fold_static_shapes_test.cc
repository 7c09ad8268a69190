// Tests for fold-static-shapes: Shape/Size of static values and Gather of
// the static dims of a partly symbolic Shape become constants; a symbolic
// dim is a logged near miss; outputs are unchanged; a second run changes
// nothing.
#include "passes/fold/fold_static_shapes.h"

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

// The Reshape target PyTorch builds for x.reshape(x.shape[0], 3 * 4).
constexpr char kPartlySymbolic[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3,4] x) => (float[N,12] y) {
  i0 = Constant <value = int64 {0}> ()
  i12 = Constant <value = int64[2] {1, 2}> ()
  axes0 = Constant <value = int64[1] {0}> ()
  s = Shape(x)
  b = Gather <axis = 0> (s, i0)
  hw = Gather <axis = 0> (s, i12)
  p = ReduceProd <keepdims = 1> (hw)
  b1 = Unsqueeze(b, axes0)
  shape = Concat <axis = 0> (b1, p)
  y = Reshape(x, shape)
}
)";

TEST(FoldStaticShapesTest, FoldsGatherOfStaticDims) {
  ir::Model before = ImportText(kPartlySymbolic);
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3,4] x) => (float[N,12] y) {
  i0 = Constant <value = int64 {0}> ()
  i12 = Constant <value = int64[2] {1, 2}> ()
  axes0 = Constant <value = int64[1] {0}> ()
  hw = Constant <value = int64[2] {3, 4}> ()
  s = Shape(x)
  b = Gather <axis = 0> (s, i0)
  p = ReduceProd <keepdims = 1> (hw)
  b1 = Unsqueeze(b, axes0)
  shape = Concat <axis = 0> (b1, p)
  y = Reshape(x, shape)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldStaticShapesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.FindInitializer("hw")->provenance.ToString(), "hw");
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("selects symbolic dim 0")));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("'x' has symbolic dims")));
  auto inputs = RandomInputs(before.graph, 1, /*symbolic_dim=*/5);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FoldStaticShapesTest, FoldsShapeAndSizeOfStaticValue) {
  ir::Model before = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[6] y) {
  axes0 = Constant <value = int64[1] {0}> ()
  s = Shape(x)
  t = Reshape(x, s)
  n = Size(x)
  n1 = Unsqueeze(n, axes0)
  y = Reshape(t, n1)
}
)");
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[6] y) {
  axes0 = Constant <value = int64[1] {0}> ()
  s = Constant <value = int64[2] {2, 3}> ()
  n = Constant <value = int64 {6}> ()
  t = Reshape(x, s)
  n1 = Unsqueeze(n, axes0)
  y = Reshape(t, n1)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldStaticShapesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().nodes_removed, 2);
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FoldStaticShapesTest, DoesNotFoldAGraphOutput) {
  ir::Model before = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (int64[2] s) {
  s = Shape(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldStaticShapesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("output is a graph output")));
}

TEST(FoldStaticShapesTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(kPartlySymbolic);
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FoldStaticShapesPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FoldStaticShapesPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
