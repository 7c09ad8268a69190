// f32 <-> f16 <-> bf16: round-to-nearest-even on ties, overflow to Inf,
// subnormals, NaN/Inf, and the F16C path bit-identical to the scalar one.
#include "ir/float_convert.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "formats/shard/writer/tensor_encoder.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::ir {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(FloatConvertTest, F16ExactValuesAndSpecials) {
  EXPECT_EQ(F32ToF16(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xC000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);  // largest finite f16
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(F32ToF16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
}

TEST(FloatConvertTest, F16RoundsToNearestEvenOnTies) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 0x3C01 and 0x3C02: even is 0x3C02.
  EXPECT_EQ(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the tie rounds up.
  EXPECT_EQ(F32ToF16(FromBits(Bits(1.0f + std::ldexp(1.0f, -11)) + 1)), 0x3C01);
  // Overflow: 65520 is the tie between 65504 and 65536 (Inf): even is Inf.
  EXPECT_EQ(F32ToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);
  EXPECT_EQ(F32ToF16(1e10f), 0x7C00);
  // Subnormal ties: 2^-25 is halfway between 0 and 2^-24: even is 0.
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp -> 2
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(F32ToF16(-std::ldexp(1.0f, -30)), 0x8000);  // keeps the sign
  // Largest subnormal + half ulp rounds up into the normal range.
  EXPECT_EQ(F32ToF16(std::ldexp(1023.5f, -24)), 0x0400);
}

TEST(FloatConvertTest, NaNStaysNaNWithSignAndQuietBit) {
  EXPECT_EQ(F32ToF16(FromBits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(F32ToF16(FromBits(0xFFC00000)), 0xFE00);
  // A signalling NaN whose payload is below f16's precision stays NaN.
  EXPECT_EQ(F32ToF16(FromBits(0x7F800001)), 0x7E00);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(FromBits(0x7FA00000)))));
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(F32ToBf16(FromBits(0xFFC00000)), 0xFFC0);
  EXPECT_TRUE(std::isnan(Bf16ToF32(0x7FC1)));
}

TEST(FloatConvertTest, F16ToF32IsExactForEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7C00, 0x7C00u);
      EXPECT_NE(h & 0x03FF, 0u);
      continue;
    }
    // Converting back is the identity on every non-NaN f16.
    EXPECT_EQ(F32ToF16(f), h) << std::hex << h;
  }
}

// ConvertFloats' f16 -> f32 converts eight values at a time by F16C where
// the CPU has it and sends eights holding an Inf or NaN through F16ToF32:
// every f16, in shuffled eights (so each kind of value shares an eight with
// the others) and from an odd offset (the tail), must give F16ToF32's bits.
TEST(FloatConvertTest, WideF16ToF32MatchesTheScalarForEveryValue) {
  std::vector<uint16_t> h(0x10000 + 5);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>((i * 40503u) & 0xFFFFu);
  std::vector<float> wide(h.size() - 1);
  ASSERT_TRUE(ConvertFloats(ir::DType::kF16, reinterpret_cast<const uint8_t*>(h.data() + 1),
                            ir::DType::kF32, reinterpret_cast<uint8_t*>(wide.data()),
                            wide.size())
                  .ok());
  for (size_t i = 0; i < wide.size(); ++i) {
    const float scalar = F16ToF32(h[i + 1]);
    uint32_t a, b;
    std::memcpy(&a, &wide[i], 4);
    std::memcpy(&b, &scalar, 4);
    ASSERT_EQ(a, b) << "f16 0x" << std::hex << h[i + 1];
  }
}

TEST(FloatConvertTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  // 1 + 2^-8 is the tie between 1 and 1 + 2^-7: even is 1.
  EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(F32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()), 0x7F80);  // Inf
  EXPECT_EQ(F32ToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(F32ToBf16(FromBits(0x00010000)), 0x0001);  // f32 subnormal kept
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = Bf16ToF32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(F32ToBf16(f), b);
    }
  }
}

// Half an ulp of the target format at `x` (normal or subnormal range).
double HalfUlp(double x, int mantissa_bits, int min_exp) {
  int e;
  std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return std::ldexp(0.5, std::max(e - 1, min_exp) - mantissa_bits);
}

TEST(FloatConvertTest, ErrorIsAtMostHalfAnUlp) {
  // Sweeps f32 bit patterns with a stride, covering every exponent.
  for (uint64_t u = 0; u < 0x7F800000ull; u += 4099) {
    const float x = FromBits(static_cast<uint32_t>(u));
    const double h = F16ToF32(F32ToF16(x));
    if (std::fabs(x) < 65520.0f) {
      EXPECT_LE(std::fabs(h - x), HalfUlp(x, 10, -14)) << x;
    } else {
      EXPECT_TRUE(std::isinf(h)) << x;
    }
    const double b = Bf16ToF32(F32ToBf16(x));
    if (!std::isinf(b)) {
      EXPECT_LE(std::fabs(b - x), HalfUlp(x, 7, -126)) << x;
    }
  }
}

