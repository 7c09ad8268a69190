// The ggml size planner (export/gguf_size_plan.h) on the bundled tiny-llama:
// its plans stay within the budget, buy less error with more bits, beat a
// uniform type at that type's size, do not depend on the thread count, and
// refuse a target no candidate mix reaches. (The 256-wide K-type case runs
// through the CLI in cli_ggml_blocks.)
#include "export/gguf_size_plan.h"

#include <string>
#include <vector>

#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

class GgmlSizePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = safetensors::ImportSafetensors(SLIMPACK_TINY_LLAMA_DIR);
    ASSERT_THAT(model, IsOk());
    model_ = *std::move(model);
    options_.preset = "q4_k_m";
  }
  absl::StatusOr<GgmlSizePlan> Plan(double bpw, std::vector<TensorType> candidates = {},
                                    int threads = 2) {
    GgmlSizeTarget target;
    target.bits_per_weight = bpw;
    target.candidates = std::move(candidates);
    target.threads = threads;
    return PlanGgmlTypesForSize(model_, options_, target);
  }
  ir::Model model_;
  GgufExportOptions options_;
};

TEST_F(GgmlSizePlanTest, MoreBitsBuyLessErrorWithinTheBudget) {
  double last_error = -1;
  for (double bpw : {7.2, 7.6, 8.0, 9.0, 10.0}) {
    auto plan = Plan(bpw);
    ASSERT_THAT(plan, IsOk()) << bpw;
    EXPECT_LE(plan->bits_per_weight, bpw * (1 + 1e-9));
    EXPECT_GT(plan->bits_per_weight, bpw - 0.5) << "the budget is spent";
    EXPECT_GT(plan->error, 0);
    if (last_error >= 0) {
      EXPECT_LT(plan->error, last_error) << bpw;
    }
    last_error = plan->error;
    // One exact-name override per planned matrix: q/k/v/o/gate/up of the
    // 4 layers, the embedding and lm_head, whose rows divide a 32-weight
    // block (down_proj's 344-weight rows do not: f16, outside the plan).
    EXPECT_EQ(plan->overrides.size(), 26u);
    EXPECT_EQ(plan->lines.size(), 26u);
  }
}

TEST_F(GgmlSizePlanTest, BeatsAUniformTypeAtItsSize) {
  for (TensorType uniform : {TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ8_0}) {
    auto alone = Plan(16, {uniform});  // every matrix in `uniform`
    ASSERT_THAT(alone, IsOk());
    auto mixed = Plan(alone->bits_per_weight);
    ASSERT_THAT(mixed, IsOk());
    EXPECT_LE(mixed->bits_per_weight, alone->bits_per_weight * (1 + 1e-9));
    EXPECT_LE(mixed->error, alone->error) << gguf::TypeName(uniform);
  }
}

TEST_F(GgmlSizePlanTest, BeatsTheQ4KMMixAtItsSize) {
  // The preset's own choices (llama-quantize's rules, with their fallbacks
  // on these 128-weight rows) measured the same way, then planned anew.
  auto first = Plan(16);
  ASSERT_THAT(first, IsOk());
  EXPECT_GT(first->preset_bits_per_weight, 7.0);
  EXPECT_LT(first->preset_bits_per_weight, 8.1);
  auto planned = Plan(first->preset_bits_per_weight);
  ASSERT_THAT(planned, IsOk());
  EXPECT_EQ(planned->preset_error, first->preset_error);
  EXPECT_LT(planned->error, planned->preset_error);
}

TEST_F(GgmlSizePlanTest, SamePlanForAnyThreadCount) {
  auto one = Plan(8.0, {}, 1);
  auto three = Plan(8.0, {}, 3);
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(three, IsOk());
  EXPECT_EQ(one->lines, three->lines);
  EXPECT_EQ(one->error, three->error);
}

TEST_F(GgmlSizePlanTest, RefusesWhatItCannotPlan) {
  EXPECT_THAT(Plan(5.0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("target 5 bits per weight is below the 7.06")));
  EXPECT_THAT(Plan(0).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("is not in (0, 16]")));
  // Rows of 128 weights take no 256-weight super-block.
  EXPECT_THAT(Plan(8.0, {TensorType::kQ4_K}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no float matrix whose rows divide a candidate type's block")));
  auto o = ParseTypeOverride("v_proj", "q8_0");
  ASSERT_THAT(o, IsOk());
  options_.type_overrides.push_back(*o);
  EXPECT_THAT(Plan(8.0).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("without --tensor-type or recipe rules")));
}

}  // namespace
}  // namespace slimpack::gguf_export
