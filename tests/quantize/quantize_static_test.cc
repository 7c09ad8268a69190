// Tests for QuantizeStatic: the exact integer graph for Conv+Relu+Gemm, its
// outputs equal to a naive integer reference written here from the spec's
// formulas, fallbacks (regex, missing range), idempotence, errors, and the
// bundled digits CNN's W8A8 accuracy and SQNR against FP32.
#include "quantize/quantize_static.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "runtime/interpreter.h"
#include "calibration/calibrator.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/fused_kernels.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

// x[2,2,3,3] -> Conv 2x2 (3 channels) -> Relu -> Flatten -> Gemm (4 outputs).
std::string SmallText() {
  return "<ir_version: 8, opset_import: [\"\" : 17]>\n"
         "g (float[2,2,3,3] x) => (float[2,4] y) {\n"
         "  W = Constant <value = float[3,2,2,2] {" + FloatList(RandomFloats(24, 11, -1, 1)) +
         "}> ()\n"
         "  B = Constant <value = float[3] {0.25, -0.5, 0.125}> ()\n"
         "  G = Constant <value = float[4,12] {" + FloatList(RandomFloats(48, 12, -0.5f, 0.5f)) +
         "}> ()\n"
         "  GB = Constant <value = float[4] {0.5, -0.25, 0, 1}> ()\n"
         "  c = Conv (x, W, B)\n"
         "  r = Relu (c)\n"
         "  f = Flatten (r)\n"
         "  y = Gemm <transB = 1> (f, G, GB)\n"
         "}\n";
}

calibration::TensorCalibration Range(double lo, double hi) {
  calibration::TensorCalibration t;
  t.range.elements = 100;
  t.range.min = lo;
  t.range.max = hi;
  t.range.lo = lo;
  t.range.hi = hi;
  return t;
}

calibration::CalibrationTable SmallTable() {
  calibration::CalibrationTable table;
  table.tensors["x"] = Range(-2, 2.25);
  table.tensors["r"] = Range(0, 6);
  table.tensors["f"] = Range(0, 6);
  return table;
}

int64_t Opset(const ir::Model& m) {
  auto it = m.opset_imports.find("");
  return it == m.opset_imports.end() ? 17 : it->second;
}

// The float pipeline the pass expects to run after.
void RunFloatPipeline(ir::Model& model) {
  PassManagerOptions options;
  options.verify_each = true;
  options.opset = Opset(model);
  PassManager manager(options);
  ASSERT_THAT(manager.AddPasses(DefaultPipeline(ir::SourceFormat::kOnnx)), IsOk());
  ASSERT_THAT(manager.Run(model.graph), IsOk());
}

ir::Model FusedSmallModel() {
  ir::Model model = ImportText(SmallText());
  RunFloatPipeline(model);
  return model;
}

template <typename T>
std::vector<T> ValuesOf(const ir::Graph& g, const std::string& name) {
  const ir::Tensor* t = g.FindInitializer(name);
  if (t == nullptr) {
    ADD_FAILURE() << "no initializer " << name;
    return {};
  }
  std::vector<T> v(t->data.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t->data.data(), t->data.size());
  return v;
}

// Activation parameters from the spec formula (u8).
std::pair<float, int32_t> U8Params(double lo, double hi) {
  const float s = static_cast<float>((hi - lo) / 255.0);
  const double z = std::nearbyint(-lo / static_cast<double>(s));
  return {s, static_cast<int32_t>(std::clamp(z, 0.0, 255.0))};
}

// Symmetric int8 per row: s = max|w| / 127, q = rint(w / s).
void QuantizeRowsNaive(const std::vector<float>& w, int64_t rows, int64_t cols,
                       std::vector<int32_t>* q, std::vector<float>* s) {
  q->resize(w.size());
  s->resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    float mx = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, std::fabs(w[r * cols + c]));
    (*s)[r] = mx / 127.0f;
    for (int64_t c = 0; c < cols; ++c) {
      (*q)[r * cols + c] = static_cast<int32_t>(std::nearbyint(w[r * cols + c] / (*s)[r]));
    }
  }
}