TEST(FloatConvertTest, FastPathMatchesScalarBitForBit) {
  std::vector<uint32_t> bits;
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
    bits.push_back(static_cast<uint32_t>(u));
  }
  for (uint32_t special : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
                           0xFFFFFFFFu, 0x477FF000u, 0x33000000u, 0x80000000u}) {
    bits.push_back(special);
  }
  // Odd count so the vector loop's tail runs too.
  if (bits.size() % 8 == 0) bits.push_back(0x3F800001u);
  const size_t n = bits.size();
  std::vector<uint8_t> scalar(2 * n), fast(2 * n);
  internal::F32ToF16Scalar(reinterpret_cast<const uint8_t*>(bits.data()),
                           scalar.data(), n);
  internal::F32ToF16Fast(reinterpret_cast<const uint8_t*>(bits.data()),
                         fast.data(), n);
  EXPECT_EQ(scalar, fast);
}

TEST(FloatConvertTest, ConvertFloatsAllDirections) {
  const std::vector<float> src = {1.0f, -0.5f, 3.14159f, 65504.0f, 1e-7f};
  std::vector<uint8_t> f16(src.size() * 2), bf16(src.size() * 2),
      back(src.size() * 4), f16_from_bf16(src.size() * 2);
  const auto* in = reinterpret_cast<const uint8_t*>(src.data());
  using ir::DType;
  ASSERT_THAT(ConvertFloats(DType::kF32, in, DType::kF16, f16.data(), src.size()), IsOk());
  ASSERT_THAT(ConvertFloats(DType::kF32, in, DType::kBF16, bf16.data(), src.size()), IsOk());
  ASSERT_THAT(ConvertFloats(DType::kBF16, bf16.data(), DType::kF16,
                            f16_from_bf16.data(), src.size()), IsOk());
  ASSERT_THAT(ConvertFloats(DType::kF16, f16.data(), DType::kF32, back.data(), src.size()), IsOk());
  for (size_t i = 0; i < src.size(); ++i) {
    uint16_t h, b, hb;
    float f;
    std::memcpy(&h, &f16[2 * i], 2);
    std::memcpy(&b, &bf16[2 * i], 2);
    std::memcpy(&hb, &f16_from_bf16[2 * i], 2);
    std::memcpy(&f, &back[4 * i], 4);
    EXPECT_EQ(h, F32ToF16(src[i]));
    EXPECT_EQ(b, F32ToBf16(src[i]));
    EXPECT_EQ(hb, F32ToF16(Bf16ToF32(b)));  // one rounding from bf16's value
    EXPECT_EQ(f, F16ToF32(h));
  }
}

// E4M3FN from its definition, independently of the bit assembly in
// F8E4M3ToF32: (-1)^s * 2^(e-7) * (1 + m/8), or 2^-6 * m/8 when e == 0.
TEST(FloatConvertTest, F8E4M3DecodesEveryCodeAsTheOcpFormatDefines) {
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const int sign = c >> 7, e = (c >> 3) & 0xF, m = c & 7;
    const float got = F8E4M3ToF32(static_cast<uint8_t>(c));
    if (e == 15 && m == 7) {
      EXPECT_TRUE(std::isnan(got)) << c;
      EXPECT_EQ(std::signbit(got), sign == 1) << c;
      ++nans;
      continue;
    }
    const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
    const double want = sign ? -mag : mag;
    EXPECT_EQ(Bits(got), Bits(static_cast<float>(want))) << "code " << c;
  }
  EXPECT_EQ(nans, 2);  // 0x7F and 0xFF only: E4M3FN has no infinities
  EXPECT_EQ(F8E4M3ToF32(0x7E), 448.0f);                     // largest finite
  EXPECT_EQ(F8E4M3ToF32(0x01), std::ldexp(1.0f, -9));        // smallest subnormal
  EXPECT_EQ(F8E4M3ToF32(0x08), std::ldexp(1.0f, -6));        // smallest normal
  EXPECT_EQ(Bits(F8E4M3ToF32(0x80)), 0x80000000u);           // -0 keeps its sign
  EXPECT_EQ(F8E4M3ToF32(0x38), 1.0f);
}

TEST(FloatConvertTest, RejectsNonFloatTypes) {
  uint8_t buf[8] = {};
  EXPECT_THAT(ConvertFloats(ir::DType::kI32, buf, ir::DType::kF16, buf, 1),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("from i32 to f16")));
  EXPECT_THAT(ConvertFloats(ir::DType::kF32, buf, ir::DType::kF64, buf, 1),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("f64")));
}

TEST(FloatConvertTest, EncoderCastsOnlyFloatWeights) {
  auto enc = shard_writer::FloatCastEncoder(ir::DType::kBF16);
  Tensor f32, f16, i64, f64;
  f32.dtype = ir::DType::kF32;
  f16.dtype = ir::DType::kF16;
  i64.dtype = ir::DType::kI64;
  f64.dtype = ir::DType::kF64;
  EXPECT_EQ(enc.output_dtype(f32), ir::DType::kBF16);
  EXPECT_EQ(enc.output_dtype(f16), ir::DType::kBF16);
  EXPECT_EQ(enc.output_dtype(i64), ir::DType::kI64);
  EXPECT_EQ(enc.output_dtype(f64), ir::DType::kF64);
  EXPECT_FALSE(static_cast<bool>(shard_writer::FloatCastEncoder(std::nullopt).output_dtype));
}

}  // namespace
}  // namespace slimpack::ir
