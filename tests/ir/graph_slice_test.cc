// ir/graph_slice: the nodes targets need from given values, with the inputs,
// outputs and initializers that part reads; which values depend on which.
#include "ir/graph_slice.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ir/ir_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::ir {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::F32;
using testing::MakeNode;

// x -> relu -> h0 -> [mm0 w0] -> m0 -> add0(h0, m0) -> h1 -> [mm1 w1] -> m1
//   -> add1(h1, m1) -> h2 -> [head wh] -> logits;   pos -> neg -> p (read by add1)
Graph Ladder() {
  Graph g;
  g.name = "ladder";
  g.inputs.push_back({"x", DType::kF32, Shape::FromDims({1, 2})});
  g.inputs.push_back({"pos", DType::kF32, Shape::FromDims({1, 2})});
  g.nodes.push_back(MakeNode("relu", "Relu", {"x"}, {"h0"}));
  g.nodes.push_back(MakeNode("mm0", "MatMul", {"h0", "w0"}, {"m0"}));
  g.nodes.push_back(MakeNode("add0", "Add", {"h0", "m0"}, {"h1"}));
  g.nodes.push_back(MakeNode("neg", "Neg", {"pos"}, {"p"}));
  g.nodes.push_back(MakeNode("mm1", "MatMul", {"h1", "w1"}, {"m1"}));
  g.nodes.push_back(MakeNode("add1", "Sum", {"h1", "m1", "p"}, {"h2"}));
  g.nodes.push_back(MakeNode("head", "MatMul", {"h2", "wh"}, {"logits"}));
  for (const char* w : {"w0", "w1", "wh"}) EXPECT_THAT(g.AddInitializer(F32(w, {2, 2})), IsOk());
  g.outputs.push_back({"logits", DType::kF32, Shape::FromDims({1, 2})});
  return g;
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> n;
  for (const Node& node : g.nodes) n.push_back(node.name);
  return n;
}

std::vector<std::string> Names(const std::vector<ValueInfo>& v) {
  std::vector<std::string> n;
  for (const ValueInfo& i : v) n.push_back(i.name);
  return n;
}

TEST(SliceGraphTest, FromAGivenValueOnlyTheLaterNodesRun) {
  const Graph g = Ladder();
  auto s = SliceGraph(g, {"h2"}, {"h1"});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(NodeNames(*s), ElementsAre("neg", "mm1", "add1"));
  // The graph input the slice still reads, then the given value, untyped.
  EXPECT_THAT(Names(s->inputs), ElementsAre("pos", "h1"));
  EXPECT_EQ(s->inputs[0].dtype, DType::kF32);
  EXPECT_EQ(s->inputs[1].dtype, DType::kUndefined);
  EXPECT_FALSE(s->inputs[1].shape.rank_known());
  EXPECT_THAT(Names(s->outputs), ElementsAre("h2"));
  ASSERT_EQ(s->initializers().size(), 1u);
  EXPECT_EQ(s->initializers()[0].name, "w1");
  // Shared bytes, not a copy.
  EXPECT_EQ(s->initializers()[0].data.data(), g.FindInitializer("w1")->data.data());
}

TEST(SliceGraphTest, WithoutGivenValuesItIsThePrefixTheTargetsNeed) {
  auto s = SliceGraph(Ladder(), {"m1", "h1"}, {});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(NodeNames(*s), ElementsAre("relu", "mm0", "add0", "mm1"));
  EXPECT_THAT(Names(s->inputs), ElementsAre("x"));
  EXPECT_THAT(Names(s->outputs), ElementsAre("m1", "h1"));
  std::vector<std::string> inits;
  for (const Tensor& t : s->initializers()) inits.push_back(t.name);
  EXPECT_THAT(inits, ElementsAre("w0", "w1"));
}

TEST(SliceGraphTest, GivenValuesTheSliceDoesNotReadAreNotInputs) {
  auto s = SliceGraph(Ladder(), {"p"}, {"h1", "h0"});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(NodeNames(*s), ElementsAre("neg"));
  EXPECT_THAT(Names(s->inputs), ElementsAre("pos"));
}

TEST(SliceGraphTest, AnInputDefaultingToAnInitializerKeepsIt) {
  Graph g = Ladder();
  g.inputs.push_back({"w1", DType::kF32, Shape::FromDims({2, 2})});
  auto s = SliceGraph(g, {"m1"}, {"h1"});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(Names(s->inputs), ElementsAre("w1", "h1"));
  ASSERT_EQ(s->initializers().size(), 1u);
  EXPECT_EQ(s->initializers()[0].name, "w1");
}

TEST(SliceGraphTest, AnUndefinedValueIsNamed) {
  EXPECT_THAT(SliceGraph(Ladder(), {"nope"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nope'")));
  Graph g = Ladder();
  g.nodes.push_back(MakeNode("late", "Add", {"logits", "ghost"}, {"y"}));
  EXPECT_THAT(SliceGraph(g, {"y"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ghost'")));
}

TEST(ValuesDependingOnTest, FollowsEveryReadIncludingOutOfOrderNodes) {
  Graph g = Ladder();
  EXPECT_THAT(ValuesDependingOn(g, {"w1"}), ElementsAre("h2", "logits", "m1", "w1"));
  EXPECT_THAT(ValuesDependingOn(g, {"pos"}), ElementsAre("h2", "logits", "p", "pos"));
  std::reverse(g.nodes.begin(), g.nodes.end());
  EXPECT_THAT(ValuesDependingOn(g, {"w0"}),
              ElementsAre("h1", "h2", "logits", "m0", "m1", "w0"));
}

}  // namespace
}  // namespace slimpack::ir