TEST(QuantizeStaticTest, ConvReluGemmBecomesExpectedIntegerGraph) {
  ir::Model model = FusedSmallModel();
  ASSERT_EQ(CountOps(model.graph, "FusedConv"), 1);
  auto report = QuantizeStatic(model, SmallTable(), {});
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->integer_nodes, 2);
  EXPECT_EQ(report->float_nodes, 0);
  ASSERT_THAT(ir::VerifyGraph(model.graph), IsOk());
  std::vector<std::string> inits;
  for (const ir::Tensor& t : model.graph.initializers()) inits.push_back(t.name);
  // Relu is applied by the QLinearConv's saturation at zero point 0;
  // Flatten runs float between DequantizeLinear and QuantizeLinear.
  const std::string expected =
      "graph g (%x: f32[2,2,3,3]) -> (%y: f32[2,4]) {\n"
      "  init %x_scale: f32[] #masked\n"
      "  init %x_zero_point: u8[] #masked\n"
      "  init %W_quantized: i8[3,2,2,2] #masked\n"
      "  init %W_scale: f32[3] #masked\n"
      "  init %W_zero_point: i8[] #masked\n"
      "  init %r_scale: f32[] #masked\n"
      "  init %r_zero_point: u8[] #masked\n"
      "  init %B_quantized: i32[3] #masked\n"
      "  init %f_scale: f32[] #masked\n"
      "  init %f_zero_point: u8[] #masked\n"
      "  init %G_quantized: i8[12,4] #masked\n"
      "  init %G_requant_scale: f32[4] #masked\n"
      "  init %GB_quantized: i32[4] #masked\n"
      "  %x_quantized = QuantizeLinear(%x, %x_scale, %x_zero_point)  # x_QuantizeLinear\n"
      "  %r_quantized = QLinearConv(%x_quantized, %x_scale, %x_zero_point, %W_quantized, "
      "%W_scale, %W_zero_point, %r_scale, %r_zero_point, %B_quantized)  # c\n"
      "  %r = DequantizeLinear(%r_quantized, %r_scale, %r_zero_point)  # r_DequantizeLinear\n"
      "  %f = Flatten(%r)  # f\n"
      "  %f_quantized = QuantizeLinear(%f, %f_scale, %f_zero_point)  # f_QuantizeLinear\n"
      "  %y_acc = MatMulInteger(%f_quantized, %G_quantized, %f_zero_point)  # y_MatMulInteger\n"
      "  %y_acc_bias = Add(%y_acc, %GB_quantized)  # y_bias\n"
      "  %y_acc_float = Cast(%y_acc_bias) {to=1}  # y_Cast\n"
      "  %y = Mul(%y_acc_float, %G_requant_scale)  # y_scale\n"
      "}\n";
  EXPECT_EQ(PrintMasked(model.graph, inits), expected);

  // Initializer values from the spec's formulas.
  auto [sx, zx] = U8Params(-2, 2.25);
  auto [sr, zr] = U8Params(0, 6);
  EXPECT_EQ(ValuesOf<float>(model.graph, "x_scale"), std::vector<float>{sx});
  EXPECT_EQ(ValuesOf<uint8_t>(model.graph, "x_zero_point"), std::vector<uint8_t>{uint8_t(zx)});
  EXPECT_EQ(zr, 0);  // Relu folded: the lowest code is 0.0
  EXPECT_EQ(ValuesOf<uint8_t>(model.graph, "r_zero_point"), std::vector<uint8_t>{0});
  std::vector<int32_t> wq;
  std::vector<float> ws;
  QuantizeRowsNaive(RandomFloats(24, 11, -1, 1), 3, 8, &wq, &ws);
  EXPECT_EQ(ValuesOf<float>(model.graph, "W_scale"), ws);
  // Plain i8: the graph's ops give the meaning; a layout-tagged weight
  // would be dequantized to f32 by the interpreter at load.
  const ir::Tensor* w = model.graph.FindInitializer("W_quantized");
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->quant.quantized());
  std::vector<int8_t> got_w = ValuesOf<int8_t>(model.graph, "W_quantized");
  EXPECT_EQ(std::vector<int32_t>(got_w.begin(), got_w.end()), wq);
  const std::vector<float> b = {0.25f, -0.5f, 0.125f};
  std::vector<int32_t> bq;
  for (int m = 0; m < 3; ++m) bq.push_back(int32_t(std::nearbyint(double(b[m]) / double(sx * ws[m]))));
  EXPECT_EQ(ValuesOf<int32_t>(model.graph, "B_quantized"), bq);
}

