// The size-target planner: target parsing, budget respected, rules' fixed
// schemes kept, Conv limited to 8-bit, and the plan against an exhaustive
// search on a small model.
#include "quantize/size_planner.h"

#include <cmath>
#include <cstring>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

ir::Tensor Gaussian(const std::string& name, std::vector<int64_t> dims, float sigma,
                    uint32_t seed, float outlier = 0) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = dims;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  // A few large values make coarse groups costly on this tensor.
  for (int64_t i = 0; outlier > 0 && i < n; i += 97) v[i] *= outlier;
  std::vector<uint8_t> bytes(n * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::Model ThreeLinears() {
  ir::Model m;
  EXPECT_TRUE(m.graph.AddInitializer(Gaussian("a", {64, 128}, 0.02f, 1)).ok());
  EXPECT_TRUE(m.graph.AddInitializer(Gaussian("b", {64, 128}, 0.02f, 2, 30)).ok());
  EXPECT_TRUE(m.graph.AddInitializer(Gaussian("c", {32, 128}, 0.05f, 3)).ok());
  return m;
}

std::vector<WeightUse> Uses(const ir::Model& m) {
  std::vector<WeightUse> u;
  for (const ir::Tensor& t : m.graph.initializers()) u.push_back({t.name, "Linear", "", false});
  return u;
}

TEST(ParseTargetSizeTest, DecimalAndBinaryUnits) {
  EXPECT_EQ(*ParseTargetSize("3.8GB"), 3800000000u);
  EXPECT_EQ(*ParseTargetSize("900MB"), 900000000u);
  EXPECT_EQ(*ParseTargetSize("1.5GiB"), 1610612736u);
  EXPECT_EQ(*ParseTargetSize("2G"), 2147483648u);
  EXPECT_EQ(*ParseTargetSize("12345"), 12345u);
  for (const char* bad : {"", "GB", "3.8XB", "-1GB", "0", "1e3", "3..8GB"}) {
    EXPECT_THAT(ParseTargetSize(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size '")))
        << bad;
  }
}

TEST(PlanForSizeTest, RespectsTheBudgetAndSpendsItWhereItHelps) {
  const ir::Model m = ThreeLinears();
  SizeTarget t;
  t.bpw = 5.0;
  auto plan = PlanForSize(m, Uses(m), {}, t, 1);
  ASSERT_THAT(plan, IsOk());
  EXPECT_LE(plan->planned_bytes, plan->budget);
  EXPECT_LE(plan->bpw, 5.0);
  // The outlier-heavy tensor gets at least as fine a scheme as its twin.
  auto bytes_of = [&](const std::string& n) {
    for (const SizeChoice& c : plan->choices) {
      if (c.tensor == n) return c.bytes;
    }
    ADD_FAILURE() << "no choice for " << n;
    return uint64_t{0};
  };
  EXPECT_GE(bytes_of("b"), bytes_of("a"));
  EXPECT_GT(bytes_of("a"), 0u);
  // More budget never costs accuracy.
  t.bpw = 6.0;
  auto bigger = PlanForSize(m, Uses(m), {}, t, 1);
  ASSERT_THAT(bigger, IsOk());
  EXPECT_LE(bigger->error, plan->error);
}

// Exhaustive search over the 4^3 assignments: the plan must fit and be
// within 5 % of the best assignment that fits.
TEST(PlanForSizeTest, CloseToTheExhaustiveOptimum) {
  const ir::Model m = ThreeLinears();
  const std::vector<WeightScheme> cands = DefaultCandidates();
  // Per tensor and candidate: the planner's own measurement, obtained by
  // planning that tensor alone with a single candidate.
  std::vector<std::vector<SizeChoice>> table(3);
  const std::vector<WeightUse> uses = Uses(m);
  for (size_t i = 0; i < uses.size(); ++i) {
    for (const WeightScheme& s : cands) {
      SizeTarget one;
      one.bytes = uint64_t{1} << 40;
      one.candidates = {s};
      auto p = PlanForSize(m, {uses[i]}, {}, one, 1);
      ASSERT_THAT(p, IsOk());
      table[i].push_back(p->choices[0]);
    }
  }
  for (double bpw : {4.4, 4.8, 5.5, 7.0}) {
    SizeTarget t;
    t.bpw = bpw;
    auto plan = PlanForSize(m, uses, {}, t, 1);
    ASSERT_THAT(plan, IsOk());
    double best = INFINITY;
    for (size_t x = 0; x < 4; ++x) {
      for (size_t y = 0; y < 4; ++y) {
        for (size_t z = 0; z < 4; ++z) {
          const uint64_t b = table[0][x].bytes + table[1][y].bytes + table[2][z].bytes;
          if (b > plan->budget) continue;
          best = std::min(best, table[0][x].error + table[1][y].error + table[2][z].error);
        }
      }
    }
    EXPECT_LE(plan->planned_bytes, plan->budget) << bpw;
    EXPECT_LE(plan->error, best * 1.05) << "bpw " << bpw;
  }
}

TEST(PlanForSizeTest, FixedSchemesAndConvLimits) {
  ir::Model m = ThreeLinears();
  ASSERT_TRUE(m.graph.AddInitializer(Gaussian("conv", {16, 8, 3, 3}, 0.1f, 4)).ok());
  std::vector<WeightUse> uses = Uses(m);
  uses.back().op = "Conv";
  SizeTarget t;
  t.bpw = 6.5;  // "a" fixed at int8 takes a large share
  t.fixed["a"] = *ParseWeightScheme("int8");
  auto plan = PlanForSize(m, uses, {}, t, 1);
  ASSERT_THAT(plan, IsOk());
  int seen = 0;
  for (const SizeChoice& c : plan->choices) {
    if (c.tensor == "a" || c.tensor == "conv") {
      EXPECT_EQ(c.scheme.Name(), "int8") << c.tensor;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);  // both tensors were planned
  // A grouped int8 candidate is no Conv layout either.
  SizeTarget grouped;
  grouped.bpw = 8.25;
  grouped.candidates = {*ParseWeightScheme("int8-g32"), *ParseWeightScheme("int8"),
                        *ParseWeightScheme("int4-g32")};
  auto plan2 = PlanForSize(m, uses, {}, grouped, 1);
  ASSERT_THAT(plan2, IsOk());
  for (const SizeChoice& c : plan2->choices) {
    if (c.tensor == "conv") {
      EXPECT_EQ(c.scheme.Name(), "int8");
    }
  }
}

TEST(PlanForSizeTest, ImpossibleTargetsSayWhy) {
  const ir::Model m = ThreeLinears();
  SizeTarget t;
  t.bpw = 2.0;
  EXPECT_THAT(PlanForSize(m, Uses(m), {}, t, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("below the smallest plan"), HasSubstr("bytes"))));
  SizeTarget none;
  EXPECT_THAT(PlanForSize(m, Uses(m), {}, none, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("target")));
}

// A measured sensitivity reorders where bytes go: a tensor whose errors
// reach the output 100x amplified is upgraded first.
TEST(PlanForSizeTest, MeasuredSensitivityDecides) {
  const ir::Model m = ThreeLinears();
  SizeTarget t;
  t.bpw = 4.6;
  t.candidates = {*ParseWeightScheme("int4-g128"), *ParseWeightScheme("int4-g32")};
  t.output_error = [](const WeightUse& use, const std::vector<float>&) -> absl::StatusOr<double> {
    return use.tensor == "c" ? 100.0 : 1.0;
  };
  auto plan = PlanForSize(m, Uses(m), {}, t, 1);
  ASSERT_THAT(plan, IsOk());
  int seen = 0;
  for (const SizeChoice& c : plan->choices) {
    if (c.tensor == "c") {
      EXPECT_EQ(c.scheme.Name(), "int4-g32");
      ++seen;
    }
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace slimpack::quantize
