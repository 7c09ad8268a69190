// Planning scales with graph size: a 200,000-node chain is verified,
// planned and run, each value is released right after its one reader (so
// two buffers serve the whole chain), and outer-scope values still reach
// subgraphs nested two deep through the planner's chain of scopes.
//
// No time is asserted (timed unit tests are flaky). The size does the
// work instead: the planner used to copy every visible name for every node
// (about 2 * 10^10 string copies for this chain; 30,000 nodes took 40 s
// without sanitizers), which would run far past ctest's default 1,500 s
// per-test timeout in CI's ASan build, while the linear planner,
// TopologicalOrder and verifier take seconds.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/verifier.h"
#include "runtime/graph_plan.h"
#include "runtime/interpreter.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::F32;
using ::slimpack::testing::IsOk;
using ::testing::ElementsAre;

ir::Node Unary(const std::string& op, const std::string& in, const std::string& out) {
  ir::Node n;
  n.name = out + "_node";
  n.op_type = op;
  n.inputs = {in};
  n.outputs = {out};
  return n;
}

TEST(LongGraphTest, ChainOf200kNodesPlansLinearlyAndKeepsTwoValuesLive) {
  constexpr int64_t kNodes = 200000;
  // Neg, Neg, Relu repeated: any node skipped, repeated or run out of order
  // changes the sign of the result somewhere along the chain.
  auto op_of = [](int64_t i) { return i % 3 == 2 ? "Relu" : "Neg"; };
  ir::Graph g;
  g.name = "chain";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({1})});
  std::string prev = "x";
  for (int64_t i = 0; i < kNodes; ++i) {
    const std::string out = "v" + std::to_string(i);
    g.nodes.push_back(Unary(op_of(i), prev, out));
    prev = out;
  }
  g.outputs.push_back({prev, ir::DType::kF32, ir::Shape::FromDims({1})});
  // Stored last node first, so the topological sort has to reorder all of it.
  std::reverse(g.nodes.begin(), g.nodes.end());
  const float x = 1.5f;
  float want = x;
  for (int64_t i = 0; i < kNodes; ++i) {
    want = std::string(op_of(i)) == "Relu" ? std::max(want, 0.0f) : -want;
  }

  ASSERT_THAT(ir::VerifyGraph(g), IsOk());

  auto plan = BuildGraphPlan(g, BuiltinKernels(), {});
  ASSERT_THAT(plan, IsOk());
  const GraphPlan& p = **plan;
  ASSERT_EQ(p.steps.size(), static_cast<size_t>(kNodes));
  // Steps in chain order; each releases exactly the value it read (the
  // graph input included: the caller's copy keeps that buffer alive), so
  // at most two values are ever live: the one read and the one written.
  size_t live = 1, peak = 1, out_of_order = 0, bad_release = 0;
  for (int64_t s = 0; s < kNodes; ++s) {
    const NodeStep& step = p.steps[static_cast<size_t>(s)];
    out_of_order += step.node->outputs[0] != "v" + std::to_string(s);
    bad_release += step.release_after != std::vector<int>{step.inputs.at(0)};
    live += step.outputs.size();
    peak = std::max(peak, live);
    live -= step.release_after.size();
  }
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(bad_release, 0u);
  EXPECT_EQ(peak, 2u);
  EXPECT_EQ(live, 1u);  // the graph output

  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  RunStats stats;
  auto out = interp->Run({{"x", F32({1}, {x})}}, &stats);
  ASSERT_THAT(out, IsOk());
  ExpectFloats((*out)[0], {1}, {want});
  EXPECT_EQ(stats.nodes_run, kNodes);
  // Two 4-byte buffers take turns for the whole chain: each Neg takes the
  // one released before it (but the first two, fresh), each Relu writes
  // over its input (KernelContext::AllocateUninitializedOrReuse).
  int64_t negs = 0;
  for (int64_t i = 0; i < kNodes; ++i) negs += std::string(op_of(i)) == "Neg";
  EXPECT_EQ(stats.bytes_allocated, 2u * 4);
  EXPECT_EQ(stats.bytes_reused, static_cast<uint64_t>(negs - 2) * 4);
}