TEST(QuantizeStaticTest, IntegerOutputsMatchNaiveIntegerReference) {
  ir::Model model = FusedSmallModel();
  auto inputs = RandomInputs(model.graph, 21);
  const std::vector<float> x = inputs["x"].ToVector<float>();
  ASSERT_THAT(QuantizeStatic(model, SmallTable(), {}), IsOk());
  auto got = Evaluate(model.graph, inputs, Opset(model));
  ASSERT_EQ(got.size(), 1u);

  // Naive reference, straight from the spec section.
  auto [sx, zx] = U8Params(-2, 2.25);
  auto [sr, zr] = U8Params(0, 6);
  std::vector<int32_t> xq(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xq[i] = int32_t(std::clamp<double>(std::nearbyint(x[i] / sx) + zx, 0, 255));
  }
  std::vector<int32_t> wq, gq;
  std::vector<float> ws, gs;
  QuantizeRowsNaive(RandomFloats(24, 11, -1, 1), 3, 8, &wq, &ws);
  QuantizeRowsNaive(RandomFloats(48, 12, -0.5f, 0.5f), 4, 12, &gq, &gs);
  const float b[3] = {0.25f, -0.5f, 0.125f};
  const float gb[4] = {0.5f, -0.25f, 0, 1};
  std::vector<float> want;
  for (int n = 0; n < 2; ++n) {
    std::vector<int32_t> rq;  // [3,2,2] flattened = f's codes (same range)
    for (int m = 0; m < 3; ++m) {
      for (int oy = 0; oy < 2; ++oy) {
        for (int ox = 0; ox < 2; ++ox) {
          int32_t acc = int32_t(std::nearbyint(double(b[m]) / double(sx * ws[m])));
          for (int c = 0; c < 2; ++c) {
            for (int ky = 0; ky < 2; ++ky) {
              for (int kx = 0; kx < 2; ++kx) {
                const int32_t xv = xq[((n * 2 + c) * 3 + oy + ky) * 3 + ox + kx];
                acc += (xv - zx) * wq[((m * 2 + c) * 2 + ky) * 2 + kx];
              }
            }
          }
          const float mult = sx * ws[m] / sr;
          rq.push_back(int32_t(std::clamp<double>(std::nearbyint(float(acc) * mult) + zr, 0, 255)));
        }
      }
    }
    for (int o = 0; o < 4; ++o) {
      const float mult = sr * gs[o];
      int32_t acc = int32_t(std::nearbyint(double(gb[o]) / double(mult)));
      for (int k = 0; k < 12; ++k) acc += (rq[k] - zr) * gq[o * 12 + k];
      want.push_back(float(acc) * mult);
    }
  }
  EXPECT_EQ(got[0], want);
  // And the W8A8 result is close to FP32 (a sanity bound, not the test).
  ir::Model fp32 = FusedSmallModel();
  const double diff = MaxAbsDiff(Evaluate(fp32.graph, inputs), got);
  std::cout << "small graph W8A8 vs FP32 max abs diff " << diff << "\n";
  EXPECT_LT(diff, 0.1);
}

TEST(QuantizeStaticTest, KeepsRegexMatchedNodesFloat) {
  ir::Model model = FusedSmallModel();
  StaticQuantOptions options;
  options.keep_float_regex = "^c$";  // the Conv; the Gemm is still quantized
  auto report = QuantizeStatic(model, SmallTable(), options);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->float_nodes, 1);
  EXPECT_EQ(report->integer_nodes, 1);
  EXPECT_EQ(CountOps(model.graph, "FusedConv"), 1);
  EXPECT_EQ(CountOps(model.graph, "QLinearConv"), 0);
  EXPECT_EQ(CountOps(model.graph, "MatMulInteger"), 1);
  ASSERT_EQ(report->decisions.size(), 2u);
  EXPECT_THAT(report->decisions[0].decision, HasSubstr("keep_float_regex"));
}

