// Tests for eliminate-duplicate-constants: identical constants merge into
// the first (provenance kept), different dtype/dims/values and constants
// over max-bytes stay, graph outputs stay; a second run changes nothing.
#include "passes/cleanup/eliminate_duplicate_constants.h"

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/registry.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using namespace ::slimpack::passes::testing;

constexpr char kText[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y) {
  c1 = Constant <value = float[3] {1, 2, 3}> ()
  c2 = Constant <value = float[3] {1, 2, 3}> ()
  c3 = Constant <value = float[1,3] {1, 2, 3}> ()
  c4 = Constant <value = int32[3] {1, 2, 3}> ()
  c5 = Constant <value = float[3] {1, 2, 4}> ()
  a = Add(x, c1)
  b = Mul(a, c2)
  d = Sub(b, c2)
  e = Add(d, c3)
  f = Cast <to = 1> (c4)
  g = Add(e, f)
  y = Div(g, c5)
}
)";

TEST(EliminateDuplicateConstantsTest, MergesOnlyIdenticalConstants) {
  ir::Model before = ImportText(kText);
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y) {
  c1 = Constant <value = float[3] {1, 2, 3}> ()
  c3 = Constant <value = float[1,3] {1, 2, 3}> ()
  c4 = Constant <value = int32[3] {1, 2, 3}> ()
  c5 = Constant <value = float[3] {1, 2, 4}> ()
  a = Add(x, c1)
  b = Mul(a, c1)
  d = Sub(b, c1)
  e = Add(d, c3)
  f = Cast <to = 1> (c4)
  g = Add(e, f)
  y = Div(g, c5)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(EliminateDuplicateConstantsPass(), after);
  ASSERT_THAT(run.status, IsOk());
  // Shapes the importer inferred for the rewired nodes are unchanged.
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(run.context.stats().bytes_saved, 12);
  EXPECT_EQ(run.context.stats().nodes_rewritten, 2);
  EXPECT_THAT(after.FindInitializer("c1")->provenance.source_nodes,
              ::testing::ElementsAre("c1", "c2"));
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(EliminateDuplicateConstantsTest, KeepsConstantsOverMaxBytes) {
  auto pass = CreatePass("eliminate-duplicate-constants{max-bytes=8}");
  ASSERT_THAT(pass, IsOk());
  ir::Model before = ImportText(kText);
  ir::Graph after = before.graph;
  PassRun run = RunPass(**pass, after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_FALSE(run.context.changed());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

TEST(EliminateDuplicateConstantsTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(kText);
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(EliminateDuplicateConstantsPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(EliminateDuplicateConstantsPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
