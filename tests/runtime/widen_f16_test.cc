// float16 exports (weights and activations f16: fp16_cnn.onnx, a Conv/
// MaxPool/Gemm CNN, and fp16_attention.onnx, an encoder block whose Softmax
// runs in f32 between casts) run in the interpreter through the f16 plan
// rewrite (runtime/widen_f16.h): f16 in, f16 out, and the numbers checked
// against the references scripts/fixtures/make_fp16_models.py stored:
//   f32_compute: the same f32-with-exact-casts computation in float64;
//     ours must be it rounded to f16 (half an f16 ulp, plus 1e-4 of the
//     largest output for f32-vs-f64 arithmetic);
//   outputs: the f32 torch original (bounds below, about 2x what was
//     measured at generation plus the final f16 rounding);
//   f16_runtime: every op rounded to f16 as a f16 runtime does.
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>

#include "formats/onnx/onnx_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "runtime/interpreter.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

const std::string kDir = std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/models/";

struct Fixture {
  const char* stem;
  const char* input;
  const char* output;
  double max_vs_original;    // |ours - f32 original|
  double max_vs_f16_runtime; // |ours - per-op f16 rounding|
};

// Generation measured (f32 compute vs original; f16 runtime vs original):
// cnn 1.0e-4 / 1.5e-4 (outputs up to 0.26), attention 3.3e-4 / 1.4e-3
// (outputs up to 3.5, whose f16 half-ulp is 9.8e-4). Ours, after the f16
// rounding of the output (vs original / vs f16 runtime): cnn 1.2e-4 /
// 1.2e-4, attention 1.1e-3 / 2.0e-3; the bounds are 2-3x those.
const Fixture kFixtures[] = {
    {"fp16_cnn", "image", "logits", 4e-4, 4e-4},
    {"fp16_attention", "tokens", "hidden", 3e-3, 4e-3},
};

const ir::Tensor* Find(const safetensors::SafetensorsFile& f, const std::string& name) {
  for (const auto& t : f.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<double> Values(const ir::Tensor& t) {
  std::vector<double> out;
  const uint8_t* p = t.data.data();
  for (uint64_t i = 0; i < t.data.size() * 8 / ir::DTypeBits(t.dtype); ++i) {
    if (t.dtype == ir::DType::kF16) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out.push_back(ir::F16ToF32(h));
    } else {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out.push_back(f);
    }
  }
  return out;
}

double F16HalfUlp(double v) {
  const double a = std::max(std::fabs(v), 6.103515625e-05);  // subnormals: fixed spacing
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(a))) - 11);
}

class Fp16ModelTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(Fp16ModelTest, RunsInF32WithF16InterfaceAndMatchesReferences) {
  const Fixture& f = GetParam();
  auto model = onnx_format::ImportOnnx(kDir + f.stem + ".onnx");
  ASSERT_THAT(model, IsOk());
  auto io = safetensors::ReadSafetensorsFile(kDir + f.stem + ".io.safetensors");
  ASSERT_THAT(io, IsOk());
  const std::string out = f.output;
  const ir::Tensor* input = Find(*io, std::string("inputs.") + f.input);
  const ir::Tensor* original = Find(*io, "outputs." + out);
  const ir::Tensor* f32_compute = Find(*io, "f32_compute." + out);
  const ir::Tensor* f16_runtime = Find(*io, "f16_runtime." + out);
  ASSERT_TRUE(input && original && f32_compute && f16_runtime);
  ASSERT_EQ(input->dtype, ir::DType::kF16);
  auto interp = Interpreter::Create(*model, {});
  ASSERT_THAT(interp, IsOk());
  const F16Widening& w = interp->f16_widening();
  EXPECT_EQ(w.inputs, 1);
  EXPECT_EQ(w.outputs, 1);
  EXPECT_GT(w.initializers, 0);
  EXPECT_THAT(w.Summary(), HasSubstr("computed in f32"));
  auto x = RtTensor::FromIrKeepingDType(*input);
  ASSERT_THAT(x, IsOk());
  ASSERT_EQ(x->dtype(), ir::DType::kF16);
  auto y = interp->Run({{f.input, *x}});
  ASSERT_THAT(y, IsOk());
  ASSERT_EQ(y->size(), 1u);
  ASSERT_EQ((*y)[0].dtype(), ir::DType::kF16);
  ASSERT_EQ((*y)[0].dims(), original->dims);
  ASSERT_EQ(Values(*original).size(), static_cast<size_t>((*y)[0].num_elements()));
  std::vector<double> ours;
  for (int64_t i = 0; i < (*y)[0].num_elements(); ++i) {
    ours.push_back(ir::F16ToF32((*y)[0].data<uint16_t>()[i]));
  }
  const std::vector<double> ref = Values(*f32_compute), orig = Values(*original),
                            half = Values(*f16_runtime);
  double peak = 0;
  for (double v : ref) peak = std::max(peak, std::fabs(v));
  double vs_orig = 0, vs_half = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_LE(std::fabs(ours[i] - ref[i]), F16HalfUlp(ref[i]) + 1e-4 * peak)
        << "element " << i << ": not the f32 computation rounded to f16";
    vs_orig = std::max(vs_orig, std::fabs(ours[i] - orig[i]));
    vs_half = std::max(vs_half, std::fabs(ours[i] - half[i]));
  }
  std::cout << f.stem << ": max |ours - f32 original| " << vs_orig
            << ", max |ours - f16 runtime| " << vs_half << "\n";
  EXPECT_LE(vs_orig, f.max_vs_original);
  EXPECT_LE(vs_half, f.max_vs_f16_runtime);
}

