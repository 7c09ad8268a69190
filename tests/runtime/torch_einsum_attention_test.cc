// Attention written with torch.einsum and exported by torch.onnx.export
// (tests/testdata/models/torch_einsum_attention.onnx, three Einsum nodes)
// runs through the importer and the interpreter and reproduces torch's
// output stored beside it, on 1 and 2 threads alike; so do the other float
// framework exports of tests/testdata/models/ (FrameworkOutputTest).
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "formats/onnx/onnx_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::testing::IsOk;

const std::string kDir = std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/models/";

const ir::Tensor* Find(const safetensors::SafetensorsFile& f, const std::string& name) {
  for (const auto& t : f.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(TorchEinsumAttentionTest, MatchesTorchOutput) {
  auto model = onnx_format::ImportOnnx(kDir + "torch_einsum_attention.onnx");
  ASSERT_THAT(model, IsOk());
  int einsums = 0;
  for (const ir::Node& n : model->graph.nodes) einsums += n.op_type == "Einsum";
  EXPECT_EQ(einsums, 3);
  auto io = safetensors::ReadSafetensorsFile(kDir + "torch_einsum_attention.io.safetensors");
  ASSERT_THAT(io, IsOk());
  const ir::Tensor* input = Find(*io, "inputs.hidden_states");
  const ir::Tensor* expected = Find(*io, "outputs.output");
  ASSERT_TRUE(input != nullptr && expected != nullptr);
  ASSERT_EQ(input->dims[0], 3);  // exported at batch 2: the batch axis is dynamic
  auto x = RtTensor::FromIr(*input);
  ASSERT_THAT(x, IsOk());
  std::vector<float> first;
  for (int threads : {1, 2}) {
    InterpreterOptions options;
    options.num_threads = threads;
    auto interp = Interpreter::Create(*model, options);
    ASSERT_THAT(interp, IsOk());
    auto out = interp->Run({{"hidden_states", *x}});
    ASSERT_THAT(out, IsOk());
    ASSERT_EQ(out->size(), 1u);
    const RtTensor& y = (*out)[0];
    ASSERT_EQ(y.dims(), expected->dims);
    const float* want = reinterpret_cast<const float*>(expected->data.data());
    double max_diff = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      max_diff = std::max(max_diff, std::fabs(double(y.data<float>()[i]) - want[i]));
    }
    // torch and the ONNX reading agreed to 2.4e-7 when the fixture was made.
    EXPECT_LE(max_diff, 1e-5) << threads << " thread(s)";
    if (first.empty()) {
      first = y.ToVector<float>();
    } else {
      EXPECT_EQ(y.ToVector<float>(), first) << "results depend on the thread count";
    }
  }
}

// Every other float framework export beside its stored reference
// (`inputs.<name>` fed by graph input name, `outputs.<name>` compared by
// output name): the tensors the fixture scripts recorded are read by a
// test, not just committed.
struct Fixture {
  const char* stem;
  double bound;  // max |ours - framework|, with headroom over what it is today
};

class FrameworkOutputTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(FrameworkOutputTest, ReproducesTheStoredFrameworkOutput) {
  const Fixture& f = GetParam();
  auto model = onnx_format::ImportOnnx(kDir + f.stem + ".onnx");
  ASSERT_THAT(model, IsOk());
  auto io = safetensors::ReadSafetensorsFile(kDir + f.stem + ".io.safetensors");
  ASSERT_THAT(io, IsOk());
  std::map<std::string, RtTensor> inputs;
  std::vector<std::pair<std::string, const ir::Tensor*>> expected;
  for (const ir::Tensor& t : io->tensors) {
    if (t.name.rfind("inputs.", 0) == 0) {
      auto x = RtTensor::FromIr(t);
      ASSERT_THAT(x, IsOk());
      inputs.emplace(t.name.substr(7), *std::move(x));
    } else if (t.name.rfind("outputs.", 0) == 0) {
      expected.push_back({t.name.substr(8), &t});
    }
  }
  ASSERT_EQ(inputs.size(), 1u);
  ASSERT_EQ(expected.size(), 1u);
  auto interp = Interpreter::Create(*model, InterpreterOptions{});
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run(inputs);
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ(model->graph.outputs[0].name, expected[0].first);
  const RtTensor& y = (*out)[0];
  ASSERT_EQ(y.dims(), expected[0].second->dims);
  const float* want = reinterpret_cast<const float*>(expected[0].second->data.data());
  double max_diff = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(y.data<float>()[i]) - want[i]));
  }
  EXPECT_LE(max_diff, f.bound) << f.stem;
  EXPECT_GT(y.num_elements(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FrameworkOutputTest,
                         ::testing::Values(Fixture{"torch_mlp", 1e-5},
                                           Fixture{"torch_encoder_block", 1e-5},
                                           Fixture{"torch_llama_block", 1e-5},
                                           Fixture{"paddle_style", 1e-5},
                                           Fixture{"paddle_hardswish_ln", 1e-5}),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                           return std::string(info.param.stem);
                         });

}  // namespace
}  // namespace slimpack::runtime
