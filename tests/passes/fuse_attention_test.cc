// Tests for fuse-attention: MatMul / scale (Div or Mul, optional) / mask
// Add (optional) / Softmax / MatMul becomes one slimpack.Attention,
// bit-exact; a Softmax over another axis or a probability tensor with
// another reader is a logged near miss; a second run changes nothing.
#include "passes/fuse/fuse_attention.h"

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
const char kSignature[] =
    "g (float[2,2,4,8] q, float[2,2,8,4] kt, float[2,2,4,8] v) => (float[2,2,4,8] y";

std::string Constants() {
  std::vector<float> mask(16, 0.0f);
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) mask[i * 4 + j] = -1e4f;
  }
  return "  d = Constant <value = float {2.828427}> ()\n"
         "  mask = Constant <value = float[4,4] {" + FloatList(mask) + "}> ()\n";
}

std::string Decomposed(const std::string& scale_line, const std::string& softmax_attrs,
                       const std::string& extra_output = "") {
  return std::string(kHeader) + kSignature + extra_output + ") {\n" + Constants() +
         "  qk = MatMul(q, kt)\n" + scale_line +
         "  sm = Add(mask, s)\n"
         "  p = Softmax " + softmax_attrs + " (sm)\n"
         "  y = MatMul(p, v)\n}\n";
}

TEST(FuseAttentionTest, FusesScaledMaskedAttentionBitExact) {
  ir::Model before = ImportText(Decomposed("  s = Div(qk, d)\n", "<axis = -1>"));
  ir::Model expected = ImportText(
      std::string(kHeader) + kSignature + ") {\n" + Constants() +
      "  y = slimpack.Attention <scale_divisor = 2.828427> (q, kt, v, mask)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseAttentionPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[qk,s,sm,p,y]");
  // qk, s, sm, p: 4 tensors of 2*2*4*4 floats.
  EXPECT_EQ(run.context.stats().bytes_saved, 4 * 64 * 4);
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseAttentionTest, FusesMulScaleAndDefaultSoftmaxAxis) {
  ir::Model before = ImportText(Decomposed("  s = Mul(d, qk)\n", ""));
  ir::Model expected = ImportText(
      std::string(kHeader) + kSignature + ") {\n" + Constants() +
      "  y = slimpack.Attention <scale = 2.828427> (q, kt, v, mask)\n}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseAttentionPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  auto inputs = RandomInputs(before.graph, 2);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseAttentionTest, FusesWithoutScaleOrMask) {
  ir::Model before = ImportText(std::string(kHeader) + kSignature + R"() {
  qk = MatMul(q, kt)
  p = Softmax <axis = 3> (qk)
  y = MatMul(p, v)
}
)");
  ir::Model expected = ImportText(std::string(kHeader) + kSignature + R"() {
  y = slimpack.Attention(q, kt, v)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseAttentionPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  auto inputs = RandomInputs(before.graph, 3);
  EXPECT_EQ(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), 0.0);
}

TEST(FuseAttentionTest, DoesNotFuseSoftmaxOverAnotherAxis) {
  ir::Model before = ImportText(Decomposed("  s = Div(qk, d)\n", "<axis = 2>"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseAttentionPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("Softmax axis 2 is not the last axis")));
}

TEST(FuseAttentionTest, DoesNotFuseWhenProbabilitiesAreAnOutput) {
  ir::Model before =
      ImportText(Decomposed("  s = Div(qk, d)\n", "<axis = -1>", ", float[2,2,4,4] p"));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseAttentionPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("Softmax output has other readers")));
}

TEST(FuseAttentionTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Decomposed("  s = Div(qk, d)\n", "<axis = -1>"));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseAttentionPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseAttentionPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