TEST_P(Fp16ModelTest, RefusesAnF32InputForTheDeclaredF16One) {
  const Fixture& f = GetParam();
  auto model = onnx_format::ImportOnnx(kDir + f.stem + ".onnx");
  ASSERT_THAT(model, IsOk());
  auto interp = Interpreter::Create(*model, {});
  ASSERT_THAT(interp, IsOk());
  auto io = safetensors::ReadSafetensorsFile(kDir + f.stem + ".io.safetensors");
  ASSERT_THAT(io, IsOk());
  const ir::Tensor* input = Find(*io, std::string("inputs.") + f.input);
  ASSERT_NE(input, nullptr);
  auto x32 = RtTensor::Allocate(ir::DType::kF32, input->dims);
  ASSERT_THAT(x32, IsOk());
  EXPECT_THAT(interp->Run({{f.input, *x32}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input '" + std::string(f.input) + "' has dtype f32, expected f16")));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp16ModelTest, ::testing::ValuesIn(kFixtures),
                         [](const auto& info) { return std::string(info.param.stem); });

// An f16 scale belongs to its quantized weight's layout (every reader
// widens it exactly): it does not make an f32 graph f16, and widening an
// f16 graph leaves it as stored while widening a plain f16 initializer.
TEST(WidenF16Test, QuantizationScalesAreNotF16Values) {
  ir::Graph g;
  ir::Tensor w;
  w.name = "w";
  w.dtype = ir::DType::kI8;
  w.dims = {2, 4};
  w.data = ir::TensorData::Owned(std::vector<uint8_t>(8, 1));
  w.quant.kind = ir::QuantKind::kInt8GroupWise;
  w.quant.axis = 1;
  w.quant.group_size = 2;
  w.quant.scale = "w.scale";
  ir::Tensor scale;
  scale.name = "w.scale";
  scale.dtype = ir::DType::kF16;
  scale.dims = {2, 2};
  scale.data = ir::TensorData::Owned(std::vector<uint8_t>{0, 0x3C, 0, 0x3C, 0, 0x3C, 0, 0x3C});
  ASSERT_THAT(g.AddInitializer(w), IsOk());
  ASSERT_THAT(g.AddInitializer(scale), IsOk());
  EXPECT_FALSE(HoldsF16(g));
  ir::Tensor h = scale;
  h.name = "h";
  ASSERT_THAT(g.AddInitializer(h), IsOk());
  EXPECT_TRUE(HoldsF16(g));
  auto done = WidenF16ToF32(g);
  ASSERT_THAT(done, IsOk());
  EXPECT_EQ(done->initializers, 1);
  EXPECT_EQ(g.FindInitializer("h")->dtype, ir::DType::kF32);
  EXPECT_EQ(g.FindInitializer("w.scale")->dtype, ir::DType::kF16);
}

}  // namespace
}  // namespace slimpack::runtime