TEST(QuantizeStaticTest, KeepsConvFloatWithoutCalibratedOutputRange) {
  ir::Model model = FusedSmallModel();
  calibration::CalibrationTable table = SmallTable();
  table.tensors.erase("r");
  auto report = QuantizeStatic(model, table, {});
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(CountOps(model.graph, "QLinearConv"), 0);
  EXPECT_THAT(report->decisions[0].decision, HasSubstr("no calibrated range for output 'r'"));
  ASSERT_THAT(ir::VerifyGraph(model.graph), IsOk());
}

TEST(QuantizeStaticTest, NeverQuantizesBetweenConvAndAnUnfusedRelu) {
  // Without fuse-conv-activation the Conv stays float rather than put a
  // QuantizeLinear between it and its Relu; the Gemm is still quantized.
  ir::Model model = ImportText(SmallText());
  calibration::CalibrationTable table = SmallTable();
  table.tensors["c"] = Range(-6, 6);
  auto report = QuantizeStatic(model, table, {});
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(CountOps(model.graph, "QLinearConv"), 0);
  EXPECT_EQ(CountOps(model.graph, "Conv"), 1);
  EXPECT_EQ(CountOps(model.graph, "MatMulInteger"), 1);
  EXPECT_THAT(report->decisions[0].decision, HasSubstr("unfused Relu"));
}

TEST(QuantizeStaticTest, SecondRunChangesNothing) {
  ir::Model model = FusedSmallModel();
  ASSERT_THAT(QuantizeStatic(model, SmallTable(), {}), IsOk());
  const std::string once = ir::PrintGraph(model.graph);
  auto second = QuantizeStatic(model, SmallTable(), {});
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->integer_nodes, 0);
  EXPECT_EQ(ir::PrintGraph(model.graph), once);
}

TEST(QuantizeStaticTest, RejectsBadRegexAndOldOpset) {
  ir::Model model = FusedSmallModel();
  const std::string before = ir::PrintGraph(model.graph);
  StaticQuantOptions options;
  options.keep_float_regex = "conv[";
  EXPECT_THAT(QuantizeStatic(model, SmallTable(), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("conv[")));
  // Opset 9 is raised (below); older graphs do not come from the ONNX
  // importer (it upgrades them) and are refused.
  model.opset_imports[""] = 8;
  EXPECT_THAT(QuantizeStatic(model, SmallTable(), {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("imports opset 8, and only opset 9 is raised")));
  EXPECT_EQ(ir::PrintGraph(model.graph), before);
}

// The small graph at opset 9 with a Slice (attribute form) between the
// Relu and the Gemm: static quantization raises it to 10.
std::string Opset9Text() {
  return "<ir_version: 4, opset_import: [\"\" : 9]>\n"
         "g (float[2,2,3,3] x) => (float[2,4] y) {\n"
         "  W = Constant <value = float[3,2,2,2] {" + FloatList(RandomFloats(24, 11, -1, 1)) +
         "}> ()\n"
         "  B = Constant <value = float[3] {0.25, -0.5, 0.125}> ()\n"
         "  G = Constant <value = float[4,8] {" + FloatList(RandomFloats(32, 12, -0.5f, 0.5f)) +
         "}> ()\n"
         "  GB = Constant <value = float[4] {0.5, -0.25, 0, 1}> ()\n"
         "  c = Conv (x, W, B)\n"
         "  r = Relu (c)\n"
         "  s = Slice <starts = [0], ends = [2], axes = [1]> (r)\n"
         "  f = Flatten (s)\n"
         "  y = Gemm <transB = 1> (f, G, GB)\n"
         "}\n";
}

TEST(QuantizeStaticTest, RaisesAnOpset9ModelTo10) {
  ir::Model model = ImportText(Opset9Text());
  ASSERT_EQ(Opset(model), 9);
  RunFloatPipeline(model);
  const ir::Graph fp32 = model.graph;
  calibration::CalibrationTable table = SmallTable();
  table.tensors["s"] = Range(0, 6);
  auto report = QuantizeStatic(model, table, {});
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->integer_nodes, 2);
  EXPECT_EQ(report->opset_raised_from, 9);
  EXPECT_EQ(Opset(model), 10);
  ASSERT_THAT(ir::VerifyGraph(model.graph), IsOk());
  // Slice now reads starts/ends/axes from i64 initializers.
  const ir::Node* slice = nullptr;
  for (const ir::Node& n : model.graph.nodes) {
    if (n.op_type == "Slice") slice = &n;
  }
  ASSERT_NE(slice, nullptr);
  ASSERT_EQ(slice->inputs.size(), 4u);
  EXPECT_EQ(slice->FindAttribute("starts"), nullptr);
  const ir::Tensor* ends = model.graph.FindInitializer(slice->inputs[2]);
  ASSERT_NE(ends, nullptr);
  EXPECT_EQ(ValuesOf<int64_t>(model.graph, ends->name), std::vector<int64_t>{2});
  // Runs at opset 10 and stays close to FP32 at opset 9 (as the small graph).
  auto inputs = RandomInputs(fp32, 21);
  EXPECT_LT(MaxAbsDiff(Evaluate(fp32, inputs, 9), Evaluate(model.graph, inputs, 10)), 0.1);
  // Idempotent: a second run raises nothing and rewrites nothing.
  auto second = QuantizeStatic(model, table, {});
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->integer_nodes, 0);
  EXPECT_EQ(second->opset_raised_from, 0);
}

