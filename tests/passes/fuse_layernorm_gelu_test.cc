// Tests for fuse-layernorm-gelu: the fused node and its bit-exact kernel,
// the near miss with a second reader, idempotence.
#include "passes/fuse/fuse_layernorm_gelu.h"

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

std::string Text(const std::string& outputs, const std::string& body) {
  return "<ir_version: 8, opset_import: [\"\" : 17, \"slimpack\" : 1]>\n"
         "g (float[3,4] x) => (" + outputs + ") {\n"
         "  gamma = Constant <value = float[4] {1.5, 0.5, -1, 2}> ()\n"
         "  beta = Constant <value = float[4] {0.1, 0.2, 0.3, -0.4}> ()\n" + body + "}\n";
}

TEST(FuseLayerNormGeluTest, FusesNormAndGelu) {
  ir::Model before = ImportText(Text("float[3,4] y", R"(
  n = LayerNormalization <epsilon = 1e-5> (x, gamma, beta)
  y = slimpack.Gelu <approximate = "tanh"> (n)
)"));
  ir::Model expected = ImportText(Text("float[3,4] y", R"(
  y = slimpack.LayerNormGelu <epsilon = 1e-5, approximate = "tanh"> (x, gamma, beta)
)"));
  NameNode(expected.graph, "y", "n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[n,y]");
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseLayerNormGeluTest, DoesNotFuseWhenNormOutputHasTwoUsers) {
  ir::Model before = ImportText(Text("float[3,4] y, float[3,4] n", R"(
  n = LayerNormalization (x, gamma, beta)
  y = slimpack.Gelu (n)
)"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormGeluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("has other readers")));
}

TEST(FuseLayerNormGeluTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Text("float[3,4] y", R"(
  n = LayerNormalization (x, gamma, beta)
  y = slimpack.Gelu (n)
)"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseLayerNormGeluPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseLayerNormGeluPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
  EXPECT_EQ(once.nodes.size(), 1u);
}

}  // namespace
}  // namespace slimpack::passes
