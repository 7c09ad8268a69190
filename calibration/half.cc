#include "calibration/half.h"

#include <cstring>

namespace slimpack::calibration {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return FromBits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return FromBits(sign);
  // Subnormal half: value is mant * 2^-24, exact in f32.
  float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

uint16_t FloatToHalf(float f) {
  uint32_t u = Bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: keep it quiet and non-zero.
    return static_cast<uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): the result is subnormal or 0.
    // Adding 0.5 (2^-1) makes the FPU align the mantissa at 2^-24 units and
    // round to nearest even for us.
    float v = FromBits(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (Bits(v) - 0x3f000000u));
  }
  // Normal: rebias the exponent, then round the 13 dropped bits to even.
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xc8000fffu + mant_odd;  // (15-127)<<23 plus rounding bias
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float BFloat16ToFloat(uint16_t b) {
  return FromBits(static_cast<uint32_t>(b) << 16);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t u = Bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  }
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace slimpack::calibration
