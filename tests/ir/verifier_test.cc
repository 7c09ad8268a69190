#include "ir/verifier.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ir/ir_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::ir {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using testing::MakeNode;

Tensor Bytes(std::string name, DType dt, std::vector<int64_t> dims,
             size_t nbytes) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dt;
  t.dims = std::move(dims);
  t.data = TensorData::Owned(std::vector<uint8_t>(nbytes, 0));
  return t;
}

Graph ValidGraph() {
  Graph g;
  g.name = "g";
  g.inputs.push_back({"x", DType::kF32, Shape::FromDims({2, 2})});
  (void)g.AddInitializer(Bytes("w", DType::kF32, {2, 2}, 16));
  g.nodes.push_back(MakeNode("mm", "MatMul", {"x", "w"}, {"h"}));
  g.nodes.push_back(MakeNode("act", "Relu", {"h"}, {"y"}));
  g.outputs.push_back({"y", DType::kF32, Shape::FromDims({2, 2})});
  return g;
}

TEST(VerifierTest, AcceptsValidGraph) {
  EXPECT_THAT(VerifyGraph(ValidGraph()), IsOk());
}

TEST(VerifierTest, AcceptsOmittedOptionalInputs) {
  Graph g = ValidGraph();
  g.nodes[1].inputs.push_back("");
  EXPECT_THAT(VerifyGraph(g), IsOk());
}

TEST(VerifierTest, RejectsDanglingInputNamingNodeAndValue) {
  Graph g = ValidGraph();
  g.nodes[1].inputs[0] = "nowhere";
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'act' (Relu) input 0 'nowhere'")));
}

TEST(VerifierTest, RejectsValueDefinedTwice) {
  Graph g = ValidGraph();
  g.nodes[1].outputs[0] = "h";
  g.outputs[0].name = "h";
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("value 'h' is defined twice, by node 'mm' "
                                 "(MatMul) and by node 'act' (Relu)")));
}

TEST(VerifierTest, RejectsDuplicateNodeNames) {
  Graph g = ValidGraph();
  g.nodes[1].name = "mm";
  EXPECT_THAT(VerifyGraph(g), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("duplicate node name 'mm'")));
}

TEST(VerifierTest, UnnamedNodesAreAcceptedAndNamedByIndexInErrors) {
  Graph g = ValidGraph();
  g.nodes[0].name.clear();
  g.nodes[1].name.clear();  // two empty names are not duplicates
  EXPECT_THAT(VerifyGraph(g), IsOk());
  g.nodes[1].inputs[0] = "nowhere";
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node #1 (Relu) input 0 'nowhere'")));
}

TEST(VerifierTest, RejectsCycle) {
  Graph g = ValidGraph();
  g.nodes[0].inputs[0] = "y";  // mm reads act's output
  EXPECT_THAT(VerifyGraph(g), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("cycle")));
}

TEST(VerifierTest, RejectsInitializerByteSizeMismatch) {
  Graph g = ValidGraph();
  ASSERT_TRUE(g.RemoveInitializer("w"));
  ASSERT_THAT(g.AddInitializer(Bytes("w", DType::kF32, {2, 2}, 12)), IsOk());
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'w' f32[2,2] needs 16 bytes, found 12")));
}

TEST(VerifierTest, RejectsUndefinedGraphOutput) {
  Graph g = ValidGraph();
  g.outputs[0].name = "zzz";
  EXPECT_THAT(VerifyGraph(g), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("output 'zzz'")));
}

TEST(VerifierTest, SubgraphMayReadOuterScopeButNotUndefinedNames) {
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->nodes.push_back(MakeNode("inner", "Neg", {"w"}, {"t"}));
  body->outputs.push_back({"t", DType::kF32, Shape()});
  Graph g = ValidGraph();
  g.inputs.push_back({"c", DType::kBool, Shape::FromDims({})});
  Node n = MakeNode("if0", "If", {"c"}, {"z"});
  n.attributes["then_branch"] = Attribute::GraphValue(body);
  g.nodes.push_back(n);
  EXPECT_THAT(VerifyGraph(g), IsOk());
  body->nodes[0].inputs[0] = "missing";
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'if0' (If) attribute 'then_branch': "
                                 "graph 'then': node 'inner' (Neg) input 0 "
                                 "'missing'")));
}

}  // namespace
}  // namespace slimpack::ir