TEST(QuantizeStaticTest, RefusesToRaiseWhenADropoutMaskIsRead) {
  ir::Model model = ImportText(
      "<ir_version: 4, opset_import: [\"\" : 9]>\n"
      "g (float[2,4] x) => (float[2,5] y, float[2,4] m) {\n"
      "  W = Constant <value = float[4,5] {" + FloatList(RandomFloats(20, 13, -1, 1)) +
      "}> ()\n"
      "  d, m = Dropout (x)\n"
      "  y = MatMul (d, W)\n"
      "}\n");
  const std::string before = ir::PrintGraph(model.graph);
  calibration::CalibrationTable table;
  table.tensors["x"] = Range(-2, 2);
  table.tensors["d"] = Range(-2, 2);
  EXPECT_THAT(QuantizeStatic(model, table, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("mask output 'm' is read, and its type changes")));
  EXPECT_EQ(ir::PrintGraph(model.graph), before);
  EXPECT_EQ(Opset(model), 9);
}

TEST(QuantizeStaticTest, FusedClipFoldsIntoTheOutputRange) {
  ir::Model model = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1,2,3,3] x) => (float[1,3,2,2] r) {\n"
      "  W = Constant <value = float[3,2,2,2] {" + FloatList(RandomFloats(24, 11, -1, 1)) +
      "}> ()\n"
      "  lo = Constant <value = float {0}> ()\n"
      "  hi = Constant <value = float {6}> ()\n"
      "  c = Conv (x, W)\n"
      "  r = Clip (c, lo, hi)\n"
      "}\n");
  RunFloatPipeline(model);
  ASSERT_EQ(CountOps(model.graph, "FusedConv"), 1);
  calibration::CalibrationTable table;
  table.tensors["x"] = Range(-2, 2.25);
  table.tensors["r"] = Range(-1, 10);  // wider than the Clip: clamped to [0, 6]
  ASSERT_THAT(QuantizeStatic(model, table, {}), IsOk());
  EXPECT_EQ(CountOps(model.graph, "QLinearConv"), 1);
  EXPECT_EQ(CountOps(model.graph, "Clip"), 0);
  EXPECT_EQ(ValuesOf<float>(model.graph, "r_scale"), std::vector<float>{U8Params(0, 6).first});
  EXPECT_EQ(ValuesOf<uint8_t>(model.graph, "r_zero_point"), std::vector<uint8_t>{0});
}

