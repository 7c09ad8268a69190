// The bundled digits CNN run through the interpreter: its outputs equal the
// PyTorch logits stored beside it, and its accuracy on the labelled eval set
// equals the accuracy recorded when it was trained (examples/README.md).
#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/interpreter.h"
#include "formats/onnx/onnx_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::testing::IsOk;

const std::string kDir = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/";

const ir::Tensor* Find(const safetensors::SafetensorsFile& f, const std::string& name) {
  for (const auto& t : f.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(DigitsCnnExampleTest, MatchesTorchLogitsAndTrainingAccuracy) {
  auto model = onnx_format::ImportOnnx(kDir + "model.onnx");
  ASSERT_THAT(model, IsOk());
  InterpreterOptions options;
  options.num_threads = 2;
  auto interpreter = Interpreter::Create(*model, options);
  ASSERT_THAT(interpreter, IsOk());
  auto eval = safetensors::ReadSafetensorsFile(kDir + "eval.safetensors");
  ASSERT_THAT(eval, IsOk());
  const ir::Tensor* inputs = Find(*eval, "inputs");
  const ir::Tensor* labels = Find(*eval, "labels");
  const ir::Tensor* reference = Find(*eval, "reference_logits");
  ASSERT_TRUE(inputs && labels && reference);
  auto x = RtTensor::FromIr(*inputs);
  ASSERT_THAT(x, IsOk());
  auto out = interpreter->Run({{"input", *x}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  const RtTensor& logits = (*out)[0];
  const int64_t n = inputs->dims[0];
  ASSERT_EQ(logits.dims(), (std::vector<int64_t>{n, 10}));

  // PyTorch's FP32 logits for the first 16 images (ORT matched them to 3e-7).
  const float* got = logits.data<float>();
  const float* want = reinterpret_cast<const float*>(reference->data.data());
  double max_diff = 0;
  for (int64_t i = 0; i < reference->dims[0] * 10; ++i) {
    max_diff = std::max(max_diff, std::fabs(double(got[i]) - want[i]));
  }
  EXPECT_LE(max_diff, 1e-4);

  // Accuracy equals the trained figure exactly (same images, same argmax).
  const int64_t* y = reinterpret_cast<const int64_t*>(labels->data.data());
  int correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < 10; ++c) {
      if (got[i * 10 + c] > got[i * 10 + best]) best = c;
    }
    correct += best == y[i];
  }
  std::ifstream f(kDir + "expected.json");
  std::stringstream text;
  text << f.rdbuf();
  auto expected = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(expected.is_discarded());
  EXPECT_EQ(correct, expected["test_correct"].get<int>());
  EXPECT_EQ(n, expected["eval_set"]["images"].get<int64_t>());
}

}  // namespace
}  // namespace slimpack::runtime
