// `slimpack eval` and `slimpack run` through RunEval/RunRun: outputs,
// exit codes and the error messages users see.
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include "eval/perplexity.h"
#include "eval/runnable_model.h"
#include "runtime/interpreter.h"
#include "cli/eval_command.h"
#include "cli/exit_codes.h"
#include "cli/run_command.h"
#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/hf/tiny_checkpoint.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::cli {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::testing::HasSubstr;

ir::Tensor I64(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kI64;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                                      reinterpret_cast<const uint8_t*>(v.data() + v.size())));
  return t;
}

ir::Tensor I32(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  const std::vector<int32_t> narrow(v.begin(), v.end());
  ir::Tensor t = I64(name, std::move(dims), {});
  t.dtype = ir::DType::kI32;
  t.data = ir::TensorData::Owned(
      std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(narrow.data()),
                           reinterpret_cast<const uint8_t*>(narrow.data() + narrow.size())));
  return t;
}

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    decoder_.hidden = 16;
    decoder_.heads = 4;
    decoder_.kv_heads = 2;
    decoder_.head_dim = 4;
    decoder_.intermediate = 24;
    decoder_.vocab = 40;
    hf::testing::WriteCheckpoint(
        dir_.path(), decoder_, hf::testing::RandomDecoderTensors(decoder_, ir::DType::kF32, 4));
    std::mt19937 rng(2);
    ids_.resize(2 * 9);
    for (int64_t& i : ids_) i = static_cast<int64_t>(rng() % decoder_.vocab);
  }
  TempDir dir_;
  TinyDecoder decoder_;
  std::vector<int64_t> ids_;
};

TEST_F(CommandsTest, EvalPrintsJsonPerplexityOfTheLibrary) {
  ASSERT_THAT(numpy::WriteNpy(dir_.File("tokens.npy"), I64("t", {2, 9}, ids_)), IsOk());
  EvalOptions o;
  o.model = dir_.path();
  o.tokens = dir_.File("tokens.npy");
  o.window = 4;
  o.threads = 2;
  o.json = true;
  ::testing::internal::CaptureStdout();
  const int rc = RunEval(o);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, kExitOk);
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["windows"], 4);
  EXPECT_EQ(j["dropped_tokens"], 2);
  EXPECT_EQ(j["scored_tokens"], 12);

  auto model = eval::LoadRunnableModel(dir_.path());
  ASSERT_THAT(model, IsOk());
  auto interp = runtime::Interpreter::Create(*model, {});
  ASSERT_THAT(interp, IsOk());
  auto want = eval::ComputePerplexity(*interp, ids_, {4, 4});
  ASSERT_THAT(want, IsOk());
  EXPECT_NEAR(j["perplexity"].get<double>(), want->perplexity, 1e-9 * want->perplexity);
}

TEST_F(CommandsTest, EvalNamesOutOfVocabIdAndBrokenArtifacts) {
  ids_[11] = 77;
  ASSERT_THAT(numpy::WriteNpy(dir_.File("tokens.npy"), I64("t", {18}, ids_)), IsOk());
  EvalOptions o{dir_.path(), dir_.File("tokens.npy"), 4, 1, false};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunEval(o), kExitInputError);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("token id at index 11 is 77, outside the vocabulary [0, 40)"));

  WriteFile(dir_.File("manifest.json"), "{}");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunEval(o), kExitInputError);
  // A directory with a manifest is read as an artifact; the loader names
  // what is wrong with it.
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("manifest.json: format: missing required key"));
}

TEST_F(CommandsTest, RunWritesLogitsOfTheCheckpoint) {
  ASSERT_THAT(numpy::WriteNpz(dir_.File("in.npz"), {I64("input_ids", {2, 9}, ids_)}), IsOk());
  RunOptions o{dir_.path(), dir_.File("in.npz"), dir_.File("out.npz"), 2};
  ASSERT_EQ(RunRun(o), kExitOk);
  auto out = numpy::ReadNpz(dir_.File("out.npz"));
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "logits");
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{2, 9, 40}));

  auto model = eval::LoadRunnableModel(dir_.path());
  ASSERT_THAT(model, IsOk());
  auto interp = runtime::Interpreter::Create(*model, {});
  ASSERT_THAT(interp, IsOk());
  auto want = interp->Run({{"input_ids", runtime::RtTensor::FromVector<int64_t>({2, 9}, ids_)}});
  ASSERT_THAT(want, IsOk());
  const std::vector<float> w = (*want)[0].ToVector<float>();
  ASSERT_EQ((*out)[0].data.size(), w.size() * 4);
  EXPECT_EQ(0, std::memcmp((*out)[0].data.data(), w.data(), w.size() * 4));
}

