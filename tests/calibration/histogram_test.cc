// Histogram: re-binning keeps every count and agrees with a histogram built
// directly at the final range; quantiles on a known grid.
#include "calibration/histogram.h"

#include <numeric>

#include "gtest/gtest.h"

namespace slimpack::calibration {
namespace {

uint64_t Sum(const std::vector<uint64_t>& v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
}

TEST(HistogramTest, RebinningKeepsCountsAndMatchesDirectBinning) {
  // Dyadic values: bin edges are exact in binary, so both paths must agree.
  std::vector<float> a, b;
  for (int i = -64; i <= 64; ++i) a.push_back(i / 64.0f);        // |x| <= 1
  for (int i = -96; i <= 96; ++i) b.push_back(i / 32.0f);        // |x| <= 3
  Histogram grown(64);
  grown.Add(a.data(), a.size());
  EXPECT_EQ(grown.half_range(), 2.0);  // power of two above max |x| = 1
  grown.Add(b.data(), b.size());
  EXPECT_EQ(grown.half_range(), 4.0);  // one doubling
  EXPECT_EQ(Sum(grown.counts()), a.size() + b.size());
  EXPECT_EQ(grown.total(), a.size() + b.size());

  Histogram direct(64);
  const float sentinel = 3.75f;
  direct.Add(&sentinel, 1);  // fixes R = 4 before any data
  direct.Add(a.data(), a.size());
  direct.Add(b.data(), b.size());
  std::vector<uint64_t> expected = direct.counts();
  --expected[62];  // the sentinel's bin: [-4 + 62/8, -4 + 63/8) = [3.75, 3.875)
  EXPECT_EQ(grown.counts(), expected);
}

TEST(HistogramTest, ZerosBeforeAnyRangeAreKept) {
  std::vector<float> zeros(10, 0.0f), ones = {1.0f, -1.0f};
  Histogram h(16);
  h.Add(zeros.data(), zeros.size());
  EXPECT_EQ(h.half_range(), 0.0);
  h.Add(ones.data(), ones.size());
  EXPECT_EQ(Sum(h.counts()), 12u);
  EXPECT_EQ(h.counts()[8], 10u);  // bin [0, w)
  EXPECT_EQ(Sum(h.FoldAbs()), 12u);
}

TEST(HistogramTest, QuantileOfUniformGrid) {
  std::vector<float> v;
  for (int i = 0; i < 10000; ++i) v.push_back(-1.0f + 2.0f * i / 9999.0f);
  Histogram h(2048);
  h.Add(v.data(), v.size());
  const double w = h.bin_width();
  EXPECT_NEAR(h.Quantile(0.5), 0.0, 2 * w);
  EXPECT_NEAR(h.Quantile(0.99), 0.98, 2 * w);
  EXPECT_NEAR(h.Quantile(0.01), -0.98, 2 * w);
  EXPECT_EQ(Sum(h.FoldAbs()), 10000u);
}

TEST(HistogramTest, StridedAdd) {
  const std::vector<float> v = {1, 100, -1, 100, 0.5f, 100};
  Histogram h(8);
  h.Add(v.data(), 3, 2);  // never reads the 100s
  EXPECT_EQ(h.total(), 3u);
  EXPECT_EQ(h.half_range(), 2.0);
}

}  // namespace
}  // namespace slimpack::calibration
