// f16/bf16 conversion: exact round trips, ties to even, overflow, NaN,
// subnormals, checked against an independent double-precision rounding.
#include "ir/float_convert.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace slimpack::ir {
namespace {

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = ir::F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(ir::F16ToF32(ir::F32ToF16(f)))) << h;
      continue;
    }
    EXPECT_EQ(ir::F32ToF16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(ir::F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(ir::F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(ir::F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(ir::F16ToF32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(ir::F16ToF32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(ir::F16ToF32(0x7c00)));
  EXPECT_EQ(ir::F32ToF16(1e6f), 0x7c00);
  EXPECT_EQ(ir::F32ToF16(-1e6f), 0xfc00);
  EXPECT_EQ(ir::F32ToF16(65519.0f), 0x7bff);  // below the halfway point to inf
  EXPECT_EQ(ir::F32ToF16(65520.0f), 0x7c00);  // halfway rounds to even: inf
  EXPECT_EQ(ir::F32ToF16(std::ldexp(1.0f, -26)), 0x0000);  // tie to even (0)
  EXPECT_EQ(ir::F32ToF16(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp -> 1
  EXPECT_EQ(ir::F32ToF16(-0.0f), 0x8000);
}

// Round `f` to the nearest half by brute force in double, ties to even.
uint16_t ReferenceToHalf(float f) {
  uint16_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double v = ir::F16ToF32(static_cast<uint16_t>(h));
    const double err = std::fabs(v - std::fabs(static_cast<double>(f)));
    if (err < best_err || (err == best_err && (h & 1) == 0)) {
      best_err = err;
      best = static_cast<uint16_t>(h);
    }
  }
  return static_cast<uint16_t>(best | (std::signbit(f) ? 0x8000 : 0));
}

TEST(HalfTest, RoundsToNearestEvenLikeBruteForce) {
  // Values between halves, including exact midpoints, across the range.
  const float samples[] = {1.00048828125f,  // midpoint 1 + 2^-11: to even (1.0)
                           1.00146484375f,  // midpoint 1 + 3*2^-11: to 1+2^-9
                           3.14159265f, -2.71828f, 1e-5f, 6.1e-5f, 3e-7f, 1000.3f,
                           -0.333333f, 40000.7f};
  for (float f : samples) {
    EXPECT_EQ(ir::F32ToF16(f), ReferenceToHalf(f)) << f;
  }
}

TEST(HalfTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(ir::Bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(ir::F32ToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(ir::F32ToBf16(1.00390625f), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: goes up.
  EXPECT_EQ(ir::F32ToBf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(ir::Bf16ToF32(ir::F32ToBf16(std::nanf("")))));
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    const float f = ir::Bf16ToF32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(ir::F32ToBf16(f), b);
    }
  }
}

}  // namespace
}  // namespace slimpack::ir
