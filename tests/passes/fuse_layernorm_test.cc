// Tests for fuse-layernorm: the PyTorch decomposition becomes one
// LayerNormalization (axes as attribute or input, operands either order),
// outputs within 1e-5, near misses logged with the reason, idempotence.
#include "passes/fuse/fuse_layernorm.h"

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

// One fused kernel vs nine: different rounding, same math.
constexpr double kTolerance = 1e-5;

struct Variant {
  std::string opset = "17";
  std::string axes = "<axes = [-1]>";  // or input form
  std::string two = "2.0";
  std::string eps = "1e-5";
  std::string mean_axes_input;  // ", axes" for opset 18 style
  std::string extra_output;     // e.g. ", float[2,3,4] d"
};

std::string Decomposed(const Variant& v) {
  return "<ir_version: 8, opset_import: [\"\" : " + v.opset + "]>\n"
         "g (float[2,3,4] x) => (float[2,3,4] y" + v.extra_output + ") {\n"
         "  axes = Constant <value = int64[1] {-1}> ()\n"
         "  two = Constant <value = float {" + v.two + "}> ()\n"
         "  eps = Constant <value = float {" + v.eps + "}> ()\n"
         "  gamma = Constant <value = float[4] {1.5, 0.5, -1, 2}> ()\n"
         "  beta = Constant <value = float[4] {0.1, 0.2, 0.3, -0.4}> ()\n"
         "  m = ReduceMean " + v.axes + " (x" + v.mean_axes_input + ")\n"
         "  d = Sub(x, m)\n"
         "  p = Pow(d, two)\n"
         "  var = ReduceMean " + v.axes + " (p" + v.mean_axes_input + ")\n"
         "  ve = Add(var, eps)\n"
         "  s = Sqrt(ve)\n"
         "  n = Div(d, s)\n"
         "  g = Mul(gamma, n)\n"
         "  y = Add(g, beta)\n}\n";
}

TEST(FuseLayerNormTest, FusesPyTorchDecomposition) {
  ir::Model before = ImportText(Decomposed({}));
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,4] x) => (float[2,3,4] y) {
  axes = Constant <value = int64[1] {-1}> ()
  two = Constant <value = float {2.0}> ()
  eps = Constant <value = float {1e-5}> ()
  gamma = Constant <value = float[4] {1.5, 0.5, -1, 2}> ()
  beta = Constant <value = float[4] {0.1, 0.2, 0.3, -0.4}> ()
  y = LayerNormalization <axis = -1, epsilon = 1e-5> (x, gamma, beta)
}
)");
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(expected.graph));
  EXPECT_EQ(after.nodes[0].provenance.ToString(), "fused[m,d,p,var,ve,s,n,g,y]");
  EXPECT_EQ(run.context.stats().nodes_removed, 8);
  EXPECT_EQ(run.context.required_opset(), 0);
  auto inputs = RandomInputs(before.graph, 1);
  EXPECT_LT(MaxAbsDiff(Evaluate(before.graph, inputs), Evaluate(after, inputs)), kTolerance);
}

TEST(FuseLayerNormTest, ReadsAxesFromInputAndAsksForOpset17) {
  Variant v;
  v.opset = "14";  // the importer accepts it; ReduceMean axes input is opset 18
  v.axes = "";
  v.mean_axes_input = ", axes";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after, /*opset=*/14);
  ASSERT_THAT(run.status, IsOk());
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op_type, "LayerNormalization");
  EXPECT_EQ(run.context.required_opset(), 17);
}

TEST(FuseLayerNormTest, DoesNotFuseWhenExponentIsNotTwo) {
  Variant v;
  v.two = "3.0";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("Pow exponent is not the constant 2")));
}

TEST(FuseLayerNormTest, DoesNotFuseWhenCenteredValueHasAnotherReader) {
  Variant v;
  v.extra_output = ", float[2,3,4] d";
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("'d' has readers besides Pow and Div")));
}

TEST(FuseLayerNormTest, DoesNotFuseWhenAxesDiffer) {
  Variant v;
  v.axes = "<axes = [1]>";  // not the trailing axis of a rank-3 input
  ir::Model before = ImportText(Decomposed(v));
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("not the same trailing axes")));
}

// Raising opset 12 -> 17 would make this Unsqueeze read its axes from a
// (missing) input: the pass must not ask for it.
TEST(FuseLayerNormTest, DoesNotFuseWhenRaisingTheOpsetChangesAnotherNode) {
  Variant v;
  v.opset = "12";
  v.extra_output = ", float[1,2,3,4] u";
  std::string text = Decomposed(v);
  text.insert(text.rfind('}'), "  u = Unsqueeze <axes = [0]> (x)\n");
  ir::Model before = ImportText(text);
  ir::Graph after = before.graph;
  PassRun run = RunPass(FuseLayerNormPass(), after, /*opset=*/12);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
  EXPECT_EQ(run.context.required_opset(), 0);
  EXPECT_THAT(run.context.log(),
              Contains(HasSubstr("needs opset 17 and the model is opset 12: node 'u' "
                                 "(Unsqueeze) changes meaning at opset 13")));
}

TEST(FuseLayerNormTest, SecondRunChangesNothing) {
  ir::Model before = ImportText(Decomposed({}));
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(FuseLayerNormPass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(FuseLayerNormPass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
}

}  // namespace
}  // namespace slimpack::passes