// int32 token ids run as their int64 values; a negative or out-of-vocabulary
// id is refused with its position instead of wrapping around in Gather.
TEST_F(CommandsTest, RunTakesInt32TokenIdsAndRefusesBadOnes) {
  auto run = [&](const ir::Tensor& ids, const std::string& out) {
    EXPECT_THAT(numpy::WriteNpz(dir_.File("in.npz"), {ids}), IsOk());
    RunOptions o{dir_.path(), dir_.File("in.npz"), dir_.File(out), 1};
    ::testing::internal::CaptureStderr();
    const int rc = RunRun(o);
    return std::make_pair(rc, ::testing::internal::GetCapturedStderr());
  };
  ASSERT_EQ(run(I64("input_ids", {2, 9}, ids_), "wide.npz").first, kExitOk);
  ASSERT_EQ(run(I32("input_ids", {2, 9}, ids_), "narrow.npz").first, kExitOk);
  auto wide = numpy::ReadNpz(dir_.File("wide.npz"));
  auto narrow = numpy::ReadNpz(dir_.File("narrow.npz"));
  ASSERT_THAT(wide, IsOk());
  ASSERT_THAT(narrow, IsOk());
  ASSERT_EQ(wide->size(), 1u);
  ASSERT_EQ(narrow->size(), 1u);
  ASSERT_EQ((*wide)[0].data.size(), (*narrow)[0].data.size());
  EXPECT_EQ(0, std::memcmp((*wide)[0].data.data(), (*narrow)[0].data.data(),
                           (*wide)[0].data.size()));

  std::vector<int64_t> bad = ids_;
  bad[9 + 3] = -7;  // [1, 3]
  auto neg = run(I32("input_ids", {2, 9}, bad), "neg.npz");
  EXPECT_EQ(neg.first, kExitInputError);
  EXPECT_THAT(neg.second, HasSubstr("in.npz: input 'input_ids': token id at [1, 3] is -7"));
  bad[9 + 3] = 40;
  auto over = run(I64("input_ids", {2, 9}, bad), "over.npz");
  EXPECT_EQ(over.first, kExitInputError);
  EXPECT_THAT(over.second, HasSubstr("token id at [1, 3] is 40, outside the vocabulary [0, 40)"));
}

TEST_F(CommandsTest, RunNamesMissingExtraAndMisshapedInputs) {
  struct Case {
    const char* label;
    std::vector<ir::Tensor> inputs;
    const char* message;
  } cases[] = {
      {"missing", {I64("ids", {2, 9}, ids_)}, "'ids' is not a graph input (inputs: input_ids i64[batch,seq])"},
      {"extra", {I64("input_ids", {2, 9}, ids_), I64("mask", {2, 9}, ids_)}, "'mask' is not a graph input"},
      {"rank", {I64("input_ids", {18}, ids_)}, "input 'input_ids' is i64[18], expected i64[batch,seq] (rank)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_THAT(numpy::WriteNpz(dir_.File("in.npz"), c.inputs), IsOk());
    RunOptions o{dir_.path(), dir_.File("in.npz"), dir_.File("out.npz"), 1};
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(RunRun(o), kExitInputError);
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr(c.message));
  }
  ASSERT_THAT(numpy::WriteNpz(dir_.File("none.npz"), {}), IsOk());
  RunOptions o{dir_.path(), dir_.File("none.npz"), dir_.File("out.npz"), 1};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunRun(o), kExitInputError);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("missing input 'input_ids', expected i64[batch,seq]"));
}

TEST(RunOnnxTest, OutputsMatchNumpyOnAnOnnxModel) {
  TempDir dir;
  WriteFile(dir.File("make.py"), R"(
import numpy as np, onnx, sys
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 7
g = helper.make_graph(
    [helper.make_node('MatMul', ['x', 'w'], ['/mm/out']), helper.make_node('Relu', ['/mm/out'], ['y'])],
    'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['batch', 3])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['batch', 4]),
     helper.make_tensor_value_info('/mm/out', TensorProto.FLOAT, ['batch', 4])],
    [numpy_helper.from_array(w, 'w')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/m.onnx')
x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
np.savez(d + '/in.npz', x=x)
np.save(d + '/want_y.npy', np.maximum(x @ w, 0))
)");
  WriteFile(dir.File("check.py"), R"(
import numpy as np, sys
d = sys.argv[1]
z = np.load(d + '/out.npz')
assert sorted(z.keys()) == ['mm/out', 'y'], list(z.keys())
assert np.allclose(z['y'], np.load(d + '/want_y.npy'), atol=1e-6), z['y']
)");
  ASSERT_EQ(0, std::system(("/usr/bin/python3 " + dir.File("make.py") + " " + dir.path()).c_str()));
  RunOptions o{dir.File("m.onnx"), dir.File("in.npz"), dir.File("out.npz"), 1};
  ASSERT_EQ(RunRun(o), kExitOk);
  EXPECT_EQ(0, std::system(("/usr/bin/python3 " + dir.File("check.py") + " " + dir.path()).c_str()));
}

}  // namespace
}  // namespace slimpack::cli
