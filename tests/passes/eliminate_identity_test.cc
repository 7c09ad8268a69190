// Tests for eliminate-identity: whole-graph expectations, bit-exact outputs,
// near misses that must be kept, idempotence.
#include "passes/cleanup/eliminate_identity.h"

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

constexpr char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

TEST(EliminateIdentityTest, RemovesIdentityDropoutCastAndReshapeChain) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3] x) => (float[2,3] y) {
  shape = Constant <value = int64[2] {2, 3}> ()
  a = Identity(x)
  b = Dropout(a)
  c = Cast <to = 1> (b)
  d = Reshape(c, shape)
  y = Relu(d)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[2,3] x) => (float[2,3] y) {
  shape = Constant <value = int64[2] {2, 3}> ()
  y = Relu(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_TRUE(run.context.changed());
  EXPECT_EQ(run.context.stats().nodes_removed, 4);
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateIdentityTest, RenamesProducerWhenOutputIsGraphOutput) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  a = Relu(x)
  y = Identity(a)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  y = Relu(x)
}
)");
  NameNode(expected.graph, "y", "a");
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(EliminateIdentityPass(), after).status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[a,y]");
}

TEST(EliminateIdentityTest, KeepsIdentityFromGraphInputToGraphOutput) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  y = Identity(x)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_FALSE(run.context.changed());
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("is a graph output")));
}

TEST(EliminateIdentityTest, DoesNotRemoveReshapeThatChangesShape) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,3] x) => (float[3,2] y) {
  shape = Constant <value = int64[2] {3, -1}> ()
  d = Reshape(x, shape)
  y = Relu(d)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("changes the shape")));
}

TEST(EliminateIdentityTest, DoesNotRemoveCastToAnotherDType) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (int64[4] y) {
  c = Cast <to = 7> (x)
  y = Identity(c)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op_type, "Cast");
  EXPECT_EQ(after.nodes[0].outputs[0], "y");
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("casts to another dtype")));
}

TEST(EliminateIdentityTest, DoesNotRemoveDropoutInTrainingMode) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  ratio = Constant <value = float {0.5}> ()
  training = Constant <value = bool {1}> ()
  d = Dropout(x, ratio, training)
  y = Relu(d)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("training_mode is true")));
}

TEST(EliminateIdentityTest, DoesNotRemoveDropoutWhoseMaskIsUsed) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y, bool[4] mask) {
  d, mask = Dropout(x)
  y = Relu(d)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateIdentityPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("mask output 'mask' is used")));
}

TEST(EliminateIdentityTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  a = Identity(x)
  b = Identity(a)
  y = Relu(b)
}
)");
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(EliminateIdentityPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(EliminateIdentityPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
  EXPECT_EQ(once.nodes.size(), 1u);
}

}  // namespace
}  // namespace slimpack::passes
