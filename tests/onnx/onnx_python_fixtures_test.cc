// Imports the fixtures written by the onnx python package
// (tests/testdata/onnx/make_fixtures.py): a second, independent writer of
// Constant-node weights, external data, float16 int32_data and subgraphs.
// Expected values are recomputed from the script's formula i * 0.25 - 1.
#include <cstring>

#include "ir/printer.h"
#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/onnx_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::ValuesOf;
using ::slimpack::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::string Fixture(const std::string& name) {
  return std::string(SLIMPACK_ONNX_TESTDATA_DIR) + "/" + name;
}

std::vector<float> Ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.25f - 1.0f;
  return v;
}

// IEEE half bits of `f`, for zero and normal values exactly representable
// in half precision (all the ramp values are).
uint16_t HalfBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if ((bits & 0x7fffffff) == 0) return sign;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint16_t mantissa = static_cast<uint16_t>((bits >> 13) & 0x3ff);
  return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

TEST(PythonFixturesTest, PaddleStyleConstantsBecomeInitializers) {
  auto model = ImportOnnx(Fixture("paddle_constants.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Graph& g = model->graph;
  EXPECT_EQ(model->producer_name, "PaddlePaddle");
  const ir::Tensor* w = g.FindInitializer("fc_w");
  ASSERT_NE(w, nullptr);
  EXPECT_THAT(w->dims, ElementsAre(4, 3));
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAreArray(Ramp(12)));
  EXPECT_THAT(w->provenance.source_nodes, ElementsAre("Constant_0"));
  const ir::Tensor* b = g.FindInitializer("fc_b");
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(ValuesOf<float>(b->data), ElementsAreArray(Ramp(3)));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "MatMul_2");
  EXPECT_EQ(g.nodes[1].name, "Add_3");
  EXPECT_EQ(g.inputs[0].shape.ToString(), "[batch,4]");
  // Shape inference fills the intermediate.
  ASSERT_EQ(g.value_info.count("h"), 1u);
  EXPECT_EQ(g.value_info.at("h").shape.ToString(), "[batch,3]");
}

TEST(PythonFixturesTest, ExternalDataWrittenByOnnxIsMapped) {
  auto model = ImportOnnx(Fixture("external_by_onnx.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w");
  const ir::Tensor* b = model->graph.FindInitializer("b");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(w->data.is_view());
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAreArray(Ramp(128)));
  EXPECT_THAT(ValuesOf<float>(b->data), ElementsAreArray(Ramp(8)));
  EXPECT_THAT(model->input_files,
              ElementsAre(Fixture("external_by_onnx.onnx"),
                          Fixture("external_by_onnx.data")));
}

TEST(PythonFixturesTest, HelperFloat16InInt32DataIsDecoded) {
  auto model = ImportOnnx(Fixture("fp16_helper.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w16");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, ir::DType::kF16);
  std::vector<uint16_t> expected;
  for (float f : Ramp(6)) expected.push_back(HalfBits(f));
  EXPECT_THAT(ValuesOf<uint16_t>(w->data), ElementsAreArray(expected));
}

TEST(PythonFixturesTest, IfBranchConstantBecomesSubgraphInitializer) {
  auto model = ImportOnnx(Fixture("if_subgraph.onnx"));
  ASSERT_THAT(model, IsOk());
  ASSERT_EQ(model->graph.nodes.size(), 1u);
  const ir::Attribute* then_attr =
      model->graph.nodes[0].FindAttribute("then_branch");
  ASSERT_NE(then_attr, nullptr);
  const ir::Tensor* bias = then_attr->g->FindInitializer("bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_THAT(ValuesOf<float>(bias->data), ElementsAreArray(Ramp(4)));
}

TEST(PythonFixturesTest, EveryFixtureRoundTripsThroughTheWriter) {
  for (const char* name : {"paddle_constants.onnx", "external_by_onnx.onnx",
                           "fp16_helper.onnx", "if_subgraph.onnx"}) {
    auto model = ImportOnnx(Fixture(name));
    ASSERT_THAT(model, IsOk()) << name;
    ScratchDir out;
    ASSERT_THAT(ExportOnnx(*model, out.File("m.onnx")), IsOk()) << name;
    auto again = ImportOnnx(out.File("m.onnx"));
    ASSERT_THAT(again, IsOk()) << name;
    EXPECT_EQ(ir::PrintGraph(again->graph), ir::PrintGraph(model->graph))
        << name;
  }
}

}  // namespace
}  // namespace slimpack::onnx_format
