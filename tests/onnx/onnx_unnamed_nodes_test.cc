// Models whose nodes all have empty names, as tf2onnx and ONNX Runtime's
// quantization tool write them (ONNX allows it). They used to be refused
// with "graph has a cycle through node ...": the cause was not the names
// but ir::Graph::TopologicalOrder counting a node that reads two outputs of
// one producer (DynamicQuantizeLinear -> MatMulInteger, Split -> Add) as
// waiting for two releases while it only ever got one. These tests import,
// verify and run such models and check the generated names.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "formats/onnx/onnx_importer.h"
#include "ir/verifier.h"
#include "runtime/interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::ParseModel;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::WriteModel;
using ::slimpack::testing::IsOk;
using ::testing::ElementsAre;

// A chain (Abs -> Relu) into a diamond (Relu -> Sigmoid, Neg -> Add).
constexpr char kChainAndDiamond[] = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
diamond (float[2, 3] x) => (float[2, 3] y) {
  a = Abs(x)
  r = Relu(a)
  s = Sigmoid(r)
  n = Neg(r)
  y = Add(s, n)
}
)ONNX";

// The ONNX Runtime dynamic-quantization pattern (MatMulInteger reads two of
// DynamicQuantizeLinear's three outputs) and a Split whose two outputs
// meet again in one Add.
constexpr char kMultiOutputProducers[] = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
ort_like (float[2, 4] x, uint8[4, 3] w) => (float[2, 3] y, float[2, 2] z) {
  q, qs, qz = DynamicQuantizeLinear(x)
  acc = MatMulInteger(q, w, qz)
  accf = Cast <to = 1> (acc)
  y = Mul(accf, qs)
  h1, h2 = Split <axis = 1> (x)
  z = Add(h1, h2)
}
)ONNX";

// Writes `text` (whose nodes must all be unnamed) to a fresh file and
// imports it.
absl::StatusOr<ir::Model> ImportUnnamed(const char* text, const ScratchDir& dir) {
  onnx::ModelProto proto = ParseModel(text);
  for (const auto& node : proto.graph().node()) {
    EXPECT_TRUE(node.name().empty()) << node.op_type();
  }
  const std::string path = dir.File("model.onnx");
  WriteModel(proto, path);
  return ImportOnnx(path);
}

std::vector<std::string> NodeNames(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes) names.push_back(n.name);
  return names;
}

TEST(OnnxUnnamedNodesTest, ChainAndDiamondImportVerifyAndRun) {
  ScratchDir dir;
  auto model = ImportUnnamed(kChainAndDiamond, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(ir::VerifyGraph(model->graph), IsOk());
  // "<op_type>_<index>", in file order: unique, and what error messages,
  // provenance and reports show for these nodes.
  const std::vector<std::string> names = NodeNames(model->graph);
  EXPECT_THAT(names, ElementsAre("Abs_0", "Relu_1", "Sigmoid_2", "Neg_3", "Add_4"));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_THAT(model->graph.nodes[2].provenance.source_nodes, ElementsAre("Sigmoid_2"));

  // Deterministic: the same model imported again (from another file) gets
  // the same names.
  ScratchDir other;
  auto again = ImportUnnamed(kChainAndDiamond, other);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(NodeNames(again->graph), names);

  auto interp = runtime::Interpreter::Create(*model, runtime::InterpreterOptions());
  ASSERT_THAT(interp, IsOk());
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f};
  auto out = interp->Run({{"x", runtime::RtTensor::FromVector<float>({2, 3}, x)}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  const std::vector<float> y = (*out)[0].ToVector<float>();
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float r = std::fabs(x[i]);  // Relu(Abs(x))
    EXPECT_NEAR(y[i], 1.0f / (1.0f + std::exp(-r)) - r, 1e-5f) << "element " << i;
  }
}

TEST(OnnxUnnamedNodesTest, NodeReadingSeveralOutputsOfOneProducerIsNotACycle) {
  ScratchDir dir;
  auto model = ImportUnnamed(kMultiOutputProducers, dir);
  ASSERT_THAT(model, IsOk());  // was FailedPrecondition "cycle through node"
  EXPECT_THAT(ir::VerifyGraph(model->graph), IsOk());
  EXPECT_THAT(NodeNames(model->graph),
              ElementsAre("DynamicQuantizeLinear_0", "MatMulInteger_1", "Cast_2",
                          "Mul_3", "Split_4", "Add_5"));
  auto order = model->graph.TopologicalOrder();
  ASSERT_THAT(order, IsOk());
  EXPECT_THAT(*order, ElementsAre(0, 1, 2, 3, 4, 5));

  auto interp = runtime::Interpreter::Create(*model, runtime::InterpreterOptions());
  ASSERT_THAT(interp, IsOk());
  const std::vector<float> x = {-1.0f, 0.25f, 0.5f, 2.0f, 1.5f, -0.75f, 0.0f, 1.0f};
  const std::vector<uint8_t> w = {1, 2, 0, 3, 1, 1, 0, 2, 3, 1, 0, 2};
  auto out = interp->Run({{"x", runtime::RtTensor::FromVector<float>({2, 4}, x)},
                          {"w", runtime::RtTensor::FromVector<uint8_t>({4, 3}, w)}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 2u);
  // y is x . w through 8-bit quantization of x: each x is off by at most
  // one quantization step (range [-1, 2] over 255 steps).
  const float step = 3.0f / 255.0f;
  const std::vector<float> y = (*out)[0].ToVector<float>();
  ASSERT_EQ(y.size(), 6u);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float want = 0, bound = 1e-5f;
      for (int k = 0; k < 4; ++k) {
        want += x[i * 4 + k] * w[k * 3 + j];
        bound += step * w[k * 3 + j];
      }
      EXPECT_NEAR(y[i * 3 + j], want, bound) << i << "," << j;
    }
  }
  // z = left half + right half of x, exactly.
  EXPECT_THAT((*out)[1].ToVector<float>(),
              ElementsAre(x[0] + x[2], x[1] + x[3], x[4] + x[6], x[5] + x[7]));
}

}  // namespace
}  // namespace slimpack::onnx_format
