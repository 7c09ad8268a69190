// Every command that runs a model works on an artifact whose stored graph
// holds the slimpack.* ops the passes emit (FusedConv/FusedGemm from the
// default pipeline) or whose weights run packed (MatMulQ/GatherQ): the
// kernels come from the interpreter's default registry, so no command has
// to remember to register them. The quick start's own `out/digits-cnn`
// used to fail `slimpack calibrate` with "unsupported ops: slimpack:FusedConv".
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/calibrate_command.h"
#include "cli/convert_command.h"
#include "cli/eval_command.h"
#include "cli/exit_codes.h"
#include "cli/inspect_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/safetensors/test_files.h"

namespace slimpack::cli {
namespace {

using ::slimpack::safetensors::testing::TempDir;

const std::string kRoot = SLIMPACK_SOURCE_DIR;
const std::string kDigits = kRoot + "/examples/digits-cnn";
const std::string kLlama = SLIMPACK_TINY_LLAMA_DIR;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}

template <typename Fn>
int Quiet(Fn fn) {
  ::testing::internal::CaptureStdout();
  const int rc = fn();
  ::testing::internal::GetCapturedStdout();
  return rc;
}

std::string Convert(const TempDir& dir, const std::string& input, const std::string& name,
                    const std::string& quant) {
  ConvertOptions c;
  c.input = input;
  c.output = dir.File(name);
  c.quant = quant;
  c.threads = 2;
  EXPECT_EQ(Quiet([&] { return RunConvert(c); }), kExitOk) << name;
  return c.output;
}

nlohmann::json InspectJson(const std::string& path) {
  InspectOptions o;
  o.path = path;
  o.json = true;
  ::testing::internal::CaptureStdout();
  const int rc = RunInspect(o);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, kExitOk);
  return nlohmann::json::parse(out, nullptr, false);
}

class FusedDigitsArtifactTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    artifact_ = new std::string(Convert(*dir_, kDigits + "/model.onnx", "digits", ""));
  }
  static void TearDownTestSuite() {
    delete artifact_;
    delete dir_;
  }
  static TempDir* dir_;
  static std::string* artifact_;
};
TempDir* FusedDigitsArtifactTest::dir_ = nullptr;
std::string* FusedDigitsArtifactTest::artifact_ = nullptr;

TEST_F(FusedDigitsArtifactTest, InspectShowsTheFusedOpsInTheStoredGraph) {
  const nlohmann::json j = InspectJson(*artifact_);
  ASSERT_TRUE(j.contains("onnx")) << j.dump();
  const nlohmann::json& ops = j["onnx"]["ops"];
  ASSERT_TRUE(ops.is_object()) << j.dump();
  ASSERT_TRUE(ops.contains("slimpack.FusedConv")) << ops.dump();
  EXPECT_GE(ops["slimpack.FusedConv"].get<int64_t>(), 1);
  int64_t total = 0;
  for (const auto& [op, n] : ops.items()) total += n.get<int64_t>();
  EXPECT_EQ(total, j["onnx"]["nodes"].get<int64_t>());
  EXPECT_FALSE(ops.contains("Conv")) << "the default pipeline fuses every Conv: " << ops.dump();
}

TEST_F(FusedDigitsArtifactTest, CalibrateRunsOnTheArtifact) {
  CalibrateOptions o;
  o.model = *artifact_;
  o.data = {kDigits + "/eval.safetensors"};
  o.input_map = {"input=inputs"};
  o.output = dir_->File("calib.json");
  ASSERT_EQ(Quiet([&] { return RunCalibrate(o); }), kExitOk);
  const nlohmann::json table = ReadJson(o.output);
  ASSERT_TRUE(table.is_object());
  ASSERT_TRUE(table.contains("tensors")) << table.dump().substr(0, 400);
  EXPECT_GE(table["tensors"].size(), 4u);
}

