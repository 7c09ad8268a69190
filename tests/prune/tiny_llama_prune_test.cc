// Perplexity of the bundled trained LM after pruning 20 % of the MLP
// channels of every layer, on the first 64 eval windows (seq 64): the
// activation-aware (Wanda) criterion against weight magnitude, with the
// least-squares refit of down_proj; the loss criterion (down_proj output
// error of removing each channel) against magnitude; and the refit against
// no refit.
#include <cstdio>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gtest/gtest.h"
#include "prune/decoder/prune_structured.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack::prune {
namespace {

using ::slimpack::testing::IsOk;

const std::string kDir = SLIMPACK_TINY_LLAMA_DIR;
constexpr int64_t kEvalWindows = 64;

double Perplexity(const ir::Model& checkpoint) {
  return ::slimpack::testing::TinyLlamaPerplexity(checkpoint, kEvalWindows);
}

double PrunedPerplexity(Criterion c, bool refit) {
  auto m = safetensors::ImportSafetensors(kDir);
  EXPECT_THAT(m, IsOk());
  PruneOptions o;
  o.ratio = 0.2;
  o.criterion = c;
  o.target = Target::kMlp;
  o.refit = refit;
  o.calib_paths = {kDir + "/calib_tokens.npy"};
  o.calib_samples = 16;
  o.threads = 2;
  auto r = PruneDecoder(*m, o);
  EXPECT_THAT(r, IsOk());
  EXPECT_EQ(m->architecture->intermediate_size, 344 - 69);
  const double ppl = Perplexity(*m);
  std::printf("[ prune    ] mlp 20%% %s refit=%d: perplexity %.6f\n",
              std::string(CriterionName(c)).c_str(), refit ? 1 : 0, ppl);
  return ppl;
}

TEST(TinyLlamaPruneTest, ActivationAwareAndRefitOrderings) {
  auto base = safetensors::ImportSafetensors(kDir);
  ASSERT_THAT(base, IsOk());
  const double fp32 = Perplexity(*base);
  const double l2 = PrunedPerplexity(Criterion::kL2, false);
  const double l2_refit = PrunedPerplexity(Criterion::kL2, true);
  const double act = PrunedPerplexity(Criterion::kActivation, false);
  const double act_refit = PrunedPerplexity(Criterion::kActivation, true);
  const double loss = PrunedPerplexity(Criterion::kLoss, false);
  const double loss_refit = PrunedPerplexity(Criterion::kLoss, true);
  std::printf("[ prune    ] fp32 %.6f | l2 %.6f l2+refit %.6f | activation %.6f activation+refit %.6f"
              " | loss %.6f loss+refit %.6f\n",
              fp32, l2, l2_refit, act, act_refit, loss, loss_refit);
  // Removing 20 % of the MLP costs something on a trained model.
  EXPECT_GT(l2, fp32);
  EXPECT_LE(act, l2);
  EXPECT_LE(act_refit, l2_refit);
  EXPECT_LT(l2_refit, l2);
  EXPECT_LT(act_refit, act);
  // The calibration loss proxy also beats magnitude, and the refit helps it.
  EXPECT_LT(loss, l2);
  EXPECT_LT(loss_refit, l2_refit);
  EXPECT_LT(loss_refit, loss);
}

}  // namespace
}  // namespace slimpack::prune
