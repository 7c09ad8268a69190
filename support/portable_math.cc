// See portable_math.h for why these exist. Every function is basic IEEE
// arithmetic in a fixed order; the polynomial degrees are chosen so that the
// truncation error is far below a double ulp on the reduced interval.
#include "support/portable_math.h"

#include "support/cpu_features.h"
#include "support/simd_clones.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace slimpack::pmath {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInvLn2 = 1.44269504088896338700e+00;
// ln 2 split so that n * kLn2Hi is exact for |n| < 2^21 (fdlibm's split).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2 = 6.93147180559945286227e-01;
constexpr double kInvLn10 = 4.34294481903251816668e-01;
constexpr double kSqrtHalf = 7.07106781186547572737e-01;
constexpr double kPi = 3.14159265358979311600e+00;
constexpr double kPiOver2 = 1.57079632679489655800e+00;
constexpr double kPiOver6 = 5.23598775598298815659e-01;
constexpr double kTanPiOver12 = 2.67949192431122695559e-01;
constexpr double kSqrt3 = 1.73205080756887719318e+00;
constexpr double kTwoOverPi = 6.36619772367581382433e-01;
// pi/2 in three 33-bit parts plus a tail (fdlibm's): n * part is exact for
// |n| < 2^20, so the reduction is exact to ~2^-100 relative up to there.
constexpr double kPio2_1 = 1.57079632673412561417e+00;
constexpr double kPio2_2 = 6.07710050630396597660e-11;
constexpr double kPio2_2t = 2.02226624879595063154e-21;

// 1/k! for k = 0..17.
constexpr double kInvFact[18] = {
    1.0,
    1.0,
    5.00000000000000000000e-01,
    1.66666666666666657415e-01,
    4.16666666666666643537e-02,
    8.33333333333333321769e-03,
    1.38888888888888894189e-03,
    1.98412698412698412526e-04,
    2.48015873015873015658e-05,
    2.75573192239858925110e-06,
    2.75573192239858882758e-07,
    2.50521083854417202239e-08,
    2.08767569878681001866e-09,
    1.60590438368216133707e-10,
    1.14707455977297245477e-11,
    7.64716373181981641332e-13,
    4.77947733238738525583e-14,
    2.81145725434552060388e-15,
};

// e^r - 1 for |r| <= 0.5 by its Taylor series (terms to r^17: the next is
// below 2^-70 relative).
double Expm1Series(double r) {
  double p = kInvFact[17];
  for (int k = 16; k >= 1; --k) p = p * r + kInvFact[k];
  return p * r;
}

// sin and cos of r, |r| <= pi/4 (plus rounding), Taylor to r^17 / r^18.
double SinKernel(double r) {
  const double r2 = r * r;
  // Signs alternate from -r^3/3!: the r^17 term is positive.
  double p = kInvFact[17];
  for (int k = 15; k >= 3; k -= 2) p = p * r2 + ((k / 2) % 2 == 1 ? -kInvFact[k] : kInvFact[k]);
  return r + r * (r2 * p);
}
double CosKernel(double r) {
  const double r2 = r * r;
  double p = -1.0 / 6402373705728000.0;  // -r^18/18!
  for (int k = 16; k >= 2; k -= 2) p = p * r2 + ((k / 2) % 2 == 1 ? -kInvFact[k] : kInvFact[k]);
  return 1.0 + r2 * p;
}

// x = n * pi/2 + r with |r| <= ~pi/4; returns n mod 4 and sets *r.
int ReduceHalfPi(double x, double* r) {
  if (std::fabs(x) <= 0.785398163397448279) {  // pi/4: keeps -0 and tiny x exact
    *r = x;
    return 0;
  }
  const double n = std::nearbyint(x * kTwoOverPi);
  double y = x - n * kPio2_1;
  y = y - n * kPio2_2;
  y = y - n * kPio2_2t;
  *r = y;
  // n is an integer-valued double; its residue mod 4 (n may exceed int64).
  const double q = n - 4.0 * std::floor(n * 0.25);
  return static_cast<int>(q);
}

