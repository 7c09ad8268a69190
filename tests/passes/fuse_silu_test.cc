// Tests for fuse-silu: x*Sigmoid(x) in either operand order becomes
// slimpack.SiLU, bit-exact; a Sigmoid with another reader or of another
// value is a logged near miss; a second run changes nothing.
#include "passes/fuse/fuse_silu.h"

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

const char kHeader[] = "<ir_version: 8, opset_import: [\"\" : 17, \"slimpack\" : 1]>\n";

TEST(FuseSiluTest, FusesBothOperandOrdersBitExact) {
  for (const char* mul : {"Mul(x, s)", "Mul(s, x)"}) {
    ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,5] x) => (float[2,5] z) {
  s = Sigmoid(x)
  y = )" + mul + R"(
  z = Relu(y)
}
)");
    ir::Model expected = ImportText(std::string(kHeader) + R"(
g (float[2,5] x) => (float[2,5] z) {
  y = slimpack.SiLU(x)
  z = Relu(y)
}
)");
    ir::Graph after = before.graph;
    PassRun run = RunPass(FuseSiluPass(), after);
    ASSERT_THAT(run.status, IsOk());
    // Shape inference cannot see through the slimpack op; compare without
    // the value_info of y (the pass keeps what the importer inferred).
    after.value_info.erase("y");
    EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph)) << mul;
    EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[s,y]");
    EXPECT_EQ(run.context.stats().bytes_saved, 40);
    auto inputs = RandomInputs(before.graph, 4);
    EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
  }
}

TEST(FuseSiluTest, DoesNotFuseWhenSigmoidHasAnotherReader) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,5] x) => (float[2,5] y, float[2,5] s) {
  s = Sigmoid(x)
  y = Mul(x, s)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseSiluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("Sigmoid output 's' has other readers")));
}

TEST(FuseSiluTest, DoesNotFuseSigmoidOfAnotherValue) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,5] x, float[2,5] g) => (float[2,5] y) {
  s = Sigmoid(g)
  y = Mul(x, s)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseSiluPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("is not the Sigmoid's input")));
}

TEST(FuseSiluTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(std::string(kHeader) + R"(
g (float[2,5] x) => (float[2,5] y) {
  s = Sigmoid(x)
  y = Mul(s, x)
}
)");
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseSiluPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseSiluPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
