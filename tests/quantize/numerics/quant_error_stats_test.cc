// Error statistics on hand-computed arrays.
#include "quantize/numerics/error_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::quant {
namespace {

TEST(QuantErrorStatsTest, HandComputed) {
  const float ref[] = {3.0f, 4.0f};
  const float approx[] = {3.0f, 0.0f};
  const ErrorStats s = CompareArrays(ref, approx, 2);
  EXPECT_EQ(s.ref_sq, 25.0);
  EXPECT_EQ(s.err_sq, 16.0);
  EXPECT_EQ(s.max_abs, 4.0);
  EXPECT_DOUBLE_EQ(RelativeL2(ref, approx, 2), 0.8);
  EXPECT_DOUBLE_EQ(SqnrDb(ref, approx, 2), 10.0 * std::log10(25.0 / 16.0));
  EXPECT_EQ(MaxAbsDiff(ref, approx, 2), 4.0);
}

TEST(QuantErrorStatsTest, ExactAndZeroReference) {
  const float a[] = {1.0f, -2.0f};
  EXPECT_EQ(RelativeL2(a, a, 2), 0.0);
  EXPECT_EQ(SqnrDb(a, a, 2), std::numeric_limits<double>::infinity());
  const float zero[] = {0.0f, 0.0f};
  EXPECT_EQ(RelativeL2(zero, a, 2), std::numeric_limits<double>::infinity());
  EXPECT_EQ(RelativeL2(zero, zero, 2), 0.0);
}

// The sums' order is fixed by each element's index in the whole array
// (partial i mod 8, partials added in order): any split into pieces gives
// the same bits, and they are the sums written out in that order.
TEST(QuantErrorStatsTest, PiecesGiveTheWholeArraysBits) {
  std::vector<float> ref(1001), approx(1001);
  for (size_t i = 0; i < ref.size(); ++i) {
    ref[i] = std::sin(0.37f * static_cast<float>(i)) * (i % 17 == 0 ? 1e3f : 1.f);
    approx[i] = ref[i] + 1e-3f * std::cos(1.3f * static_cast<float>(i));
  }
  const ErrorStats whole = CompareArrays(ref.data(), approx.data(), 1001);
  double lanes_r[8] = {}, lanes_e[8] = {}, max_abs = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(ref[i]) - approx[i];
    lanes_r[i % 8] += static_cast<double>(ref[i]) * ref[i];
    lanes_e[i % 8] += d * d;
    max_abs = std::max(max_abs, std::fabs(d));
  }
  double want_r = 0, want_e = 0;
  for (int k = 0; k < 8; ++k) {
    want_r += lanes_r[k];
    want_e += lanes_e[k];
  }
  EXPECT_EQ(whole.ref_sq, want_r);
  EXPECT_EQ(whole.err_sq, want_e);
  EXPECT_EQ(whole.max_abs, max_abs);
  for (int64_t piece : {1, 3, 7, 8, 13, 500}) {
    ErrorStats s;
    for (int64_t at = 0; at < 1001; at += piece) {
      AccumulateErrors(s, ref.data() + at, approx.data() + at, std::min<int64_t>(piece, 1001 - at));
    }
    EXPECT_EQ(s.ref_sq, whole.ref_sq) << "pieces of " << piece;
    EXPECT_EQ(s.err_sq, whole.err_sq) << "pieces of " << piece;
    EXPECT_EQ(s.max_abs, whole.max_abs) << "pieces of " << piece;
  }
}

// A NaN difference adds NaN to the sums but leaves max_abs as the finite
// differences make it (as the scalar `if (|d| > max)` did); an infinite
// one is the maximum.
TEST(QuantErrorStatsTest, NaNAndInfiniteDifferences) {
  std::vector<float> ref(20, 1.f), approx(20, 0.5f);
  approx[3] = std::nanf("");
  ErrorStats s = CompareArrays(ref.data(), approx.data(), 20);
  EXPECT_EQ(s.max_abs, 0.5);
  EXPECT_TRUE(std::isnan(s.err_sq));
  EXPECT_EQ(s.ref_sq, 20.0);
  approx[3] = 0.5f;
  approx[17] = -std::numeric_limits<float>::infinity();
  s = CompareArrays(ref.data(), approx.data(), 20);
  EXPECT_EQ(s.max_abs, std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace slimpack::quant