// atan(a) for 0 <= a <= tan(pi/12), series to a^29.
double AtanSeries(double a) {
  const double a2 = a * a;
  double p = 1.0 / 29.0;
  for (int k = 27; k >= 3; k -= 2) p = p * a2 + ((k / 2) % 2 == 1 ? -1.0 / k : 1.0 / k);
  return a + a * (a2 * p);
}

}  // namespace

double Exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return kInf;
  if (x < -745.1332191019412) return 0.0;
  const double n = std::nearbyint(x * kInvLn2);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  const double m = 1.0 + Expm1Series(r);  // in [0.7, 1.42]
  const int e = static_cast<int>(n);
  // m * 2^e is exact while 2^e and the product are normal, so multiplying
  // by 2^e built from its bits is ldexp's result; ldexp (a libm call
  // through scalbn, a fifth of a decoder's calibration time) keeps the
  // subnormal and overflowing ends.
  if (e < -1021 || e > 1023) return std::ldexp(m, e);
  const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return m * scale;
}

namespace {

typedef float V4f __attribute__((vector_size(16), aligned(4)));
typedef double V4dv __attribute__((vector_size(32), aligned(8)));
typedef int64_t V4l __attribute__((vector_size(32), aligned(8)));

// Exp's fast path on four lanes, |x| <= 708: the scalar code's operations
// in its order (-ffp-contract=off keeps them separate), so every lane has
// the scalar bits. nearbyint as (v + 1.5 * 2^52) - 1.5 * 2^52: the same
// round-half-even for |v| < 2^51; 2^e by the exponent bits as in Exp.
// (A template over the lane count: four lanes in the AVX2 and baseline
// clones, eight in the AVX-512 one.)
template <typename Vd, typename Vl>
__attribute__((always_inline)) inline Vd ExpLanes(Vd x) {
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const Vd v = x * kInvLn2;
  const Vd n = (v + kRound) - kRound;
  const Vd r = (x - n * kLn2Hi) - n * kLn2Lo;
  Vd p = Vd{} + kInvFact[17];
  for (int k = 16; k >= 1; --k) p = p * r + kInvFact[k];
  const Vd m = 1.0 + p * r;
  // n + (2^52 + 1023) holds e + 1023 in its low mantissa bits.
  const Vd biased = n + 4503599627371519.0;  // 2^52 + 1023
  const Vl bits = ((Vl)biased & 0x7FF) << 52;  // vector casts reinterpret
  return m * (Vd)bits;
}

// ExpArray on `kLanes` lanes at a time; each lane's float is the scalar
// Exp's, whichever path its group takes (below -708 both give +0.0f).
template <int kLanes>
struct ExpVectors {  // (GCC takes a dependent vector_size in a class only)
  typedef float F __attribute__((vector_size(4 * kLanes), aligned(4)));
  typedef double D __attribute__((vector_size(8 * kLanes), aligned(8)));
  typedef int64_t L __attribute__((vector_size(8 * kLanes), aligned(8)));
};
template <int kLanes>
__attribute__((always_inline)) inline void ExpArrayLanes(const float* x, float* out, int64_t n) {
  using Vf = typename ExpVectors<kLanes>::F;
  using Vd = typename ExpVectors<kLanes>::D;
  using Vl = typename ExpVectors<kLanes>::L;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Vf xf;
    std::memcpy(&xf, x + i, sizeof xf);
    Vd xd = __builtin_convertvector(xf, Vd);
    // Below -708 the double result is at most 2^-1021, which rounds to
    // +0.0f: such lanes (a causal mask's -inf scores, sigmoid's far tails;
    // half of a decoder's softmax inputs) stay on the fast path, clamped
    // and then zeroed. NaN and large inputs go to the scalar call.
    const Vl ok = xd <= 708.0;  // all-ones lanes; NaN compares false
    const Vl under = xd < -708.0;
    int64_t all_under = -1, all_ok = -1;
    for (int l = 0; l < kLanes; ++l) {
      all_under &= under[l];
      all_ok &= ok[l];
    }
    if (all_under != 0) {
      std::memset(out + i, 0, kLanes * sizeof(float));
    } else if (all_ok != 0) {
      xd = (Vd)(((Vl)xd & ~under) | ((Vl)(Vd{} - 708.0) & under));
      const Vd e = (Vd)((Vl)ExpLanes<Vd, Vl>(xd) & ~under);
      const Vf y = __builtin_convertvector(e, Vf);
      std::memcpy(out + i, &y, sizeof y);
    } else {
      for (int l = 0; l < kLanes; ++l) out[i + l] = static_cast<float>(Exp(x[i + l]));
    }
  }
  for (; i < n; ++i) out[i] = static_cast<float>(Exp(x[i]));
}

