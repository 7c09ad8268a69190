// Models older than opset 9 are upgraded on import with ONNX's version
// converter (formats/onnx/opset_upgrade.h): they import, run with the
// numbers the ONNX operator specs give, keep their weights as they were
// (embedded or external), and say so in Model::warnings. min_opset raises
// opset-9 models the same way.
#include <cmath>
#include <string>
#include <vector>

#include "formats/onnx/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::FloatTensor;
using ::slimpack::onnx_format::testing::MakeExternal;
using ::slimpack::onnx_format::testing::ParseModel;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::ValuesOf;
using ::slimpack::onnx_format::testing::WriteFile;
using ::slimpack::onnx_format::testing::WriteModel;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const ir::Node* FindOp(const ir::Graph& g, const std::string& op) {
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == op) return &n;
  }
  return nullptr;
}

// Runs `model` on one f32 input and returns its first output as floats.
std::vector<float> RunOne(const ir::Model& model, const std::string& input,
                          runtime::RtTensor x) {
  auto interp = runtime::Interpreter::Create(model, {});
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  auto out = interp->Run({{input, std::move(x)}});
  EXPECT_THAT(out, IsOk());
  if (!out.ok() || out->empty()) return {};
  return (*out)[0].ToVector<float>();
}

// Opset 7 as exporters of that time wrote it (IR version 3, initializers
// also listed as inputs): Upsample with `scales` as an attribute (an input
// from 9) and BatchNormalization with `spatial` (gone at 9).
onnx::ModelProto Opset7Model() {
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 7]>
old7 (float[1,1,2,2] x, float[1] scale, float[1] bias, float[1] mean, float[1] var,
      float[2,16] w, float[2] b) => (float[1,2] y) {
  u = Upsample <mode = "nearest", scales = [1.0, 1.0, 2.0, 2.0]> (x)
  n = BatchNormalization <epsilon = 0.0, spatial = 1> (u, scale, bias, mean, var)
  r = Relu(n)
  f = Flatten <axis = 1> (r)
  y = Gemm <transB = 1> (f, w, b)
}
)ONNX");
  std::vector<float> w(32, 1.0f);
  for (int i = 0; i < 16; ++i) w[16 + i] = static_cast<float>(i);
  auto* g = m.mutable_graph();
  *g->add_initializer() = FloatTensor("scale", {1}, {2});
  *g->add_initializer() = FloatTensor("bias", {1}, {1});
  *g->add_initializer() = FloatTensor("mean", {1}, {0.5f});
  *g->add_initializer() = FloatTensor("var", {1}, {1});
  *g->add_initializer() = FloatTensor("w", {2, 16}, w);
  *g->add_initializer() = FloatTensor("b", {2}, {0.5f, -1});
  return m;
}

// By the opset-9 specs: nearest 2x upsampling of [[1,-2],[3,4]], then
// 2*(u-0.5)/1+1 = 2u, Relu: r = [2,2,0,0, 2,2,0,0, 6,6,8,8, 6,6,8,8];
// y0 = sum(r) + 0.5, y1 = sum(i * r[i]) - 1.
const std::vector<float> kOpset7Expected = {64.5f, 671.0f};

TEST(OnnxOpsetUpgradeTest, Opset7ModelIsUpgradedTo9AndRunsAsTheSpecsSay) {
  ScratchDir dir;
  WriteModel(Opset7Model(), dir.File("old7.onnx"));
  auto model = ImportOnnx(dir.File("old7.onnx"));
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->opset_imports.at(""), 9);
  EXPECT_THAT(model->warnings,
              Contains(HasSubstr("default-domain opset 7 upgraded to 9 with the ONNX version "
                                 "converter")));
  // The adapters' work: scales became an input, `spatial` is gone.
  const ir::Node* up = FindOp(model->graph, "Upsample");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->inputs.size(), 2u);
  const ir::Node* bn = FindOp(model->graph, "BatchNormalization");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->FindAttribute("spatial"), nullptr);
  // Weights come through untouched, still initializers.
  const ir::Tensor* w = model->graph.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(ValuesOf<float>(w->data)[17], 1.0f);
  EXPECT_EQ(ValuesOf<float>(w->data)[31], 15.0f);
  const std::vector<float> y = RunOne(
      *model, "x", runtime::RtTensor::FromVector<float>({1, 1, 2, 2}, {1, -2, 3, 4}));
  EXPECT_THAT(y, ElementsAre(kOpset7Expected[0], kOpset7Expected[1]));
}

