// Entropy (KL) and MSE thresholds on distributions with known answers, the
// entropy search against a brute-force NumPy search
// (tests/testdata/calibration/make_entropy_reference.py), and the MSE search
// against a brute-force search on the raw values.
#include "calibration/range_methods.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "calibration/histogram.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/calibration/test_data.h"

namespace slimpack::calibration {
namespace {

std::vector<float> GaussianWithOutliers() {
  std::vector<float> v = test_data::Gaussian(200000, 42);
  for (int i = 0; i < 10; ++i) {
    v.push_back(50.0f);
    v.push_back(-50.0f);
  }
  return v;
}

TEST(EntropyThresholdTest, GaussianWithOutliersClipsWellBelowMax) {
  const std::vector<float> v = GaussianWithOutliers();
  Histogram h(4096);
  h.Add(v.data(), v.size());
  const double t = EntropyThreshold(h.FoldAbs(), h.bin_width(), 128);
  // Max is 50; a KL threshold for N(0,1) at 8 bits lies around 3-5 sigma.
  EXPECT_GT(t, 2.5);
  EXPECT_LT(t, 8.0);
}

// Twelve histograms (gaussian, with outliers, laplace, bimodal, relu-like,
// sparse spikes; 400 bins / 128 levels and 600 / 255), each small enough
// that every candidate is tried: the threshold bin must be the one NumPy's
// brute force picks. The file also records the runner-up's KL; the closest
// margin is 0.27 %, far above any rounding difference between the two.
TEST(EntropyThresholdTest, MatchesBruteForceNumpyReference) {
  const std::string path =
      std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/calibration/entropy_reference.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const nlohmann::json ref = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& c : ref.at("cases")) {
    const std::vector<uint64_t> counts = c.at("counts").get<std::vector<uint64_t>>();
    const double width = c.at("bin_width").get<double>();
    const int levels = c.at("levels").get<int>();
    ASSERT_LE(counts.size() - levels, kMaxEntropyCandidates) << "reference tries every bin";
    const double t = EntropyThreshold(counts, width, levels);
    EXPECT_EQ(std::llround(t / width), c.at("threshold_bin").get<int64_t>())
        << c.at("name").get<std::string>();
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

TEST(EntropyThresholdTest, UniformKeepsNearlyTheFullRange) {
  std::vector<float> v;
  for (int i = 0; i < 100000; ++i) v.push_back(i / 100000.0f);
  Histogram h(4096);
  h.Add(v.data(), v.size());
  const double t = EntropyThreshold(h.FoldAbs(), h.bin_width(), 128);
  EXPECT_GT(t, 0.95);
  EXPECT_LE(t, 1.0 + h.bin_width());
}

TEST(EntropyThresholdTest, FewOccupiedBinsReturnsTheirExtent) {
  std::vector<uint64_t> counts(2048, 0);
  counts[3] = 10;
  counts[9] = 5;
  EXPECT_DOUBLE_EQ(EntropyThreshold(counts, 0.5, 128), 10 * 0.5);
}

// Exact mean squared error of symmetric fake quantization with clip t.
double ExactMse(const std::vector<float>& v, double t, int levels) {
  const double step = t / levels;
  double err = 0;
  for (float x : v) {
    const double c = std::clamp<double>(x, -t, t);
    const double q = std::round(c / step) * step;
    err += (x - q) * (x - q);
  }
  return err / v.size();
}

// At 8 bits 20 outliers at ±50 in 200k values are worth keeping (clipping
// them costs more than the coarser step); at 4 bits (7 levels) they are not.
class MseThresholdTest : public ::testing::TestWithParam<int> {};

TEST_P(MseThresholdTest, MatchesBruteForceSearch) {
  const int levels = GetParam();
  const std::vector<float> v = GaussianWithOutliers();
  Histogram h(4096);
  h.Add(v.data(), v.size());
  const std::vector<uint64_t> abs = h.FoldAbs();
  const double t = MseThreshold(abs, h.bin_width(), levels);
  // Brute force over the same candidate grid (every 4th edge) on raw data.
  double best = std::numeric_limits<double>::infinity(), best_t = 0;
  for (size_t j = 4; j <= abs.size(); j += 4) {
    const double cand = j * h.bin_width();
    const double e = ExactMse(v, cand, levels);
    if (e < best) best = e, best_t = cand;
  }
  EXPECT_LE(ExactMse(v, t, levels), best * 1.02) << "hist t=" << t << " brute t=" << best_t;
  EXPECT_NEAR(t, best_t, 0.1 * best_t);
  if (levels == 7) {
    EXPECT_LT(t, 10.0);
  } else {
    EXPECT_GT(t, 40.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, MseThresholdTest, ::testing::Values(7, 127));

TEST(MseThresholdUniformTest, NoOutliersKeepsTheRangeAtFourBits) {
  // With few levels clipping a uniform distribution saves step error; with
  // 127 levels it does not: the threshold stays near the max.
  std::vector<float> v;
  for (int i = 0; i < 50000; ++i) v.push_back(i / 50000.0f);
  Histogram h(4096);
  h.Add(v.data(), v.size());
  EXPECT_GT(MseThreshold(h.FoldAbs(), h.bin_width(), 127), 0.98);
  EXPECT_LT(MseThreshold(h.FoldAbs(), h.bin_width(), 1), 0.9);
}

}  // namespace
}  // namespace slimpack::calibration