SLIMPACK_SIMD_CLONES void ExpArray4(const float* x, float* out, int64_t n) {
  ExpArrayLanes<4>(x, out, n);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
__attribute__((target("avx512f"))) void ExpArray8(const float* x, float* out, int64_t n) {
  ExpArrayLanes<8>(x, out, n);
}
#endif

}  // namespace

void ExpArray(const float* x, float* out, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
  static const bool avx512 = support::CpuAllows(support::CpuFeature::kAvx512f);
  if (avx512) return ExpArray8(x, out, n);
#endif
  ExpArray4(x, out, n);
}

double Expm1(double x) {
  if (x != x) return x;
  if (std::fabs(x) <= 0.5) return Expm1Series(x);
  if (x < -40.0) return -1.0;
  return Exp(x) - 1.0;
}

double Log(double x) {
  if (x != x) return x;
  if (x < 0.0) return kNaN;
  if (x == 0.0) return -kInf;
  if (x == kInf) return kInf;
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < kSqrtHalf) {
    m *= 2.0;
    --e;
  }
  // log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double p = 1.0 / 25.0;
  for (int k = 23; k >= 3; k -= 2) p = p * s2 + 1.0 / k;
  const double log_m = 2.0 * s + 2.0 * s * (s2 * p);
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (de * kLn2Lo + log_m);
}

double Log1p(double x) {
  if (x != x) return x;
  if (x == -1.0) return -kInf;
  if (x < -1.0) return kNaN;
  if (std::fabs(x) < 1e-4) {
    return x - x * x * (0.5 - x * (1.0 / 3.0 - x * 0.25));
  }
  // u = 1 + x rounds; (x - (u - 1)) / u is the first-order correction.
  const double u = 1.0 + x;
  if (u == kInf) return kInf;
  return Log(u) + (x - (u - 1.0)) / u;
}

double Log10(double x) { return Log(x) * kInvLn10; }

double Pow(double x, double y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (x != x || y != y) return x + y;
  if (std::isinf(y)) {
    const double ax = std::fabs(x);
    if (ax == 1.0) return 1.0;
    return (ax < 1.0) == (y < 0.0) ? kInf : 0.0;
  }
  const bool y_int = std::floor(y) == y;
  const bool y_odd = y_int && std::fabs(y) < 9007199254740992.0 && std::fmod(y, 2.0) != 0.0;
  if (std::isinf(x)) {
    const double r = y > 0.0 ? kInf : 0.0;
    return x < 0.0 && y_odd ? -r : r;
  }
  if (x == 0.0) {
    const double r = y > 0.0 ? 0.0 : kInf;
    return y_odd ? std::copysign(r, x) : r;
  }
  double ax = x;
  bool negate = false;
  if (x < 0.0) {
    if (!y_int) return kNaN;
    ax = -x;
    negate = y_odd;
  }
  double r;
  if (y_int && std::fabs(y) <= 64.0) {
    // Square-and-multiply: exact whenever the powers fit 53 bits.
    uint32_t n = static_cast<uint32_t>(std::fabs(y));
    double b = ax;
    r = 1.0;
    while (n != 0) {
      if (n & 1u) r *= b;
      b *= b;
      n >>= 1;
    }
    if (y < 0.0) r = 1.0 / r;
  } else if (y == 0.5) {
    r = std::sqrt(ax);
  } else {
    r = Exp(y * Log(ax));
  }
  return negate ? -r : r;
}

double Sin(double x) {
  if (!std::isfinite(x)) return kNaN;
  if (x == 0.0) return x;  // keeps the sign of -0
  double r = 0.0;
  switch (ReduceHalfPi(x, &r)) {
    case 0: return SinKernel(r);
    case 1: return CosKernel(r);
    case 2: return -SinKernel(r);
    default: return -CosKernel(r);
  }
}