TEST(QuantizeStaticTest, BatchedMatMulUsesMatMulIntegerWithoutBias) {
  ir::Model model = ImportText(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[2,3,4] x) => (float[2,3,5] y) {\n"
      "  W = Constant <value = float[4,5] {" + FloatList(RandomFloats(20, 13, -1, 1)) +
      "}> ()\n"
      "  y = MatMul (x, W)\n"
      "}\n");
  RunFloatPipeline(model);
  const ir::Graph fp32 = model.graph;
  calibration::CalibrationTable table;
  table.tensors["x"] = Range(-2, 2);
  auto report = QuantizeStatic(model, table, {});
  ASSERT_THAT(report, IsOk());
  ASSERT_THAT(ir::VerifyGraph(model.graph), IsOk());
  std::vector<std::string> ops;
  for (const ir::Node& n : model.graph.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"QuantizeLinear", "MatMulInteger", "Cast", "Mul"}));
  EXPECT_EQ(model.graph.FindInitializer("W"), nullptr);  // float weight dropped
  // Error bound: K = 4 products, each off by at most |w| * s_x / 2 +
  // |x| * s_w / 2 <= 1 * (4/255)/2 + 2 * (1/127)/2 ~= 0.0157: 4 * 0.0157 < 0.07.
  auto inputs = RandomInputs(fp32, 31);
  EXPECT_LT(MaxAbsDiff(Evaluate(fp32, inputs), Evaluate(model.graph, inputs)), 0.07);
}

// ---- The bundled digits CNN ------------------------------------------------

const std::string kDigits = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/";
constexpr int kCalibrationImages = 128;  // the first 128 eval images
constexpr int kFp32Correct = 443;         // examples/digits-cnn/expected.json
// Output SQNR bound (dB): 8-bit activations give ~6 dB per bit at best;
// 25 dB is the noise of ~4.5 effective bits on the logits.
constexpr double kMinSqnrDb = 25.0;

struct Logits {
  std::vector<float> values;
  int correct = 0;
};

Logits RunDigits(const ir::Model& model, const ir::Tensor& inputs, const ir::Tensor& labels) {
  runtime::InterpreterOptions options;
  options.num_threads = 2;
  options.opset_version = Opset(model);
  auto interpreter = runtime::Interpreter::Create(model.graph, options);
  EXPECT_THAT(interpreter, IsOk());
  if (!interpreter.ok()) return {};
  auto x = runtime::RtTensor::FromIr(inputs);
  EXPECT_THAT(x, IsOk());
  auto out = interpreter->Run({{"input", *x}});
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return {};
  Logits l;
  l.values = (*out)[0].ToVector<float>();
  const int64_t* y = reinterpret_cast<const int64_t*>(labels.data.data());
  for (int64_t i = 0; i < inputs.dims[0]; ++i) {
    const float* row = l.values.data() + i * 10;
    l.correct += std::max_element(row, row + 10) - row == y[i];
  }
  return l;
}

