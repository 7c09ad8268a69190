// examples/tiny-llama against the PyTorch numbers its train.py stored: the
// logits of the first 2 eval sequences (eval.safetensors) within 1e-4 and
// the eval-set perplexity (expected.json) within 1e-3 relative. The perplexity
// protocol with W = seq_len over the rows concatenated is exactly
// train.py's per-sequence mean loss. Registered by CMake whenever the
// example files exist or are tracked, so a missing file fails here.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace slimpack::hf {
namespace {

using ::slimpack::testing::IsOk;

const std::string kDir = SLIMPACK_TINY_LLAMA_DIR;

class TinyLlamaExampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ckpt = safetensors::ImportSafetensors(kDir);
    ASSERT_THAT(ckpt, IsOk());
    auto model = BuildDecoderGraph(*ckpt);
    ASSERT_THAT(model, IsOk());
    runtime::InterpreterOptions options;
    options.num_threads = 2;
    auto interp = runtime::Interpreter::Create(*model, options);
    ASSERT_THAT(interp, IsOk());
    interp_ = std::make_unique<runtime::Interpreter>(std::move(*interp));
    auto eval = safetensors::ReadSafetensorsFile(kDir + "/eval.safetensors");
    ASSERT_THAT(eval, IsOk());
    for (const ir::Tensor& t : eval->tensors) {
      if (t.name == "input_ids") ids_ = t;
      if (t.name == "reference_logits") ref_ = t;
    }
    ASSERT_EQ(ids_.dims.size(), 2u) << "eval.safetensors lacks input_ids [N, seq]";
    ASSERT_EQ(ref_.dims.size(), 3u) << "eval.safetensors lacks reference_logits [2, seq, vocab]";
  }
  std::unique_ptr<runtime::Interpreter> interp_;
  ir::Tensor ids_, ref_;
};

TEST_F(TinyLlamaExampleTest, LogitsMatchPyTorch) {
  auto ids = calibration::TokenIdsFromTensor(ids_, "eval.safetensors:input_ids");
  ASSERT_THAT(ids, IsOk());
  const int64_t rows = ref_.dims[0], seq = ids_.dims[1];
  ASSERT_EQ(ref_.dims[1], seq);
  const std::vector<int64_t> first(ids->begin(), ids->begin() + rows * seq);
  auto out = interp_->Run({{kInputIds, runtime::RtTensor::FromVector<int64_t>({rows, seq}, first)}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ((*out)[0].dims(), ref_.dims);
  const std::vector<float> got = (*out)[0].ToVector<float>();
  ASSERT_EQ(ref_.dtype, ir::DType::kF32);
  std::vector<float> want(got.size());
  ASSERT_EQ(ref_.data.size(), want.size() * 4);
  std::memcpy(want.data(), ref_.data.data(), ref_.data.size());
  double max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  RecordProperty("max_abs_logit_diff", std::to_string(max_diff));
  EXPECT_LE(max_diff, 1e-4);
}

TEST_F(TinyLlamaExampleTest, PerplexityMatchesExpectedJson) {
  std::ifstream in(kDir + "/expected.json");
  ASSERT_TRUE(in.good()) << kDir << "/expected.json is missing";
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json expected = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(expected.is_discarded());
  const double want = expected["eval_set"]["perplexity"].get<double>();
  auto ids = calibration::TokenIdsFromTensor(ids_, "eval.safetensors:input_ids");
  ASSERT_THAT(ids, IsOk());
  auto r = eval::ComputePerplexity(*interp_, *ids, {ids_.dims[1], 8});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->scored_tokens, expected["eval_set"]["predicted_tokens"].get<int64_t>());
  EXPECT_EQ(r->dropped_tokens, 0);
  RecordProperty("perplexity", std::to_string(r->perplexity));
  EXPECT_NEAR(r->perplexity, want, 1e-3 * want);
}

}  // namespace
}  // namespace slimpack::hf