double Cos(double x) {
  if (!std::isfinite(x)) return kNaN;
  double r = 0.0;
  switch (ReduceHalfPi(x, &r)) {
    case 0: return CosKernel(r);
    case 1: return -SinKernel(r);
    case 2: return -CosKernel(r);
    default: return SinKernel(r);
  }
}

double Tan(double x) {
  if (!std::isfinite(x)) return kNaN;
  if (x == 0.0) return x;
  double r = 0.0;
  const int q = ReduceHalfPi(x, &r);
  return q % 2 == 0 ? SinKernel(r) / CosKernel(r) : -CosKernel(r) / SinKernel(r);
}

double Atan(double x) {
  if (x != x) return x;
  double a = std::fabs(x);
  const bool invert = a > 1.0;
  if (invert) a = 1.0 / a;
  double r;
  if (a > kTanPiOver12) {
    r = kPiOver6 + AtanSeries((a * kSqrt3 - 1.0) / (a + kSqrt3));
  } else {
    r = AtanSeries(a);
  }
  if (invert) r = kPiOver2 - r;
  return std::copysign(r, x);
}

double Asin(double x) {
  if (x != x) return x;
  if (std::fabs(x) > 1.0) return kNaN;
  return Atan(x / std::sqrt((1.0 - x) * (1.0 + x)));
}

double Acos(double x) {
  if (x != x) return x;
  if (std::fabs(x) > 1.0) return kNaN;
  if (x == -1.0) return kPi;
  return 2.0 * Atan(std::sqrt((1.0 - x) / (1.0 + x)));
}

double Sinh(double x) {
  if (x != x) return x;
  const double a = std::fabs(x);
  double r;
  if (a <= 0.5) {
    const double a2 = a * a;
    double p = kInvFact[17];
    for (int k = 15; k >= 3; k -= 2) p = p * a2 + kInvFact[k];
    r = a + a * (a2 * p);
  } else if (a > 700.0) {
    // e^a / 2 without overflowing first (a - ln 2 would round, and the
    // exponential multiplies that rounding by ~700).
    const double e = Exp(0.5 * a);
    r = (0.5 * e) * e;
  } else {
    const double e = Exp(a);
    r = 0.5 * (e - 1.0 / e);
  }
  return std::copysign(r, x);
}

double Cosh(double x) {
  if (x != x) return x;
  const double a = std::fabs(x);
  if (a > 700.0) {
    const double e = Exp(0.5 * a);
    return (0.5 * e) * e;
  }
  const double e = Exp(a);
  return 0.5 * (e + 1.0 / e);
}

double Tanh(double x) {
  if (x != x) return x;
  const double a = std::fabs(x);
  double r;
  if (a > 22.0) {
    r = 1.0;
  } else if (a < 0.0625) {
    // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925
    const double a2 = a * a;
    double p = -1382.0 / 155925.0;
    p = p * a2 + 62.0 / 2835.0;
    p = p * a2 - 17.0 / 315.0;
    p = p * a2 + 2.0 / 15.0;
    p = p * a2 - 1.0 / 3.0;
    r = a + a * (a2 * p);
  } else {
    const double e = Expm1(2.0 * a);
    r = e / (e + 2.0);
  }
  return std::copysign(r, x);
}

double Asinh(double x) {
  if (x != x || std::isinf(x)) return x;
  const double a = std::fabs(x);
  double r;
  if (a > 1e150) {
    r = Log(a) + kLn2;
  } else {
    const double a2 = a * a;
    r = Log1p(a + a2 / (1.0 + std::sqrt(1.0 + a2)));
  }
  return std::copysign(r, x);
}

double Acosh(double x) {
  if (x != x) return x;
  if (x < 1.0) return kNaN;
  if (x == kInf) return kInf;
  if (x > 1e150) return Log(x) + kLn2;
  const double t = x - 1.0;
  return Log1p(t + std::sqrt(2.0 * t + t * t));
}

double Atanh(double x) {
  if (x != x) return x;
  const double a = std::fabs(x);
  if (a > 1.0) return kNaN;
  if (a == 1.0) return std::copysign(kInf, x);
  return std::copysign(0.5 * Log1p(2.0 * a / (1.0 - a)), x);
}

}  // namespace slimpack::pmath