TEST(OnnxOpsetUpgradeTest, ExternalWeightsKeepTheirFile) {
  ScratchDir dir;
  onnx::ModelProto m = Opset7Model();
  // w as external data in w.bin, as large old models were saved.
  onnx::TensorProto* w = nullptr;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() == "w") w = &t;
  }
  ASSERT_NE(w, nullptr);
  WriteFile(dir.File("w.bin"), w->raw_data());
  MakeExternal(w, {{"location", "w.bin"}});
  WriteModel(m, dir.File("old7.onnx"));
  auto model = ImportOnnx(dir.File("old7.onnx"));
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->input_files, Contains(dir.File("w.bin")));
  const std::vector<float> y = RunOne(
      *model, "x", runtime::RtTensor::FromVector<float>({1, 1, 2, 2}, {1, -2, 3, 4}));
  EXPECT_THAT(y, ElementsAre(kOpset7Expected[0], kOpset7Expected[1]));
}

TEST(OnnxOpsetUpgradeTest, Opset6LegacyBroadcastBecomesNumpyBroadcast) {
  // Opset 6 Add broadcasts `b` from `axis` when broadcast=1: a per-channel
  // bias. ONNX 1.12's adapter would make b [2,1,1,1] (wrong); the upgrade
  // unsqueezes it to [2,1,1] itself, the rank of `r` coming from shape
  // inference.
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 6]>
old6 (float[1,2,1,2] x, float[2] b) => (float[1,2,1,2] y) {
  r = Relu(x)
  y = Add <broadcast = 1, axis = 1> (r, b)
}
)ONNX");
  *m.mutable_graph()->add_initializer() = FloatTensor("b", {2}, {10, 20});
  ScratchDir dir;
  WriteModel(m, dir.File("old6.onnx"));
  auto model = ImportOnnx(dir.File("old6.onnx"));
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->opset_imports.at(""), 9);
  const ir::Node* add = FindOp(model->graph, "Add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->FindAttribute("broadcast"), nullptr);
  const std::vector<float> y =
      RunOne(*model, "x", runtime::RtTensor::FromVector<float>({1, 2, 1, 2}, {1, 2, 3, 4}));
  EXPECT_THAT(y, ElementsAre(11, 12, 23, 24));
}

// Opset 9 with the two operators whose attributes become inputs at 10.
onnx::ModelProto Opset9Model() {
  return ParseModel(R"ONNX(
<ir_version: 4, opset_import: ["" : 9]>
old9 (float[2,4] x) => (float[2,2] v, int64[2,2] i) {
  s = Slice <starts = [1], ends = [4], axes = [1]> (x)
  v, i = TopK <axis = 1, k = 2> (s)
}
)ONNX");
}

