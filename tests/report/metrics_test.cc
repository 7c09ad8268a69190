// Report metrics against closed forms and hand computations.
#include "report/metrics.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::report {
namespace {

std::vector<float> Random(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v)
    x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 256.0f;  // exact in f32
  return v;
}

TEST(TensorErrorStatsTest, ScaledCopyHasClosedFormSqnrAndRelL2) {
  // cand = (1 + c) ref: error = c ref, so SQNR = -20 log10 |c| and rel L2 = |c|,
  // whatever ref is. c = 2^-7 keeps (1 + c) x exact in f32 for these values.
  const std::vector<float> ref = Random(4096, 1);
  const double c = 1.0 / 128;
  std::vector<float> cand(ref.size());
  double max_abs = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    cand[i] = static_cast<float>(ref[i] * (1 + c));
    max_abs = std::max(max_abs, std::fabs(ref[i] * c));
  }
  TensorErrorStats s;
  s.Add(ref.data(), cand.data(), 2048);  // two calls: streaming gives the same sums
  s.Add(ref.data() + 2048, cand.data() + 2048, 2048);
  EXPECT_NEAR(s.Sqnr(), -20 * std::log10(c), 1e-9);  // 42.14 dB
  EXPECT_NEAR(s.RelativeL2(), c, 1e-12);
  EXPECT_NEAR(s.Cosine(), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.MaxAbs(), max_abs);
  EXPECT_EQ(s.count(), 4096);
}

TEST(TensorErrorStatsTest, SineWithCosineNoiseMatchesPowerRatio) {
  // ref = sin, noise = a cos over whole periods: sum sin^2 = sum cos^2 = n/2,
  // so SQNR = -20 log10 a = 20 dB for a = 0.1; sin and cos are orthogonal, so
  // cosine = 1 / sqrt(1 + a^2).
  const int n = 1000;
  const double a = 0.1;
  std::vector<float> ref(n), cand(n);
  for (int i = 0; i < n; ++i) {
    const double t = 2 * M_PI * 5 * i / n;
    ref[i] = static_cast<float>(std::sin(t));
    cand[i] = static_cast<float>(std::sin(t) + a * std::cos(t));
  }
  TensorErrorStats s;
  s.Add(ref.data(), cand.data(), n);
  EXPECT_NEAR(s.Sqnr(), 20.0, 1e-4);
  EXPECT_NEAR(s.Cosine(), 1 / std::sqrt(1 + a * a), 1e-6);
}

TEST(TensorErrorStatsTest, IdenticalIsInfiniteSqnrAndZeroError) {
  const std::vector<float> ref = Random(100, 2);
  TensorErrorStats s;
  s.Add(ref.data(), ref.data(), 100);
  EXPECT_TRUE(std::isinf(s.Sqnr()) && s.Sqnr() > 0);
  EXPECT_EQ(s.RelativeL2(), 0.0);
  EXPECT_EQ(s.MaxAbs(), 0.0);
  EXPECT_NEAR(s.Cosine(), 1.0, 1e-12);
}

TEST(TensorErrorStatsTest, OverflowRateCountsValuesOutsideCalibratedRange) {
  std::vector<float> ref(100);
  for (int i = 0; i < 100; ++i) ref[i] = static_cast<float>(i);
  TensorErrorStats s;
  s.SetClipRange(10, 89);  // 0..9 and 90..99 clip
  s.Add(ref.data(), ref.data(), 100);
  EXPECT_DOUBLE_EQ(s.OverflowRate(), 0.2);
  EXPECT_EQ(s.RefMin(), 0);
  EXPECT_EQ(s.RefMax(), 99);
}

TEST(TensorErrorStatsTest, NonFiniteValuesAreCountedNotSummed) {
  const float ref[3] = {1, 2, 3};
  const float cand[3] = {1, NAN, 3};
  TensorErrorStats s;
  s.Add(ref, cand, 3);
  EXPECT_EQ(s.nonfinite(), 1);
  EXPECT_EQ(s.count(), 2);
  EXPECT_TRUE(std::isinf(s.Sqnr()));
}

TEST(ReportPercentileTest, InterpolatesBetweenRanksLikeLlamaCpp) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(Percentile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.9), 4.6);  // p = 3.6
  EXPECT_DOUBLE_EQ(Percentile(v, 0.999), 4.996);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 1), 5);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
}

