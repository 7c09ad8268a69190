#include "ir/graph.h"

#include <algorithm>

#include "ir/printer.h"
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

// Nodes here carry their provenance, which the printer shows.
Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
              std::vector<std::string> out) {
  Node n = testing::MakeNode(std::move(name), std::move(op), std::move(in), std::move(out));
  n.provenance = Provenance::FromNode(n.name);
  return n;
}

TEST(GraphTest, TopologicalOrderIsStableAndSortsOutOfOrderNodes) {
  Graph g;
  g.name = "g";
  g.inputs.push_back({"x", DType::kF32, Shape::FromDims({2})});
  // c consumes b's output but is listed first.
  g.nodes.push_back(MakeNode("c", "Relu", {"b_out"}, {"c_out"}));
  g.nodes.push_back(MakeNode("a", "Neg", {"x"}, {"a_out"}));
  g.nodes.push_back(MakeNode("b", "Abs", {"a_out"}, {"b_out"}));
  g.outputs.push_back({"c_out", DType::kF32, Shape::FromDims({2})});
  auto order = g.TopologicalOrder();
  ASSERT_THAT(order, IsOk());
  EXPECT_THAT(*order, ElementsAre(1, 2, 0));
  ASSERT_THAT(g.SortTopologically(), IsOk());
  EXPECT_EQ(g.nodes[0].name, "a");
  EXPECT_EQ(g.nodes[2].name, "c");
}

