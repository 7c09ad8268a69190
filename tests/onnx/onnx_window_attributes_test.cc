// Bad window attributes (strides, dilations, kernel_shape, pads) on Conv
// and pooling nodes, in the table style of onnx_bad_inputs_test.cc. Every
// input shape is static, so without the importer's checks ONNX shape
// inference would divide by the zero stride and kill the test process
// (SIGFPE): these cases passing at all is half the point.
#include <functional>
#include <string>
#include <vector>

#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/shape_inference.h"
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
using ::slimpack::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr char k2e62[] = "4611686018427387904";  // 2^62
constexpr char kInt64Max[] = "9223372036854775807";

std::string ModelPath(const ScratchDir& dir) { return dir.File("model.onnx"); }

// One `op` node named `node_name` (empty: left unnamed) on x[1,1,4,4], and
// w[1,1,2,2] for the convolutions, with `attrs` in ONNX text syntax. y has
// no declared shape, so an import with inference gives it the inferred one.
onnx::ModelProto WindowModel(const std::string& op, const std::string& node_name,
                             const std::string& attrs) {
  const bool conv = op.rfind("Conv", 0) == 0;
  onnx::ModelProto m = ParseModel(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1, 1, 4, 4] x" + std::string(conv ? ", float[1, 1, 2, 2] w" : "") +
      ") => (float[1, 1, H, W] y) {\n"
      "  y = " + op + (attrs.empty() ? "" : " <" + attrs + ">") + " (x" +
      (conv ? ", w" : "") + ")\n}\n");
  m.mutable_graph()->mutable_node(0)->set_name(node_name);
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return m;
}

std::function<void(const ScratchDir&)> Window(std::string op, std::string node_name,
                                              std::string attrs) {
  return [=](const ScratchDir& d) {
    WriteModel(WindowModel(op, node_name, attrs), ModelPath(d));
  };
}

struct BadCase {
  std::string name;
  std::function<void(const ScratchDir&)> write;  // creates model.onnx
  std::vector<std::string> substrings;           // besides the model path
};

std::vector<BadCase> BadCases() {
  const std::string big = k2e62;
  return {
      {"ConvZeroStrides", Window("Conv", "conv1", "strides = [0, 0]"),
       {"node 'conv1' (Conv): strides[0] = 0, must be >= 1"}},
      {"MaxPoolZeroSecondStride",
       Window("MaxPool", "pool1", "kernel_shape = [2, 2], strides = [1, 0]"),
       {"node 'pool1' (MaxPool): strides[1] = 0, must be >= 1"}},
      // AveragePool has dilations from opset 19 only, but the interpreter
      // honours the attribute at any opset, so it is checked at any opset.
      {"AveragePoolZeroDilationUnnamed",
       Window("AveragePool", "", "kernel_shape = [2, 2], dilations = [0, 1]"),
       {"node 'AveragePool_0' (AveragePool): dilations[0] = 0, must be >= 1"}},
      {"ConvPadsOf2To62Overflow",
       Window("Conv", "conv1", "pads = [" + big + ", " + big + ", " + big + ", " + big + "]"),
       {"node 'conv1' (Conv): pads[0] + pads[2] = " + big + " + " + big +
        " overflows int64"}},
      {"ConvNegativePad", Window("Conv", "conv1", "pads = [0, -1, 0, 0]"),
       {"node 'conv1' (Conv): pads[1] = -1, must be >= 0"}},
      {"ConvKernelSpanOverflow",
       Window("Conv", "conv1",
              "kernel_shape = [2, 2], dilations = [" + std::string(kInt64Max) + ", 1]"),
       {"node 'conv1' (Conv): kernel_shape[0] = 2 with dilations[0] = " +
        std::string(kInt64Max) + " spans more than int64"}},
      {"ConvZeroKernel", Window("Conv", "conv1", "kernel_shape = [0, 2]"),
       {"node 'conv1' (Conv): kernel_shape[0] = 0, must be >= 1"}},
      {"ConvTransposeZeroDilation", Window("ConvTranspose", "up1", "dilations = [1, 0]"),
       {"node 'up1' (ConvTranspose): dilations[1] = 0, must be >= 1"}},
      {"ConvTransposeNegativeOutputPadding",
       Window("ConvTranspose", "up1", "strides = [2, 2], output_padding = [-1, 0]"),
       {"node 'up1' (ConvTranspose): output_padding[0] = -1, must be >= 0"}},
      {"LpPoolZeroStrideUnnamed",
       Window("LpPool", "", "kernel_shape = [2, 2], strides = [0, 1]"),
       {"node 'LpPool_0' (LpPool): strides[0] = 0, must be >= 1"}},
      {"PadsLengthDisagreesWithStrides",
       Window("Conv", "conv1", "strides = [1, 1], pads = [0, 0]"),
       {"node 'conv1' (Conv): pads has 2 values but strides has 2; pads needs 4"}},
      {"StridesLengthDisagreesWithKernelShape",
       Window("MaxPool", "pool1", "kernel_shape = [2, 2], strides = [1]"),
       {"node 'pool1' (MaxPool): strides has 1 values but kernel_shape has 2"}},
      {"MaxPoolWithoutKernelShape", Window("MaxPool", "pool1", ""),
       {"node 'pool1' (MaxPool): has no kernel_shape, which MaxPool requires"}},
      {"ZeroStrideInsideIfBranch",
       [](const ScratchDir& d) {
         WriteModel(ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[1, 1, 4, 4] x, float[1, 1, 2, 2] w) => (float[1, 1, H, W] y) {
  y = If(c) <then_branch = then_g () => (float[1, 1, 3, 3] t) { t = Conv <strides = [1, 0]> (x, w) },
             else_branch = else_g () => (float[1, 1, 3, 3] e) { e = Conv (x, w) }>
}
)ONNX"),
                    ModelPath(d));
       },
       {"node 'If_0' (If): attribute 'then_branch': subgraph 'then_g': "
        "node 'Conv_0' (Conv): strides[1] = 0, must be >= 1"}},
  };
}