// Calibrates the digits CNN with `method`, quantizes it with activations of
// `act_type` and checks accuracy and SQNR against FP32.
void CheckDigits(const std::string& method, ir::DType act_type) {
  auto eval = safetensors::ReadSafetensorsFile(kDigits + "eval.safetensors");
  ASSERT_THAT(eval, IsOk());
  const ir::Tensor *inputs = nullptr, *labels = nullptr;
  for (const auto& t : eval->tensors) {
    if (t.name == "inputs") inputs = &t;
    if (t.name == "labels") labels = &t;
  }
  ASSERT_TRUE(inputs != nullptr && labels != nullptr);
  ir::Model model = ImportFile(kDigits + "model.onnx");

  // Calibrate the model as imported (the table `slimpack calibrate` writes)
  // on a slice of the eval images written as one .npy.
  ir::Tensor slice = *inputs;
  slice.name = "input";
  slice.dims[0] = kCalibrationImages;
  const uint64_t row_bytes = inputs->data.size() / inputs->dims[0];
  slice.data = ir::TensorData::View(nullptr, inputs->data.data(), row_bytes * kCalibrationImages);
  const std::string npy = ::testing::TempDir() + "/w8a8_calib_" + method +
                          std::string(ir::DTypeName(act_type)) + ".npy";
  ASSERT_THAT(numpy::WriteNpy(npy, slice), IsOk());
  auto data = calibration::Dataset::Open({npy}, calibration::FeedInputs(model.graph), {});
  ASSERT_THAT(data, IsOk());
  calibration::CalibrateOptions copts;
  auto range_method = calibration::RangeMethodFromName(method);
  ASSERT_THAT(range_method, IsOk());
  copts.observer.method = *range_method;
  copts.observer.num_bins = 1024;
  auto table = calibration::Calibrate(model, *data, copts);
  ASSERT_THAT(table, IsOk());
  std::filesystem::remove(npy);

  RunFloatPipeline(model);
  const Logits fp32 = RunDigits(model, *inputs, *labels);
  ASSERT_EQ(fp32.correct, kFp32Correct);
  StaticQuantOptions options;
  options.activation_dtype = act_type;
  auto report = QuantizeStatic(model, *table, options);
  ASSERT_THAT(report, IsOk());
  ASSERT_THAT(ir::VerifyGraph(model.graph), IsOk());
  EXPECT_EQ(CountOps(model.graph, "QLinearConv"), 3);
  EXPECT_EQ(CountOps(model.graph, "MatMulInteger"), 1);
  EXPECT_EQ(report->float_nodes, 0);
  // conv2's HardSwish has no integer form: it runs float on the dequantized
  // pre-activation (the folded BN output's calibrated range).
  ASSERT_EQ(report->decisions.size(), 4u);
  EXPECT_EQ(report->decisions[1].node, "/conv2/Conv");
  EXPECT_EQ(report->decisions[1].decision, "QLinearConv+float HardSwish");
  for (const ir::Node& n : model.graph.nodes) EXPECT_EQ(n.domain, "") << n.name;
  const ir::Tensor* input_zp = model.graph.FindInitializer("input_zero_point");
  ASSERT_NE(input_zp, nullptr);
  EXPECT_EQ(input_zp->dtype, act_type);
  for (const auto& d : report->decisions) {
    std::cout << "  " << d.node << " (" << d.op_type << "): " << d.decision << "\n";
  }
  const Logits w8a8 = RunDigits(model, *inputs, *labels);
  ASSERT_EQ(w8a8.values.size(), fp32.values.size());
  double signal = 0, noise = 0;
  for (size_t i = 0; i < fp32.values.size(); ++i) {
    signal += double(fp32.values[i]) * fp32.values[i];
    const double d = double(fp32.values[i]) - w8a8.values[i];
    noise += d * d;
  }
  const double sqnr = 10 * std::log10(signal / noise);
  std::cout << "digits-cnn W8A8 (" << method << ", " << ir::DTypeName(act_type) << " activations, " << kCalibrationImages
            << " calibration images): top-1 " << w8a8.correct << "/450 vs FP32 " << fp32.correct
            << "/450, logits SQNR " << sqnr << " dB\n";
  // "Within 1 point" of 450 images is a drop of at most 4 images.
  EXPECT_LE(fp32.correct - w8a8.correct, 4);
  EXPECT_GT(sqnr, kMinSqnrDb);
}

class DigitsW8A8Test : public ::testing::TestWithParam<const char*> {};

TEST_P(DigitsW8A8Test, AccuracyWithinOnePointAndSqnrAboveBound) {
  CheckDigits(GetParam(), ir::DType::kU8);
}

TEST(DigitsW8A8Int8Test, Int8ActivationsAccuracyWithinOnePoint) {
  CheckDigits("minmax", ir::DType::kI8);
}

INSTANTIATE_TEST_SUITE_P(Methods, DigitsW8A8Test,
                         ::testing::Values("minmax", "percentile", "entropy", "mse"));

}  // namespace
}  // namespace slimpack::passes
