// Tests for widen-f16: an f16 graph becomes the f32 graph with an entry
// Cast on its f16 input, an exit Cast on its f16 output and the rounding of
// its Cast to f16 kept (whole graph compared); the numbers are bit-identical
// to the interpreter running the f16 graph and equal a hand computation with
// f16 rounding at the Cast and the output; an f16 input only Cast to float
// is left alone; a second run changes nothing; a CastLike whose target type
// is unknown is refused naming the node.
#include "passes/lower/widen_f16.h"

#include <cmath>
#include <cstring>
#include <set>

#include "formats/onnx/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "runtime/interpreter.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr char kWeights[] = "0.5, -1.25, 2, 0.25, 1, -0.5, 0.75, -2, 1.5";

// ONNX text has no float16 literals: the Constants named in `half` are
// written as float (values exact in f16) and stored as FLOAT16.
ir::Model ImportWithF16Constants(const std::string& text, const std::set<std::string>& half) {
  onnx::ModelProto proto = onnx_format::testing::ParseModel(text);
  for (onnx::NodeProto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.name().empty() && node.output_size() > 0) node.set_name(node.output(0));
    if (node.op_type() != "Constant" || !half.count(node.output(0))) continue;
    onnx::TensorProto* t = node.mutable_attribute(0)->mutable_t();
    std::string raw;
    for (float f : t->float_data()) {
      const uint16_t h = ir::F32ToF16(f);
      raw.append(reinterpret_cast<const char*>(&h), 2);
    }
    t->clear_float_data();
    t->set_data_type(onnx::TensorProto::FLOAT16);
    t->set_raw_data(raw);
  }
  onnx_format::testing::ScratchDir dir;
  const std::string path = dir.File("model.onnx");
  onnx_format::testing::WriteModel(proto, path);
  return ImportFile(path);
}

// x: f16 input, W: f16 weight, a Cast to f32 and back (the "Softmax in f32"
// shape of a mixed-precision export), an f16 output.
std::string BeforeText() {
  return std::string("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                     "g (float16[2,3] x) => (float16[2,3] y) {\n"
                     "  W = Constant <value = float[3,3] {") + kWeights + "}> ()\n"
         "  m = MatMul(x, W)\n"
         "  s = Cast <to = 1> (m)\n"
         "  e = Exp(s)\n"
         "  h = Cast <to = 10> (e)\n"
         "  y = Add(h, x)\n"
         "}\n";
}

std::string ExpectedText() {
  return std::string("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                     "g (float16[2,3] x) => (float16[2,3] y) {\n"
                     "  W = Constant <value = float[3,3] {") + kWeights + "}> ()\n"
         "  x_f32 = Cast <to = 1> (x)\n"
         "  m = MatMul(x_f32, W)\n"
         "  s = Cast <to = 1> (m)\n"
         "  e = Exp(s)\n"
         "  h_f16 = Cast <to = 10> (e)\n"
         "  h = Cast <to = 1> (h_f16)\n"
         "  y_f32 = Add(h, x_f32)\n"
         "  y = Cast <to = 10> (y_f32)\n"
         "}\n";
}

runtime::RtTensor F16Input(const std::vector<float>& values) {
  auto t = runtime::RtTensor::Allocate(ir::DType::kF16, {2, 3});
  EXPECT_THAT(t, IsOk());
  for (size_t i = 0; i < values.size(); ++i) t->mutable_data<uint16_t>()[i] = ir::F32ToF16(values[i]);
  return *std::move(t);
}

std::vector<uint16_t> RunF16(const ir::Graph& graph, const runtime::RtTensor& x) {
  auto interp = runtime::Interpreter::Create(graph, {});
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  auto out = interp->Run({{"x", x}});
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[0].dtype(), ir::DType::kF16);
  return (*out)[0].ToVector<uint16_t>();
}

TEST(WidenF16Test, CastsAtTheBoundaryAndKeepsCastRounding) {
  ir::Model before = ImportWithF16Constants(BeforeText(), {"W"});
  ASSERT_EQ(before.graph.FindInitializer("W")->dtype, ir::DType::kF16);
  ir::Model expected = ImportText(ExpectedText());
  ir::Graph want = expected.graph;
  NameNode(want, "x_f32", "x_to_f32");
  NameNode(want, "h", "h_to_f32");
  NameNode(want, "h_f16", "h");
  NameNode(want, "y", "y_to_f16");
  NameNode(want, "y_f32", "y");
  ir::Graph after = before.graph;
  PassRun run = RunPass(WidenF16Pass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_TRUE(run.context.changed());
  EXPECT_THAT(ir::VerifyGraph(after), IsOk());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(want));
  EXPECT_THAT(run.context.log(),
              Contains(HasSubstr("computed in f32: 1 f16 constant widened, 1 input cast to f32 on "
                                 "entry, 1 output cast back to f16, 1 Cast to f16 kept as rounding")));
  // Intermediate types follow: m is f32 now, the Cast's own result stays f16.
  EXPECT_EQ(after.value_info.at("m").dtype, ir::DType::kF32);
  EXPECT_EQ(after.value_info.at("h").dtype, ir::DType::kF32);
  EXPECT_EQ(after.value_info.at("h_f16").dtype, ir::DType::kF16);
  EXPECT_EQ(after.value_info.at("y_f32").dtype, ir::DType::kF32);
  EXPECT_EQ(after.value_info.count("y"), 0u);
}

TEST(WidenF16Test, NumbersMatchTheInterpreterAndF16RoundingAtTheCasts) {
  ir::Model before = ImportWithF16Constants(BeforeText(), {"W"});
  ir::Graph after = before.graph;
  ASSERT_THAT(RunPass(WidenF16Pass(), after).status, IsOk());
  const std::vector<float> xs = {0.1f, -0.7f, 0.33f, 1.2f, -0.05f, 0.9f};
  const runtime::RtTensor x = F16Input(xs);
  const std::vector<uint16_t> ours = RunF16(after, x);
  EXPECT_EQ(RunF16(before.graph, x), ours);  // the interpreter applies the same rewrite
  // By hand: f32 MatMul and Exp on the f16 values, Exp rounded to f16 by the
  // Cast, the Add in f32, the result rounded to f16.
  const float w[9] = {0.5f, -1.25f, 2, 0.25f, 1, -0.5f, 0.75f, -2, 1.5f};
  ASSERT_EQ(ours.size(), 6u);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      float m = 0;
      for (int k = 0; k < 3; ++k) m += ir::F16ToF32(ir::F32ToF16(xs[r * 3 + k])) * w[k * 3 + c];
      const float h = ir::F16ToF32(ir::F32ToF16(std::exp(m)));
      const float y = h + ir::F16ToF32(ir::F32ToF16(xs[r * 3 + c]));
      const uint16_t want = ir::F32ToF16(y);
      // One f16 ulp for exp's last-bit differences crossing a rounding edge.
      EXPECT_LE(std::abs(int(ours[r * 3 + c]) - int(want)), 1) << "row " << r << " col " << c;
    }
  }
}

