// Perplexity protocol and token files: the window NLL against hand-computed
// log-softmax, the whole protocol against the naive decoder, batching
// invariance, and the token-file errors.
#include <cmath>
#include <random>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "hf/llama_graph_builder.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/hf/naive_decoder.h"
#include "tests/hf/tiny_checkpoint.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::eval {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

TEST(WindowNllTest, IsNegativeLogSoftmaxOfTheNextToken) {
  // Window of 3 tokens, vocab 2: positions 0 and 1 are scored.
  const float logits[] = {0.f, 1.f, 2.f, -1.f, 5.f, 5.f};
  const int64_t ids[] = {0, 1, 0};
  const double want = (std::log(1 + std::exp(1.0)) - 1.0) + (std::log(std::exp(2.0) + std::exp(-1.0)) - 2.0);
  EXPECT_NEAR(WindowNll(logits, ids, 3, 2), want, 1e-12);
}

class PerplexityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    decoder_.model_type = "llama";
    decoder_.hidden = 16;
    decoder_.heads = 4;
    decoder_.kv_heads = 2;
    decoder_.head_dim = 4;
    decoder_.intermediate = 24;
    decoder_.vocab = 40;
    tensors_ = hf::testing::RandomDecoderTensors(decoder_, ir::DType::kF32, 11);
    hf::testing::WriteCheckpoint(dir_.path(), decoder_, tensors_);
    auto ckpt = safetensors::ImportSafetensors(dir_.path());
    ASSERT_THAT(ckpt, IsOk());
    arch_ = *ckpt->architecture;
    auto model = hf::BuildDecoderGraph(*ckpt);
    ASSERT_THAT(model, IsOk());
    auto interp = runtime::Interpreter::Create(*model, runtime::InterpreterOptions{});
    ASSERT_THAT(interp, IsOk());
    interp_ = std::make_unique<runtime::Interpreter>(std::move(*interp));
  }

  TempDir dir_;
  TinyDecoder decoder_;
  std::vector<ir::Tensor> tensors_;
  ir::ArchitectureInfo arch_;
  std::unique_ptr<runtime::Interpreter> interp_;
};

TEST_F(PerplexityTest, FollowsTheProtocolAndMatchesTheNaiveDecoder) {
  const int64_t w = 6;
  std::vector<int64_t> tokens(3 * w + 2);
  std::mt19937 rng(9);
  for (int64_t& t : tokens) t = static_cast<int64_t>(rng() % decoder_.vocab);
  // Reference: each full window alone through the naive decoder.
  double total = 0;
  for (int64_t k = 0; k < 3; ++k) {
    const std::vector<int64_t> ids(tokens.begin() + k * w, tokens.begin() + (k + 1) * w);
    const std::vector<double> logits =
        hf::testing::NaiveDecoderLogits(arch_, hf::testing::ByName(tensors_), ids, 1, w);
    for (int64_t t = 0; t + 1 < w; ++t) {
      double z = 0;
      for (int64_t v = 0; v < decoder_.vocab; ++v) z += std::exp(logits[t * decoder_.vocab + v]);
      total += std::log(z) - logits[t * decoder_.vocab + ids[t + 1]];
    }
  }
  const double want = total / (3 * (w - 1));
  for (int64_t per_batch : {1, 2, 4}) {
    SCOPED_TRACE(per_batch);
    auto r = ComputePerplexity(*interp_, tokens, {w, per_batch});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->windows, 3);
    EXPECT_EQ(r->dropped_tokens, 2);
    EXPECT_EQ(r->scored_tokens, 15);
    EXPECT_NEAR(r->mean_nll, want, 1e-5 * want);
    EXPECT_NEAR(r->perplexity, std::exp(want), 1e-5 * std::exp(want));
  }
}

TEST_F(PerplexityTest, RejectsShortStreamsSmallWindowsAndOutOfVocabIds) {
  EXPECT_THAT(ComputePerplexity(*interp_, {1, 2, 3}, {4, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fewer than one window of 4")));
  EXPECT_THAT(ComputePerplexity(*interp_, {1, 2, 3}, {1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(">= 2")));
  EXPECT_THAT(ComputePerplexity(*interp_, {1, 2, 3, 45}, {2, 1, 40}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("token id at index 3 is 45, outside the vocabulary [0, 40)")));
  // Without a declared vocabulary the embedding lookup reports it, naming
  // the HF module.
  EXPECT_THAT(ComputePerplexity(*interp_, {1, 2, 3, 45}, {2, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("model.embed_tokens/Gather")));
  EXPECT_THAT(calibration::CheckTokenIds({1, 2, -1}, 40, "t.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t.npy: token id at index 2 is -1, outside the vocabulary [0, 40)")));
}

TEST(TokenIdsTest, ReadsInt32RowsConcatenatedAndRejectsOtherDtypes) {
  TempDir dir;
  ir::Tensor t;
  t.name = "ids";
  t.dtype = ir::DType::kI32;
  t.dims = {2, 3};
  const std::vector<int32_t> v = {1, 2, 3, 4, 5, 6};
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                                      reinterpret_cast<const uint8_t*>(v.data() + 6)));
  ASSERT_THAT(numpy::WriteNpy(dir.File("ids.npy"), t), IsOk());
  auto ids = calibration::LoadTokenIds(dir.File("ids.npy"));
  ASSERT_THAT(ids, IsOk());
  EXPECT_EQ(*ids, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  t.dtype = ir::DType::kF32;
  ASSERT_THAT(numpy::WriteNpy(dir.File("f.npy"), t), IsOk());
  EXPECT_THAT(calibration::LoadTokenIds(dir.File("f.npy")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("f32 (supported: i32, i64)")));
  t.dtype = ir::DType::kI32;
  t.dims = {1, 2, 3};
  ASSERT_THAT(numpy::WriteNpy(dir.File("r3.npy"), t), IsOk());
  EXPECT_THAT(calibration::LoadTokenIds(dir.File("r3.npy")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[1,2,3]")));
}

}  // namespace
}  // namespace slimpack::eval