// Keeps ctest names readable (gtest would dump the struct's bytes).
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class OnnxWindowAttributeTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(OnnxWindowAttributeTest, RefusedNamingFileNodeAttributeAndValue) {
  const BadCase& c = GetParam();
  ScratchDir dir;
  c.write(dir);
  // Refused with or without shape inference: the interpreter reads the
  // same attributes.
  for (bool infer : {true, false}) {
    SCOPED_TRACE(infer ? "with shape inference" : "without shape inference");
    OnnxImportOptions options;
    options.run_shape_inference = infer;
    auto result = ImportOnnx(ModelPath(dir), options);
    EXPECT_THAT(result, StatusIs(Code::kInvalidArgument, HasSubstr(ModelPath(dir))));
    for (const std::string& s : c.substrings) {
      EXPECT_THAT(result, StatusIs(Code::kInvalidArgument, HasSubstr(s)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, OnnxWindowAttributeTest, ::testing::ValuesIn(BadCases()),
                         [](const auto& info) { return info.param.name; });

TEST(OnnxWindowAttributeImportTest, ValidWindowsStillImportWithInferredShapes) {
  struct Good {
    std::string op, attrs, y_shape;
  };
  for (const Good& g : std::vector<Good>{
           {"Conv", "strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1]", "[1,1,3,3]"},
           {"Conv", "auto_pad = \"SAME_UPPER\", strides = [2, 2]", "[1,1,2,2]"},
           {"ConvTranspose", "strides = [2, 2], output_padding = [1, 1]", "[1,1,9,9]"},
           {"MaxPool", "kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1", "[1,1,2,2]"},
           {"AveragePool", "kernel_shape = [2, 2], pads = [1, 1, 0, 0]", "[1,1,4,4]"},
           {"LpPool", "kernel_shape = [2, 2], strides = [2, 2]", "[1,1,2,2]"},
       }) {
    SCOPED_TRACE(g.op + " <" + g.attrs + ">");
    ScratchDir dir;
    WriteModel(WindowModel(g.op, "n", g.attrs), ModelPath(dir));
    auto model = ImportOnnx(ModelPath(dir));
    ASSERT_THAT(model, IsOk());
    ASSERT_EQ(model->graph.outputs.size(), 1u);
    EXPECT_EQ(model->graph.outputs[0].shape.ToString(), g.y_shape);
  }
}

TEST(OnnxWindowAttributeImportTest, ShapeInferenceItselfSkipsAZeroStrideModel) {
  // InferShapesInPlace guards its own call into libonnx, for callers other
  // than ImportOnnx: a warning, the model untouched, no SIGFPE.
  onnx::ModelProto m = WindowModel("Conv", "conv1", "strides = [0, 0]");
  const std::string before = m.SerializeAsString();
  std::vector<std::string> warnings;
  InferShapesInPlace(&m, &warnings);
  EXPECT_EQ(m.SerializeAsString(), before);
  EXPECT_THAT(warnings, Contains(HasSubstr(
                            "shape inference skipped: node 'conv1' (Conv): strides[0] = 0")));
}

}  // namespace
}  // namespace slimpack::onnx_format