TEST_F(FusedDigitsArtifactTest, RunMatchesTheOriginalModel) {
  auto batch = numpy::ReadNpz(kDigits + "/calib.npz");
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 1u);
  ir::Tensor one = (*batch)[0];
  ASSERT_EQ(one.dims, (std::vector<int64_t>{128, 1, 8, 8}));
  // The first image only: the model's batch dimension may be fixed to 1.
  std::vector<uint8_t> bytes(one.data.data(), one.data.data() + 64 * sizeof(float));
  one.dims = {1, 1, 8, 8};
  one.name = "input";
  one.data = ir::TensorData::Owned(std::move(bytes));
  const std::string in = dir_->File("in.npz");
  ASSERT_TRUE(numpy::WriteNpz(in, {one}).ok());
  auto run = [&](const std::string& model, const std::string& out) {
    RunOptions o;
    o.model = model;
    o.inputs = in;
    o.output = out;
    EXPECT_EQ(Quiet([&] { return RunRun(o); }), kExitOk) << model;
    auto t = numpy::ReadNpz(out);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : std::vector<ir::Tensor>{};
  };
  const std::vector<ir::Tensor> fused = run(*artifact_, dir_->File("fused.npz"));
  const std::vector<ir::Tensor> plain = run(kDigits + "/model.onnx", dir_->File("plain.npz"));
  ASSERT_EQ(fused.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(fused[0].dims, plain[0].dims);
  const float* a = reinterpret_cast<const float*>(fused[0].data.data());
  const float* b = reinterpret_cast<const float*>(plain[0].data.data());
  const int64_t n = fused[0].dims.back();
  ASSERT_EQ(n, 10);
  for (int64_t i = 0; i < n; ++i) {
    // BatchNorm folding changes rounding, never more than this.
    EXPECT_NEAR(a[i], b[i], 1e-4f * (1.0f + std::fabs(b[i]))) << i;
  }
}

TEST_F(FusedDigitsArtifactTest, ReportComparesTheArtifactWithTheOriginal) {
  ReportCommandOptions o;
  o.reference = kDigits + "/model.onnx";
  o.candidate = *artifact_;
  o.data = {kDigits + "/eval.safetensors"};
  o.input_map = {"input=inputs"};
  o.output = dir_->File("report");
  o.max_runs = 2;
  o.gate = "top1>=0.99";
  ASSERT_EQ(Quiet([&] { return RunReport(o); }), kExitOk);
  const nlohmann::json report = ReadJson(o.output + "/report.json");
  ASSERT_TRUE(report.is_object());
  EXPECT_TRUE(report.contains("layers"));
}

// An INT4 artifact of the LM: eval and run bind its weights packed
// (slimpack.MatMulQ / GatherQ after use-packed-weights).
TEST(PackedLlamaArtifactTest, EvalRunAndCalibrateWork) {
  TempDir dir;
  const std::string artifact = Convert(dir, kLlama, "int4", "int4");
  EvalOptions e;
  e.model = artifact;
  e.tokens = kLlama + "/eval_tokens.npy";
  e.window = 64;
  e.threads = 2;
  e.json = true;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(RunEval(e), kExitOk);
  const nlohmann::json ppl = nlohmann::json::parse(::testing::internal::GetCapturedStdout(),
                                                   nullptr, false);
  ASSERT_TRUE(ppl.is_object());
  // FP32 perplexity is 3.105; int4 g128 RTN costs a few per cent, not more.
  EXPECT_GT(ppl["perplexity"].get<double>(), 3.0);
  EXPECT_LT(ppl["perplexity"].get<double>(), 3.5);

  // `run` feeds a .npy to the graph input it is named after.
  auto tokens = numpy::ReadNpy(kLlama + "/calib_tokens.npy");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->dims.size(), 2u);
  ir::Tensor ids = *tokens;
  const uint64_t row_bytes = static_cast<uint64_t>(ids.dims[1]) * sizeof(int64_t);
  std::vector<uint8_t> two_rows(ids.data.data(), ids.data.data() + 2 * row_bytes);
  ids.dims[0] = 2;
  ids.name = "input_ids";
  ids.data = ir::TensorData::Owned(std::move(two_rows));
  ASSERT_TRUE(numpy::WriteNpy(dir.File("input_ids.npy"), ids).ok());
  RunOptions r;
  r.model = artifact;
  r.inputs = dir.File("input_ids.npy");
  r.output = dir.File("logits.npz");
  ASSERT_EQ(Quiet([&] { return RunRun(r); }), kExitOk);
  auto logits = numpy::ReadNpz(r.output);
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_FALSE(logits->empty());
  ASSERT_EQ((*logits)[0].dims.size(), 3u);
  EXPECT_EQ((*logits)[0].dims[0], 2);
  EXPECT_EQ((*logits)[0].dims[1], tokens->dims[1]);

  CalibrateOptions c;
  c.model = artifact;
  c.data = {kLlama + "/calib_tokens.npy"};
  c.output = dir.File("calib.json");
  c.max_batch = 8;
  ASSERT_EQ(Quiet([&] { return RunCalibrate(c); }), kExitOk);
  EXPECT_TRUE(ReadJson(c.output).is_object());
}

}  // namespace
}  // namespace slimpack::cli
