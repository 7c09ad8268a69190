// The convert stages on graphs that arrive in forms the quantizers do not
// take as they are (issue 16):
// - float16 exports (fp16_cnn, fp16_attention): widen-f16 runs first, the
//   f16 inputs/outputs stay, and W8A8 / int8 / int4 from f16 meet SQNR
//   bounds against the f32 original like the f32 models' tests;
// - ONNX Runtime's dynamic quantization (ort_dynamic_quant): dequantized to
//   float first, then the requested scheme, within an SQNR bound of the
//   quantized original; an integer node outside the pattern is refused by
//   name.
// The SQNR bounds are about 3 dB below what was measured (printed).
#include "converter/convert_stages.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "formats/import.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "ir/verifier.h"
#include "passes/lower/dequantize_integer_ops.h"
#include "runtime/interpreter.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace slimpack::converter {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::slimpack::testing::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kDir = std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/models/";

struct Case {
  const char* stem;
  const char* input;
  const char* output;
  const char* reference;  // io.safetensors prefix of the reference output
  const char* scheme;     // "w8a8" or a weight scheme
  double min_sqnr_db;
};

std::vector<double> Floats(const ir::Tensor& t) {
  std::vector<double> out;
  const bool half = t.dtype == ir::DType::kF16;
  const uint64_t n = t.data.size() / (half ? 2 : 4);
  for (uint64_t i = 0; i < n; ++i) {
    if (half) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      out.push_back(ir::F16ToF32(h));
    } else {
      float f;
      std::memcpy(&f, t.data.data() + 4 * i, 4);
      out.push_back(f);
    }
  }
  return out;
}

std::vector<double> Floats(const runtime::RtTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    out.push_back(t.dtype() == ir::DType::kF16 ? ir::F16ToF32(t.data<uint16_t>()[i])
                                               : t.data<float>()[i]);
  }
  return out;
}

double SqnrDb(const std::vector<double>& ref, const std::vector<double>& got) {
  if (ref.size() != got.size()) return -INFINITY;
  double signal = 0, noise = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    signal += ref[i] * ref[i];
    noise += (ref[i] - got[i]) * (ref[i] - got[i]);
  }
  return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

struct Loaded {
  ir::Model model;
  ir::Tensor input;
  std::vector<double> reference;
};

Loaded Load(const Case& c) {
  Loaded l;
  auto model = formats::ImportModel(kDir + c.stem + ".onnx");
  EXPECT_THAT(model, IsOk());
  if (model.ok()) l.model = *std::move(model);
  auto io = safetensors::ReadSafetensorsFile(kDir + c.stem + ".io.safetensors");
  EXPECT_THAT(io, IsOk());
  if (!io.ok()) return l;
  for (const ir::Tensor& t : io->tensors) {
    if (t.name == std::string("inputs.") + c.input) l.input = t;
    if (t.name == std::string(c.reference) + "." + c.output) l.reference = Floats(t);
  }
  l.input.name = c.input;
  return l;
}

runtime::RtTensor RunOne(const ir::Model& model, const ir::Tensor& input) {
  auto interp = runtime::Interpreter::Create(model, {});
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  auto x = runtime::RtTensor::FromIrKeepingDType(input);
  EXPECT_THAT(x, IsOk());
  auto out = interp->Run({{input.name, *x}});
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return {};
  return (*out)[0];
}

std::vector<std::string> Names(const StageResult& r) { return r.passes_run; }

class ConvertFromF16Test : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertFromF16Test, QuantizesTheWidenedGraphKeepingF16Io) {
  const Case& c = GetParam();
  Loaded l = Load(c);
  ASSERT_EQ(l.input.dtype, ir::DType::kF16);
  StageOptions options;
  std::vector<std::string> log;
  options.verbose = true;
  options.log = [&](const std::string& line) { log.push_back(line); };
  // A directory of this process's own: the int8/int4 cases of the same
  // stem run beside it under ctest -j.
  TempDir dir;
  const std::string npy = dir.File(std::string(c.stem) + "_calib.npy");
  if (std::string(c.scheme) == "w8a8") {
    ASSERT_THAT(numpy::WriteNpy(npy, l.input), IsOk());
    options.quant.w8a8 = true;
    options.calib = {npy};
  } else {
    auto scheme = quantize::ParseWeightScheme(c.scheme, 32);
    ASSERT_THAT(scheme, IsOk());
    options.quant.scheme = *scheme;
  }
  auto done = RunConvertStages(l.model, options);
  ASSERT_THAT(done, IsOk());
  EXPECT_THAT(Names(*done), Contains("widen-f16"));
  EXPECT_THAT(log, Contains(HasSubstr("the f16 graph is computed in f32")));
  EXPECT_THAT(ir::VerifyGraph(l.model.graph), IsOk());
  ASSERT_EQ(l.model.graph.inputs[0].dtype, ir::DType::kF16);
  ASSERT_EQ(l.model.graph.outputs[0].dtype, ir::DType::kF16);
  int quantized_weights = 0, integer_nodes = 0;
  for (const ir::Tensor& t : l.model.graph.initializers()) {
    quantized_weights += t.quant.quantized() ? 1 : 0;
    if (t.dtype != ir::DType::kF16) continue;
    // Only a folded Cast to f16 (a kept rounding) stays f16, read by the
    // Cast back to f32 alone.
    for (const ir::Node& n : l.model.graph.nodes) {
      if (std::find(n.inputs.begin(), n.inputs.end(), t.name) == n.inputs.end()) continue;
      EXPECT_TRUE(n.op_type == "Cast" && n.IntAttrOr("to", 0) == 1)
          << t.name << " is f16 and read by " << n.name << " (" << n.op_type << ")";
    }
  }
  for (const ir::Node& n : l.model.graph.nodes) {
    integer_nodes += n.op_type == "QLinearConv" || n.op_type == "MatMulInteger";
  }
  EXPECT_GT(std::string(c.scheme) == "w8a8" ? integer_nodes : quantized_weights, 0);
  const runtime::RtTensor y = RunOne(l.model, l.input);
  ASSERT_EQ(y.dtype(), ir::DType::kF16);
  const double sqnr = SqnrDb(l.reference, Floats(y));
  std::cout << c.stem << " " << c.scheme << " from f16: SQNR vs the f32 original " << sqnr
            << " dB\n";
  EXPECT_GT(sqnr, c.min_sqnr_db);
}