TEST(WidenF16Test, LeavesAnInputOnlyCastToFloat) {
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float16[2,3] x) => (float[2,3] y) {\n"
      "  c = Cast <to = 1> (x)\n"
      "  y = Relu(c)\n"
      "}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(WidenF16Pass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_FALSE(run.context.changed());
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

TEST(WidenF16Test, LeavesAnF32GraphAlone) {
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[2,3] x) => (float[2,3] y) {\n"
      "  y = Relu(x)\n"
      "}\n");
  ir::Graph after = before.graph;
  PassRun run = RunPass(WidenF16Pass(), after);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_FALSE(run.context.changed());
  EXPECT_THAT(run.context.log(), Contains(HasSubstr("holds no f16 value")));
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

TEST(WidenF16Test, SecondRunChangesNothing) {
  ir::Model before = ImportWithF16Constants(BeforeText(), {"W"});
  ir::Graph once = before.graph;
  ASSERT_THAT(RunPass(WidenF16Pass(), once).status, IsOk());
  ir::Graph twice = once;
  PassRun second = RunPass(WidenF16Pass(), twice);
  ASSERT_THAT(second.status, IsOk());
  EXPECT_FALSE(second.context.changed());
  EXPECT_EQ(ir::PrintGraph(twice), ir::PrintGraph(once));
  EXPECT_EQ(twice.value_info.at("h_f16").dtype, ir::DType::kF16);
}

TEST(WidenF16Test, RefusesCastLikeToAnUnknownType) {
  ir::Model before = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float16[2,3] x, float[2,3] z) => (float[2,3] y) {\n"
      "  l = Relu(z)\n"
      "  y = CastLike(x, l)\n"
      "}\n");
  ir::Graph after = before.graph;
  after.value_info.erase("l");  // as a model without shape information
  PassRun run = RunPass(WidenF16Pass(), after);
  EXPECT_THAT(run.status, StatusIs(absl::StatusCode::kUnimplemented,
                                   HasSubstr("CastLike node 'y' casts to the dtype of 'l'")));
  EXPECT_EQ(ir::PrintGraph(after), ir::PrintGraph(before.graph));
}

}  // namespace
}  // namespace slimpack::passes
