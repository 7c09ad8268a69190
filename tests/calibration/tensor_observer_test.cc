// TensorObserver: hand-computed min/max, moving averages, percentile ranges
// and per-channel ranges; NaN/Inf excluded and counted.
#include "calibration/tensor_observer.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::calibration {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

runtime::RtTensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return runtime::RtTensor::FromVector<float>(std::move(dims), v);
}

TEST(TensorObserverTest, MinMaxOverRunsIgnoresNonFinite) {
  TensorObserver obs(ObserverOptions{});
  ASSERT_THAT(obs.Observe("x", F32({3}, {1, -2, 3})), IsOk());
  ASSERT_THAT(obs.Observe("x", F32({4}, {0.5f, 7, NAN, -INFINITY})), IsOk());
  const ObservedRange r = obs.Finish();
  EXPECT_EQ(r.min, -2);
  EXPECT_EQ(r.max, 7);
  EXPECT_EQ(r.lo, -2);
  EXPECT_EQ(r.hi, 7);
  EXPECT_EQ(r.elements, 5u);
  EXPECT_EQ(r.nonfinite, 2u);
  EXPECT_EQ(r.runs, 2);
  EXPECT_EQ(r.last_dims, (std::vector<int64_t>{4}));
}

TEST(TensorObserverTest, NonFloatTensorsAreSkipped) {
  TensorObserver obs(ObserverOptions{});
  ASSERT_THAT(obs.Observe("shape", runtime::RtTensor::FromVector<int64_t>({2}, {1, 5})), IsOk());
  EXPECT_EQ(obs.Finish().runs, 0);
}

TEST(TensorObserverTest, MovingAverageMinMax) {
  ObserverOptions o;
  o.method = RangeMethod::kMovingMinMax;
  o.averaging_constant = 0.25;
  TensorObserver obs(o);
  ASSERT_THAT(obs.Observe("x", F32({2}, {0, 10})), IsOk());
  ASSERT_THAT(obs.Observe("x", F32({2}, {-4, 30})), IsOk());
  const ObservedRange r = obs.Finish();
  EXPECT_DOUBLE_EQ(r.lo, 0 + 0.25 * (-4 - 0));    // -1
  EXPECT_DOUBLE_EQ(r.hi, 10 + 0.25 * (30 - 10));  // 15
  EXPECT_EQ(r.min, -4);
  EXPECT_EQ(r.max, 30);
}

TEST(TensorObserverTest, PercentileRangeOfUniformGrid) {
  ObserverOptions o;
  o.method = RangeMethod::kPercentile;
  o.percentile = 99.0;
  o.num_bins = 2048;
  TensorObserver obs(o);
  std::vector<float> v;
  for (int i = 0; i <= 20000; ++i) v.push_back(-1.0f + i / 10000.0f);
  ASSERT_THAT(obs.Observe("x", F32({static_cast<int64_t>(v.size())}, v)), IsOk());
  const ObservedRange r = obs.Finish();
  const double w = 4.0 / 2048;  // R = 2: the power of two above 1
  EXPECT_NEAR(r.hi, 0.98, 2 * w);
  EXPECT_NEAR(r.lo, -0.98, 2 * w);
  EXPECT_NEAR(r.histogram.p50_abs, 0.5, 2 * w);
}

TEST(TensorObserverTest, PerChannelNchw) {
  ObserverOptions o;
  o.per_channel = true;
  TensorObserver obs(o);
  // [N=2, C=2, H=1, W=2]: channel 0 = {1,2, 5,6}, channel 1 = {-3,4, 0,-8}.
  ASSERT_THAT(obs.Observe("x", F32({2, 2, 1, 2}, {1, 2, -3, 4, 5, 6, 0, -8})), IsOk());
  const ObservedRange r = obs.Finish();
  EXPECT_EQ(r.channel_axis, 1);
  ASSERT_EQ(r.channel_ranges.size(), 2u);
  EXPECT_EQ(r.channel_ranges[0], std::make_pair(1.0, 6.0));
  EXPECT_EQ(r.channel_ranges[1], std::make_pair(-8.0, 4.0));
  EXPECT_EQ(r.lo, -8);
  EXPECT_EQ(r.hi, 6);
}

TEST(TensorObserverTest, PerChannelAutoAxisIsLastForRank3) {
  ObserverOptions o;
  o.per_channel = true;
  TensorObserver obs(o);
  ASSERT_THAT(obs.Observe("x", F32({1, 2, 3}, {1, 2, 3, -1, -2, -3})), IsOk());
  const ObservedRange r = obs.Finish();
  EXPECT_EQ(r.channel_axis, 2);
  ASSERT_EQ(r.channel_ranges.size(), 3u);
  EXPECT_EQ(r.channel_ranges[2], std::make_pair(-3.0, 3.0));
}

TEST(TensorObserverTest, PerChannelCountChangeIsAnError) {
  ObserverOptions o;
  o.per_channel = true;
  TensorObserver obs(o);
  ASSERT_THAT(obs.Observe("act", F32({1, 2}, {1, 2})), IsOk());
  EXPECT_THAT(obs.Observe("act", F32({1, 3}, {1, 2, 3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'act': per-channel axis 1 has 3 channels, earlier runs had 2")));
}

TEST(TensorObserverTest, EntropyRangeKeepsSignOfReluOutputs) {
  ObserverOptions o;
  o.method = RangeMethod::kEntropy;
  TensorObserver obs(o);
  std::vector<float> v;
  for (int i = 0; i < 5000; ++i) v.push_back(i / 5000.0f);
  ASSERT_THAT(obs.Observe("relu", F32({5000}, v)), IsOk());
  const ObservedRange r = obs.Finish();
  EXPECT_EQ(r.lo, 0);  // clipped to the observed min, not -T
  EXPECT_GT(r.hi, 0.9);
}

TEST(RangeMethodTest, NamesRoundTripAndUnknownIsListed) {
  for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kMovingMinMax,
                        RangeMethod::kPercentile, RangeMethod::kEntropy, RangeMethod::kMse}) {
    auto parsed = RangeMethodFromName(RangeMethodName(m));
    ASSERT_THAT(parsed.status(), IsOk());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_THAT(RangeMethodFromName("kl").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("supported: minmax, moving_minmax, percentile, entropy, mse")));
}

}  // namespace
}  // namespace slimpack::calibration
