// Tests for fold-constants: chains fold in one run, results equal the
// interpreter's, the size cap and non-constant inputs stop folding.
#include "passes/fold/fold_constants.h"

#include <cmath>
#include <cstring>

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/cleanup/eliminate_dead_nodes.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

TEST(FoldConstantsTest, FoldsChainOfConstantNodes) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[3] x) => (float[3] y) {
  a = Constant <value = float[3] {1, 2, 3}> ()
  b = Constant <value = float[3] {0.5, 0.25, 4}> ()
  c = Add(a, b)
  d = Sqrt(c)
  y = Mul(x, d)
}
)");
  // Expected: the same graph with c and d as initializers holding
  // a + b and sqrt(a + b), computed here independently.
  std::vector<float> d_values;
  for (float v : {1.0f + 0.5f, 2.0f + 0.25f, 3.0f + 4.0f}) d_values.push_back(std::sqrt(v));
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[3] x) => (float[3] y) {
  a = Constant <value = float[3] {1, 2, 3}> ()
  b = Constant <value = float[3] {0.5, 0.25, 4}> ()
  c = Constant <value = float[3] {1.5, 2.25, 7}> ()
  d = Constant <value = float[3] {)" + FloatList(d_values) + R"(}> ()
  y = Mul(x, d)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldConstantsPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().nodes_removed, 2);
  EXPECT_EQ(after.FindInitializer("d")->provenance.ToString(), "d");
  auto inputs = RandomInputs(before.graph, 3);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FoldConstantsTest, FoldsShapeArithmeticIntoInt64Initializer) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[6] x) => (float[2,3] y) {
  a = Constant <value = int64[1] {2}> ()
  b = Constant <value = int64[1] {3}> ()
  shape = Concat <axis = 0> (a, b)
  y = Reshape(x, shape)
}
)");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(FoldConstantsPass(), after).status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  const ir::Tensor* shape = after.FindInitializer("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->dtype, ir::DType::kI64);
  std::vector<int64_t> values(2);
  std::memcpy(values.data(), shape->data.data(), 16);
  EXPECT_THAT(values, ElementsAre(2, 3));
}

TEST(FoldConstantsTest, DoesNotFoldResultLargerThanCap) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[64] x) => (float[64] y) {
  a = Constant <value = float[1] {1}> ()
  n = Constant <value = int64[1] {64}> ()
  big = Expand(a, n)
  y = Add(x, big)
}
)");
  ir::Graph after = before.graph;
  FoldConstantsOptions options;
  options.max_output_bytes = 255;  // Expand's result is 256 bytes
  PassRun run = RunPass(FoldConstantsPass(options), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("256 bytes > max_output_bytes 255")));
  options.max_output_bytes = 256;
  ASSERT_THAT(RunPass(FoldConstantsPass(options), after).status, IsOk());
  EXPECT_EQ(after.nodes.size(), 1u);
}

TEST(FoldConstantsTest, DoesNotFoldNodeWithAGraphInput) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[3] x) => (float[3] y) {
  a = Constant <value = float[3] {1, 2, 3}> ()
  y = Add(x, a)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldConstantsPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_FALSE(run.context.changed());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

TEST(FoldConstantsTest, DoesNotFoldInitializerOverriddenByGraphInput) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[3] x) => (float[3] y) {
  a = Constant <value = float[3] {1, 2, 3}> ()
  b = Neg(a)
  y = Add(x, b)
}
)");
  ir::Graph after = before.graph;
  after.inputs.push_back(ir::ValueInfo{"a", ir::DType::kF32, ir::Shape::FromDims({3})});
  ir::Graph unchanged = after;
  PassRun run = RunPass(FoldConstantsPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(unchanged));
}

TEST(FoldConstantsTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[3] x) => (float[3] y) {
  a = Constant <value = float[3] {1, 2, 3}> ()
  b = Neg(a)
  y = Add(x, b)
}
)");
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FoldConstantsPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FoldConstantsPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

TEST(FoldConstantsTest, FailsNamingNodeWhoseConstantInputsCannotRun) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[6] x) => (float[6] y) {
  a = Constant <value = float[6] {1, 2, 3, 4, 5, 6}> ()
  shape = Constant <value = int64[2] {4, 4}> ()
  bad = Reshape(a, shape)
  flat = Constant <value = int64[1] {6}> ()
  back = Reshape(bad, flat)
  y = Add(x, back)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FoldConstantsPass(), after);
  EXPECT_THAT(run.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'bad'")));
}

}  // namespace
}  // namespace slimpack::passes