TEST(OnnxOpsetUpgradeTest, MinOpsetRaisesOpset9ModelsWithTheSameResults) {
  ScratchDir dir;
  WriteModel(Opset9Model(), dir.File("old9.onnx"));
  auto as9 = ImportOnnx(dir.File("old9.onnx"));
  ASSERT_THAT(as9, IsOk());
  EXPECT_EQ(as9->opset_imports.at(""), 9);  // supported as it is: untouched
  EXPECT_THAT(as9->warnings, Not(Contains(HasSubstr("upgraded"))));
  OnnxImportOptions options;
  options.min_opset = 10;
  auto as10 = ImportOnnx(dir.File("old9.onnx"), options);
  ASSERT_THAT(as10, IsOk());
  EXPECT_EQ(as10->opset_imports.at(""), 10);
  EXPECT_THAT(as10->warnings, Contains(HasSubstr("opset 9 upgraded to 10")));
  EXPECT_EQ(FindOp(as10->graph, "Slice")->inputs.size(), 4u);  // data, starts, ends, axes
  EXPECT_EQ(FindOp(as10->graph, "TopK")->inputs.size(), 2u);   // x, K
  auto x = runtime::RtTensor::FromVector<float>({2, 4}, {5, 1, 7, 3, 0, 9, 2, 8});
  const std::vector<float> want = {7, 3, 9, 8};  // top 2 of x[:, 1:4]
  EXPECT_EQ(RunOne(*as9, "x", x), want);
  EXPECT_EQ(RunOne(*as10, "x", x), want);
}

TEST(OnnxOpsetUpgradeTest, LegacyBroadcastOfUnknownRankIsRefused) {
  // Reshape to a shape of symbolic length: r's rank is unknown, so where
  // b lines up cannot be worked out.
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 6]>
old6 (float[2,4] x, int64[N] s, float[2] b) => (float[M,K] y) {
  r = Reshape(x, s)
  y = Add <broadcast = 1, axis = 1> (r, b)
}
)ONNX");
  m.mutable_graph()->mutable_node(1)->set_name("bias");
  ScratchDir dir;
  WriteModel(m, dir.File("old6.onnx"));
  EXPECT_THAT(ImportOnnx(dir.File("old6.onnx")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("node 'bias' (Add) broadcasts with axis=1"),
                             HasSubstr("the rank of 'r' is unknown"))));
}

TEST(OnnxOpsetUpgradeTest, ConverterRefusalNamesTheModelAndTheReason) {
  ScratchDir dir;
  // The checker the upgrade runs first knows no Frobnicate at opset 8.
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 8]>
old8 (float[2] x) => (float[2] y) {
  y = Frobnicate(x)
}
)ONNX");
  WriteModel(m, dir.File("old8.onnx"));
  EXPECT_THAT(ImportOnnx(dir.File("old8.onnx")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr(dir.File("old8.onnx")),
                             HasSubstr("cannot upgrade default-domain opset 8 to 9"),
                             HasSubstr("Frobnicate"))));
}

// Found by fuzz/onnx_fuzz.cc: ONNX 1.12's version converter dereferenced a
// null value for a graph output no node produces (SEGV in
// graphProtoToGraph); undefined names are refused before it runs
// (fuzz/regressions/onnx/crash_converter_undefined_output.onnx).
TEST(OnnxOpsetUpgradeTest, UndefinedNamesAreRefusedBeforeTheConverter) {
  ScratchDir dir;
  onnx::ModelProto output = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 7]>
old7 (float[2] x) => (float[2] y) {
  r = Relu(x)
}
)ONNX");
  WriteModel(output, dir.File("output.onnx"));
  EXPECT_THAT(ImportOnnx(dir.File("output.onnx")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(dir.File("output.onnx")),
                             HasSubstr("cannot upgrade default-domain opset 7 to 9"),
                             HasSubstr("graph 'old7': output 'y' is not an output of any node"))));

  onnx::ModelProto input = ParseModel(R"ONNX(
<ir_version: 3, opset_import: ["" : 7]>
old7 (float[2] x) => (float[2] y) {
  y = Add(x, missing)
}
)ONNX");
  input.mutable_graph()->mutable_node(0)->set_name("add");
  WriteModel(input, dir.File("input.onnx"));
  EXPECT_THAT(ImportOnnx(dir.File("input.onnx")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'add' (Add) input 'missing' is not defined")));
}

}  // namespace
}  // namespace slimpack::onnx_format
