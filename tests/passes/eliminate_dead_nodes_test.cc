// Tests for eliminate-dead-nodes: dead chains and unused initializers go,
// live subgraph reads and overridable initializers stay.
#include "passes/cleanup/eliminate_dead_nodes.h"

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

TEST(EliminateDeadNodesTest, RemovesDeadChainAndItsInitializers) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  w = Constant <value = float[4] {1, 2, 3, 4}> ()
  unused_w = Constant <value = float[4] {5, 6, 7, 8}> ()
  dead1 = Mul(x, unused_w)
  dead2 = Sigmoid(dead1)
  y = Add(x, w)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  w = Constant <value = float[4] {1, 2, 3, 4}> ()
  y = Add(x, w)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateDeadNodesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().nodes_removed, 2);
  // Two f32[4] intermediates plus the 16-byte unused initializer.
  EXPECT_EQ(run.context.stats().bytes_saved, 16 + 16 + 16);
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateDeadNodesTest, KeepsInitializerThatIsAlsoAGraphInput) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  y = Relu(x)
}
)");
  // An IR<4-style initializer listed as a graph input: part of the
  // interface even when no node reads it.
  ir::Graph after = before.graph;
  ir::Tensor t;
  t.name = "override_me";
  t.dtype = ir::DType::kF32;
  t.dims = {1};
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(4, 0));
  ASSERT_THAT(after.AddInitializer(t), IsOk());
  after.inputs.push_back(ir::ValueInfo{"override_me", ir::DType::kF32, ir::Shape::FromDims({1})});
  PassRun run = RunPass(EliminateDeadNodesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_NE(after.FindInitializer("override_me"), nullptr);
  EXPECT_FALSE(run.context.changed());
}

TEST(EliminateDeadNodesTest, KeepsValuesReadOnlyFromSubgraphs) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x, bool c) => (float[4] y) {
  outer = Relu(x)
  y = If (c) <
    then_branch = t () => (float[4] a) { a = Identity(outer) },
    else_branch = e () => (float[4] b) { b = Identity(x) }
  >
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateDeadNodesPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_FALSE(run.context.changed());
}

TEST(EliminateDeadNodesTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[4] x) => (float[4] y) {
  dead = Sigmoid(x)
  y = Relu(x)
}
)");
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(EliminateDeadNodesPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(EliminateDeadNodesPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

TEST(EliminateDeadNodesTest, FailsOnCycleNamingANode) {
  ir::Graph graph;
  graph.name = "cyclic";
  graph.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({1})});
  graph.outputs.push_back({"b", ir::DType::kF32, ir::Shape::FromDims({1})});
  ir::Node a;
  a.name = "node_a";
  a.op_type = "Add";
  a.inputs = {"x", "b"};
  a.outputs = {"a"};
  ir::Node b;
  b.name = "node_b";
  b.op_type = "Relu";
  b.inputs = {"a"};
  b.outputs = {"b"};
  graph.nodes = {a, b};
  PassRun run = RunPass(EliminateDeadNodesPass(), graph);
  EXPECT_THAT(run.status, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("node_")));
}

}  // namespace
}  // namespace slimpack::passes