// Measured (ASan build, one thread, the fixture inputs):
// cnn w8a8 43.0, int8 50.8, int4 (group 32) 28.4; attention w8a8 51.8,
// int8 57.9, int4 33.5 dB. The digits CNN's f32 W8A8 bound is 25 dB.
INSTANTIATE_TEST_SUITE_P(
    Fixtures, ConvertFromF16Test,
    ::testing::Values(Case{"fp16_cnn", "image", "logits", "outputs", "w8a8", 40},
                      Case{"fp16_cnn", "image", "logits", "outputs", "int8", 47},
                      Case{"fp16_cnn", "image", "logits", "outputs", "int4", 25},
                      Case{"fp16_attention", "tokens", "hidden", "outputs", "w8a8", 48},
                      Case{"fp16_attention", "tokens", "hidden", "outputs", "int8", 54},
                      Case{"fp16_attention", "tokens", "hidden", "outputs", "int4", 30}),
    [](const auto& info) {
      return std::string(info.param.stem) + "_" + info.param.scheme;
    });

class ConvertFromOrtDynamicTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertFromOrtDynamicTest, DequantizesFirstThenAppliesTheScheme) {
  const Case& c = GetParam();
  Loaded l = Load(c);
  StageOptions options;
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  TempDir dir;
  const std::string npy = dir.File(std::string("ort_calib_") + c.scheme + ".npy");
  if (std::string(c.scheme) == "w8a8") {
    ASSERT_THAT(numpy::WriteNpy(npy, l.input), IsOk());
    options.quant.w8a8 = true;
    options.calib = {npy};
  } else {
    auto scheme = quantize::ParseWeightScheme(c.scheme, 32);
    ASSERT_THAT(scheme, IsOk());
    options.quant.scheme = *scheme;
  }
  auto done = RunConvertStages(l.model, options);
  ASSERT_THAT(done, IsOk());
  EXPECT_THAT(Names(*done), Contains("dequantize-integer-ops"));
  EXPECT_THAT(log, Contains(HasSubstr("dequantized to float first")));
  EXPECT_THAT(ir::VerifyGraph(l.model.graph), IsOk());
  for (const ir::Node& n : l.model.graph.nodes) {
    EXPECT_NE(n.op_type, "DynamicQuantizeLinear") << n.name;
    EXPECT_NE(n.op_type, "ConvInteger") << n.name;
  }
  const runtime::RtTensor y = RunOne(l.model, l.input);
  const double sqnr = SqnrDb(l.reference, Floats(y));
  std::cout << "ort_dynamic_quant " << c.scheme << ": SQNR vs the quantized original " << sqnr
            << " dB\n";
  EXPECT_GT(sqnr, c.min_sqnr_db);
}

// Measured: w8a8 39.4, int8 41.8, int4 (group 32) 18.8 dB against the
// ORT-quantized graph's own outputs, which carry 8-bit error themselves.
INSTANTIATE_TEST_SUITE_P(
    Schemes, ConvertFromOrtDynamicTest,
    ::testing::Values(Case{"ort_dynamic_quant", "x", "y", "outputs", "w8a8", 36},
                      Case{"ort_dynamic_quant", "x", "y", "outputs", "int8", 38},
                      Case{"ort_dynamic_quant", "x", "y", "outputs", "int4", 15}),
    [](const auto& info) { return std::string(info.param.scheme); });

TEST(ConvertFromOrtDynamicTest, RefusesAnIntegerNodeOutsideThePattern) {
  Loaded l = Load({"ort_dynamic_quant", "x", "y", "outputs", "int8", 0});
  // A weight scale that may be overridden at run time is not a constant:
  // fc2's chain no longer matches.
  l.model.graph.inputs.push_back({"fc2.weight_scale", ir::DType::kF32, ir::Shape::FromDims({})});
  StageOptions options;
  auto scheme = quantize::ParseWeightScheme("int8");
  ASSERT_THAT(scheme, IsOk());
  options.quant.scheme = *scheme;
  EXPECT_THAT(RunConvertStages(l.model, options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'/fc2/MatMul_quant' (MatMulInteger)")));
}

TEST(ConvertFromOrtDynamicTest, WithoutQuantTheIntegerGraphIsKept) {
  Loaded l = Load({"ort_dynamic_quant", "x", "y", "outputs", "", 0});
  StageOptions options;
  auto done = RunConvertStages(l.model, options);
  ASSERT_THAT(done, IsOk());
  EXPECT_THAT(Names(*done), ::testing::Not(Contains("dequantize-integer-ops")));
  EXPECT_EQ(passes::IntegerComputeNodes(l.model.graph).size(), 6u);
}

}  // namespace
}  // namespace slimpack::converter