// An If whose branch holds another If: the inner branches read "v", defined
// in the main graph two scopes up, and "c" one scope up.
TEST(LongGraphTest, ValuesReachSubgraphsTwoScopesDown) {
  auto graph = [](const std::string& name, std::vector<ir::Node> nodes, const std::string& out) {
    auto sub = std::make_shared<ir::Graph>();
    sub->name = name;
    sub->nodes = std::move(nodes);
    sub->outputs.push_back({out, ir::DType::kF32, ir::Shape::FromDims({1})});
    return sub;
  };
  auto if_node = [](const std::string& out, std::shared_ptr<ir::Graph> then_g,
                    std::shared_ptr<ir::Graph> else_g) {
    ir::Node n;
    n.name = out + "_node";
    n.op_type = "If";
    n.inputs = {"c"};
    n.outputs = {out};
    n.attributes["then_branch"] = ir::Attribute::GraphValue(std::move(then_g));
    n.attributes["else_branch"] = ir::Attribute::GraphValue(std::move(else_g));
    return n;
  };
  auto inner = if_node("inner", graph("inner_then", {Unary("Relu", "v", "r")}, "r"),
                       graph("inner_else", {Unary("Neg", "v", "n1")}, "n1"));
  ir::Graph g;
  g.inputs.push_back({"c", ir::DType::kBool, ir::Shape::FromDims({})});
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({1})});
  g.nodes.push_back(Unary("Neg", "x", "v"));
  g.nodes.push_back(if_node("y", graph("outer_then", {inner}, "inner"),
                            graph("outer_else", {Unary("Neg", "v", "n2")}, "n2")));
  g.nodes.push_back(Unary("Neg", "y", "z"));
  g.outputs.push_back({"z", ir::DType::kF32, ir::Shape::FromDims({1})});
  ASSERT_THAT(ir::VerifyGraph(g), IsOk());

  auto plan = BuildGraphPlan(g, BuiltinKernels(), {});
  ASSERT_THAT(plan, IsOk());
  // Subgraph plans are keyed by pointer: find the then-branch by name.
  const GraphPlan* outer_then = nullptr;
  for (const auto& [sub, sub_plan] : (*plan)->subgraphs) {
    if (sub->name == "outer_then") outer_then = sub_plan.get();
  }
  ASSERT_NE(outer_then, nullptr);
  std::set<std::string> refs;
  for (const auto& [name, slot] : outer_then->outer_refs) refs.insert(name);
  EXPECT_THAT(refs, ElementsAre("c", "v"));
  ASSERT_EQ(outer_then->subgraphs.size(), 2u);  // the inner If's branches
  for (const auto& [sub, sub_plan] : outer_then->subgraphs) {
    ASSERT_EQ(sub_plan->outer_refs.size(), 1u) << sub->name;
    EXPECT_EQ(sub_plan->outer_refs[0].first, "v") << sub->name;
  }
  // "v" dies after the If that reads it through its branches, not before.
  const int v = (*plan)->slot_of.at("v");
  EXPECT_THAT((*plan)->steps[1].release_after, ::testing::Contains(v));
  EXPECT_THAT((*plan)->steps[0].release_after, ::testing::Not(::testing::Contains(v)));

  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  const RtTensor x = F32({1}, {-3.0f});  // v = 3
  auto t = interp->Run({{"c", RtTensor::FromVector<bool>({}, {true})}, {"x", x}});
  ASSERT_THAT(t, IsOk());
  ExpectFloats((*t)[0], {1}, {-3.0f});  // -Relu(3)
  auto e = interp->Run({{"c", RtTensor::FromVector<bool>({}, {false})}, {"x", x}});
  ASSERT_THAT(e, IsOk());
  ExpectFloats((*e)[0], {1}, {3.0f});  // -Neg(3)
}

}  // namespace
}  // namespace slimpack::runtime
