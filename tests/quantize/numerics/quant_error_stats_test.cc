// Error statistics on hand-computed arrays.
#include "quantize/numerics/error_stats.h"

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace slimpack::quant