TEST(GraphTest, CycleIsReportedWithNodeName) {
  Graph g;
  g.name = "g";
  g.nodes.push_back(MakeNode("p", "Neg", {"q_out"}, {"p_out"}));
  g.nodes.push_back(MakeNode("q", "Neg", {"p_out"}, {"q_out"}));
  EXPECT_THAT(g.TopologicalOrder(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cycle through node 'p'")));
}

TEST(GraphTest, NodeReadingTwoOutputsOfOneProducerIsNotACycle) {
  // The ORT dynamic-quantization pattern: MatMulInteger reads y and
  // y_zero_point of one DynamicQuantizeLinear. Counting values rather than
  // producers used to leave it waiting forever ("cycle"). Names are empty,
  // as exporters leave them.
  Graph g;
  g.name = "g";
  g.inputs.push_back({"x", DType::kF32, Shape::FromDims({2, 2})});
  g.inputs.push_back({"w", DType::kU8, Shape::FromDims({2, 2})});
  g.nodes.push_back(MakeNode("", "DynamicQuantizeLinear", {"x"}, {"q", "qs", "qz"}));
  g.nodes.push_back(MakeNode("", "MatMulInteger", {"q", "w", "qz"}, {"acc"}));
  g.nodes.push_back(MakeNode("", "Split", {"acc"}, {"a", "b"}));
  g.nodes.push_back(MakeNode("", "Add", {"a", "b"}, {"y"}));
  g.outputs.push_back({"y", DType::kI32, Shape()});
  auto order = g.TopologicalOrder();
  ASSERT_THAT(order, IsOk());
  EXPECT_THAT(*order, ElementsAre(0, 1, 2, 3));
  // Listed backwards, it is still sorted.
  std::reverse(g.nodes.begin(), g.nodes.end());
  order = g.TopologicalOrder();
  ASSERT_THAT(order, IsOk());
  EXPECT_THAT(*order, ElementsAre(3, 2, 1, 0));
}

TEST(GraphTest, CycleThroughUnnamedNodesNamesTheIndex) {
  Graph g;
  g.name = "g";
  g.nodes.push_back(MakeNode("", "Neg", {"q_out"}, {"p_out"}));
  g.nodes.push_back(MakeNode("", "Abs", {"p_out"}, {"q_out"}));
  EXPECT_THAT(g.TopologicalOrder(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cycle through node #0 (Neg)")));
  g.nodes.push_back(MakeNode("", "Relu", {"r_out"}, {"r_out"}));
  EXPECT_THAT(g.TopologicalOrder(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("node #2 (Relu) reads its own output 'r_out'")));
}

TEST(GraphTest, UseDefIndexSeesSubgraphOuterReferences) {
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->nodes.push_back(MakeNode("inner", "Neg", {"w"}, {"t_out"}));
  body->outputs.push_back({"t_out", DType::kF32, Shape()});
  Graph g;
  g.name = "g";
  g.inputs.push_back({"cond", DType::kBool, Shape::FromDims({})});
  ASSERT_THAT(g.AddInitializer(F32("w", {1}, {1.f})), IsOk());
  Node n = MakeNode("if", "If", {"cond"}, {"y"});
  n.attributes["then_branch"] = Attribute::GraphValue(body);
  n.attributes["else_branch"] = Attribute::GraphValue(body);
  g.nodes.push_back(n);
  g.outputs.push_back({"y", DType::kF32, Shape()});
  UseDefIndex idx = g.BuildUseDefIndex();
  EXPECT_THAT(idx.consumers["w"], ElementsAre(0));
  EXPECT_THAT(idx.consumers["cond"], ElementsAre(0));
  EXPECT_EQ(idx.producer.at("y"), 0u);
  EXPECT_THAT(body->OuterScopeReferences(), ElementsAre("w"));
}

TEST(GraphTest, InitializerAddFindRemove) {
  Graph g;
  ASSERT_THAT(g.AddInitializer(F32("a", {1}, {1.f})), IsOk());
  ASSERT_THAT(g.AddInitializer(F32("b", {2}, {1.f, 2.f})), IsOk());
  EXPECT_THAT(g.AddInitializer(F32("a", {1}, {3.f})),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("'a'")));
  EXPECT_TRUE(g.RemoveInitializer("a"));
  EXPECT_FALSE(g.RemoveInitializer("a"));
  ASSERT_NE(g.FindInitializer("b"), nullptr);
  EXPECT_EQ(g.FindInitializer("b")->dims, std::vector<int64_t>{2});
}

TEST(ProvenanceTest, MergeKeepsOrderAndPrintsFused) {
  Provenance p = Provenance::Merge(Provenance::FromNode("conv1"),
                                   Provenance::FromNode("bn1"));
  p = Provenance::Merge(p, Provenance::FromNode("conv1"));
  EXPECT_EQ(p.ToString(), "fused[conv1,bn1]");
  EXPECT_EQ(Provenance::FromFile("model.safetensors", 4096).ToString(),
            "model.safetensors@4096");
}

TEST(TensorDataTest, ViewKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<uint8_t>>(16, 7);
  TensorData d = TensorData::View(owner, owner->data() + 4, 8);
  owner.reset();
  EXPECT_TRUE(d.is_view());
  EXPECT_EQ(d.size(), 8u);
  EXPECT_EQ(d.data()[7], 7);
}

// Below and above the size that goes to huge-page storage: the bytes
// written through the pointer are the tensor's, owned (not a view), and
// live as long as a copy of the tensor does.
TEST(TensorDataTest, OwnedUninitializedHoldsWhatWasWritten) {
  for (const uint64_t size : {uint64_t{100}, uint64_t{5} << 20}) {
    uint8_t* bytes = nullptr;
    TensorData d = TensorData::OwnedUninitialized(size, &bytes);
    ASSERT_NE(bytes, nullptr);
    for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    TensorData copy = d;
    d = TensorData();
    EXPECT_FALSE(copy.is_view());
    EXPECT_EQ(copy.size(), size);
    EXPECT_EQ(copy.data(), bytes);
    EXPECT_EQ(copy.data()[size - 1], static_cast<uint8_t>((size - 1) * 7));
  }
}

TEST(PrinterTest, PrintsNodesAttributesAndInitializers) {
  Graph g;
  g.name = "main";
  g.inputs.push_back({"x", DType::kF32, Shape({Dim::Symbolic("n"), Dim::Static(4)})});
  ASSERT_THAT(g.AddInitializer(F32("w", {4}, {1, 2, 3, 4})), IsOk());
  Node n = MakeNode("mul0", "Mul", {"x", "w"}, {"y"});
  n.attributes["axis"] = Attribute::Int(1);
  g.nodes.push_back(n);
  g.outputs.push_back({"y", DType::kF32, Shape({Dim::Symbolic("n"), Dim::Static(4)})});
  std::string text = PrintGraph(g);
  EXPECT_THAT(text, HasSubstr("graph main (%x: f32[n,4]) -> (%y: f32[n,4]) {"));
  EXPECT_THAT(text, HasSubstr("init %w: f32[4] #"));
  EXPECT_THAT(text, HasSubstr("%y = Mul(%x, %w) {axis=1}  # mul0"));
  // Different weights must print differently.
  Graph g2 = g;
  ASSERT_TRUE(g2.RemoveInitializer("w"));
  ASSERT_THAT(g2.AddInitializer(F32("w", {4}, {1, 2, 3, 5})), IsOk());
  EXPECT_NE(PrintGraph(g2), text);
}

}  // namespace
}  // namespace slimpack::ir