TEST(NextTokenStatsTest, KnownDistributions) {
  // Position 0: P = (1/2, 1/4, 1/4), Q = (1/4, 1/2, 1/4), next token 0.
  //   KLD = 1/2 ln 2 + 1/4 ln(1/2) = ln2 / 4; dp = 1/4 - 1/2; top-1 differs.
  // Position 1 is the window's last: not scored (it has no next token).
  const int64_t vocab = 3, window = 2;
  const float ref[6] = {std::log(0.5f), std::log(0.25f), std::log(0.25f), 9, 9, 9};
  const float cand[6] = {std::log(0.25f), std::log(0.5f), std::log(0.25f), 0, 0, 0};
  const int64_t ids[2] = {2, 0};
  NextTokenStats s;
  s.AddWindow(ref, cand, ids, window, vocab);
  const auto sum = s.Summarize();
  EXPECT_EQ(sum.tokens, 1);
  EXPECT_NEAR(sum.mean_kld, std::log(2.0) / 4, 1e-7);
  EXPECT_NEAR(sum.mean_dp, -0.25, 1e-7);
  EXPECT_NEAR(sum.rms_dp, 0.25, 1e-7);
  EXPECT_EQ(sum.top1_agreement, 0.0);
  EXPECT_NEAR(sum.ppl_ref, 2.0, 1e-6);   // exp(-ln 1/2)
  EXPECT_NEAR(sum.ppl_cand, 4.0, 1e-6);  // exp(-ln 1/4)
  EXPECT_NEAR(sum.ppl_delta, 2.0, 1e-5);
}

TEST(NextTokenStatsTest, IdenticalLogitsGiveZeroKldAndFullAgreement) {
  const std::vector<float> logits = Random(5 * 7, 3);
  const int64_t ids[5] = {1, 2, 3, 4, 5};
  NextTokenStats s;
  s.AddWindow(logits.data(), logits.data(), ids, 5, 7);
  const auto sum = s.Summarize();
  EXPECT_EQ(sum.tokens, 4);
  EXPECT_NEAR(sum.mean_kld, 0, 1e-15);
  EXPECT_EQ(sum.top1_agreement, 1.0);
  EXPECT_EQ(sum.ppl_delta, 0.0);
  ASSERT_EQ(sum.kld_percentiles.size(), 11u);
  EXPECT_EQ(sum.kld_percentiles[0].first, 100.0);
  ASSERT_EQ(sum.dp_percentiles.size(), 13u);
}

TEST(NextTokenStatsTest, KldMatchesDirectSumOnRandomLogits) {
  // Independent computation in long double with std::exp directly.
  const int64_t w = 4, v = 11;
  const std::vector<float> a = Random(w * v, 4), b = Random(w * v, 5);
  const int64_t ids[4] = {0, 3, 7, 10};
  long double total = 0;
  for (int64_t t = 0; t + 1 < w; ++t) {
    long double za = 0, zb = 0;
    for (int64_t k = 0; k < v; ++k) {
      za += std::exp(static_cast<long double>(a[t * v + k]));
      zb += std::exp(static_cast<long double>(b[t * v + k]));
    }
    for (int64_t k = 0; k < v; ++k) {
      const long double p = std::exp(static_cast<long double>(a[t * v + k])) / za;
      const long double q = std::exp(static_cast<long double>(b[t * v + k])) / zb;
      total += p * std::log(p / q);
    }
  }
  NextTokenStats s;
  s.AddWindow(a.data(), b.data(), ids, w, v);
  EXPECT_NEAR(s.Summarize().mean_kld, static_cast<double>(total / (w - 1)), 1e-12);
}

TEST(ClassifierStatsTest, AgreementAndAccuracyDelta) {
  // 3 samples, 2 classes: argmax ref = 0,1,1; cand = 0,0,1; labels 0,1,0.
  const float ref[6] = {2, 1, 0, 1, 0, 3};
  const float cand[6] = {2, 1, 1, 0, 0, 3};
  const int64_t labels[3] = {0, 1, 0};
  ClassifierStats s;
  s.AddBatch(ref, cand, labels, 3, 2);
  EXPECT_DOUBLE_EQ(s.Top1Agreement(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(s.RefAccuracy(), 2.0 / 3);   // samples 0, 1
  EXPECT_DOUBLE_EQ(s.CandAccuracy(), 1.0 / 3);  // sample 0
  EXPECT_DOUBLE_EQ(s.AccuracyDelta(), -1.0 / 3);
}

}  // namespace
}  // namespace slimpack::report
