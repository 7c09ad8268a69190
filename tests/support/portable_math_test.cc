// The portable elementary functions against glibc's double-precision libm
// (accurate to < 1 ulp in double, so a fine reference for float results):
// float results must be correctly rounded on all but a handful of a sweep
// of inputs and never more than 1 ulp off; double results within a few
// double ulp. Special values follow C99 Annex F exactly.
#include "support/portable_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::pmath {
namespace {

int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(int64_t{ia} - ib);
}

double UlpError(double got, double want) {
  if (got == want) return 0.0;
  const double ulp = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
  return std::fabs(got - want) / ulp;
}

struct Fn {
  std::string name;
  std::function<float(float)> ours;
  std::function<double(double)> ours_d;
  std::function<double(double)> libm;
  float lo, hi;
};

std::vector<Fn> Functions() {
  return {
      {"exp", [](float x) { return Exp(x); }, [](double x) { return Exp(x); },
       [](double x) { return std::exp(x); }, -104.0f, 89.0f},
      {"expm1", [](float x) { return Expm1(x); }, [](double x) { return Expm1(x); },
       [](double x) { return std::expm1(x); }, -20.0f, 20.0f},
      {"log", [](float x) { return Log(x); }, [](double x) { return Log(x); },
       [](double x) { return std::log(x); }, 1e-30f, 1e30f},
      {"log1p", [](float x) { return Log1p(x); }, [](double x) { return Log1p(x); },
       [](double x) { return std::log1p(x); }, -0.999f, 100.0f},
      {"sin", [](float x) { return Sin(x); }, [](double x) { return Sin(x); },
       [](double x) { return std::sin(x); }, -3000.0f, 3000.0f},
      {"cos", [](float x) { return Cos(x); }, [](double x) { return Cos(x); },
       [](double x) { return std::cos(x); }, -3000.0f, 3000.0f},
      {"tan", [](float x) { return Tan(x); }, [](double x) { return Tan(x); },
       [](double x) { return std::tan(x); }, -10.0f, 10.0f},
      {"tanh", [](float x) { return Tanh(x); }, [](double x) { return Tanh(x); },
       [](double x) { return std::tanh(x); }, -12.0f, 12.0f},
      {"atan", [](float x) { return Atan(x); }, [](double x) { return Atan(x); },
       [](double x) { return std::atan(x); }, -50.0f, 50.0f},
      {"asin", [](float x) { return Asin(x); }, [](double x) { return Asin(x); },
       [](double x) { return std::asin(x); }, -1.0f, 1.0f},
      {"acos", [](float x) { return Acos(x); }, [](double x) { return Acos(x); },
       [](double x) { return std::acos(x); }, -1.0f, 1.0f},
      {"sinh", [](float x) { return Sinh(x); }, [](double x) { return Sinh(x); },
       [](double x) { return std::sinh(x); }, -80.0f, 80.0f},
      {"cosh", [](float x) { return Cosh(x); }, [](double x) { return Cosh(x); },
       [](double x) { return std::cosh(x); }, -80.0f, 80.0f},
      {"asinh", [](float x) { return Asinh(x); }, [](double x) { return Asinh(x); },
       [](double x) { return std::asinh(x); }, -1e6f, 1e6f},
      {"acosh", [](float x) { return Acosh(x); }, [](double x) { return Acosh(x); },
       [](double x) { return std::acosh(x); }, 1.0f, 1e6f},
      {"atanh", [](float x) { return Atanh(x); }, [](double x) { return Atanh(x); },
       [](double x) { return std::atanh(x); }, -0.999f, 0.999f},
  };
}

// Inputs: a uniform sweep plus a geometric one near zero (where series and
// cancellation matter), both clipped to [lo, hi].
std::vector<float> Inputs(float lo, float hi) {
  std::vector<float> xs;
  const int kN = 200000;
  for (int i = 0; i <= kN; ++i) xs.push_back(lo + (hi - lo) * (static_cast<float>(i) / kN));
  for (int i = -300; i <= 300; ++i) {
    for (float s : {1.0f, -1.0f}) {
      const float v = s * std::pow(2.0f, static_cast<float>(i) / 4.0f);
      if (v >= lo && v <= hi && std::isfinite(v)) xs.push_back(v);
    }
  }
  return xs;
}

TEST(PortableMathTest, FloatResultsAreCorrectlyRoundedAlmostEverywhere) {
  for (const Fn& f : Functions()) {
    int64_t n = 0, wrong = 0, worst = 0;
    for (float x : Inputs(f.lo, f.hi)) {
      const float want = static_cast<float>(f.libm(x));
      const float got = f.ours(x);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << f.name << "(" << x << ")";
        continue;
      }
      ++n;
      const int64_t d = UlpDistance(got, want);
      if (d != 0) ++wrong;
      worst = std::max(worst, d);
    }
    // libm's double is itself off by < 1 double ulp, so the reference's own
    // rounding to float can be the one that is wrong on a few inputs.
    EXPECT_LE(worst, 1) << f.name;
    EXPECT_LE(wrong, n / 10000) << f.name << ": " << wrong << " of " << n << " differ";
    EXPECT_GT(n, 200000) << f.name;
  }
}

TEST(PortableMathTest, DoubleResultsWithinAFewUlp) {
  for (const Fn& f : Functions()) {
    double worst = 0.0;
    int64_t n = 0;
    for (float xf : Inputs(f.lo, f.hi)) {
      const double x = static_cast<double>(xf) * (1.0 + 1e-9);  // off the float grid
      const double want = f.libm(x);
      if (!std::isfinite(want)) continue;
      ++n;
      worst = std::max(worst, UlpError(f.ours_d(x), want));
    }
    // tan near its poles and sin/cos far from 0 amplify the reduction error
    // relative to the (tiny) result; everywhere else the bound is 4 ulp.
    const double bound = f.name == "tan" || f.name == "sin" || f.name == "cos" ? 64.0 : 4.0;
    EXPECT_LE(worst, bound) << f.name;
    EXPECT_GT(n, 200000) << f.name;
  }
}

TEST(PortableMathTest, PowMatchesLibmAndItsSpecialCases) {
  int64_t n = 0;
  for (double x : {0.001, 0.3, 0.999, 1.5, 2.0, 7.25, 1e3, 123456.0}) {
    for (double y : {-7.5, -3.0, -1.0, -0.5, 0.05, 0.3, 0.5, 1.0, 2.0, 3.0, 10.0, 30.5}) {
      const double want = std::pow(x, y);
      // exp(y log x): the rounding of y log x is multiplied by |y log x|.
      const double bound = 8.0 + 2.0 * std::fabs(y * std::log(x));
      EXPECT_LE(UlpError(Pow(x, y), want), bound) << x << "^" << y;
      EXPECT_LE(UlpDistance(Pow(static_cast<float>(x), static_cast<float>(y)),
                            static_cast<float>(std::pow(static_cast<float>(x),
                                                        static_cast<float>(y)))),
                1)
          << x << "^" << y << " (float)";
      ++n;
    }
  }
  EXPECT_EQ(n, 96);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Pow(2.0, 2.0), 4.0);
  EXPECT_EQ(Pow(3.0f, 2.0f), 9.0f);
  EXPECT_EQ(Pow(-2.0, 3.0), -8.0);
  EXPECT_TRUE(std::isnan(Pow(-2.0, 0.5)));
  EXPECT_EQ(Pow(std::nan(""), 0.0), 1.0);
  EXPECT_EQ(Pow(1.0, std::nan("")), 1.0);
  EXPECT_EQ(Pow(0.0, -1.0), inf);
  EXPECT_EQ(Pow(-0.0, -1.0), -inf);
  EXPECT_EQ(Pow(-0.0, -2.0), inf);
  EXPECT_TRUE(std::signbit(Pow(-0.0, 3.0)));
  EXPECT_FALSE(std::signbit(Pow(-0.0, 2.0)));
  EXPECT_EQ(Pow(-inf, 3.0), -inf);
  EXPECT_EQ(Pow(-inf, 2.0), inf);
  EXPECT_TRUE(std::signbit(Pow(-inf, -3.0)));
  EXPECT_EQ(Pow(0.5, inf), 0.0);
  EXPECT_EQ(Pow(0.5, -inf), inf);
  EXPECT_EQ(Pow(-1.0, inf), 1.0);
}

// Exp scales by 2^n built from its exponent bits while 2^n and the result
// are normal and by ldexp at the ends; across both hand-overs (n = -1021 /
// -1022 near x = -708, n = 1023 / 1024 near x = 709.1) it stays within a
// few double ulp of libm and monotone.
TEST(PortableMathTest, ExpAcrossItsScalingHandOvers) {
  for (double centre : {-708.0, -707.7, 709.1, 709.4}) {
    double prev = 0;
    for (int i = -2000; i <= 2000; ++i) {
      const double x = centre + i * 1e-4;
      if (x > 709.78) break;
      const double got = Exp(x);
      EXPECT_LE(UlpError(got, std::exp(x)), 4.0) << "x = " << x;
      EXPECT_GE(got, prev) << "x = " << x;
      prev = got;
    }
  }
  // Subnormal results still come out right (the ldexp end).
  EXPECT_LE(UlpError(Exp(-740.0), std::exp(-740.0)), 1.0);
}

// ExpArray has the scalar call's bits for every element: a sweep over the
// whole float range plus the special values and the lane-group boundaries
// (|x| = 708), at lengths that are not multiples of four or eight (the
// AVX-512 path takes eight at a time; cross_cpu_bytes_test.sh runs this on
// AVX2 and SSE-only CPUs too), in place too.
TEST(PortableMathTest, ExpArrayHasTheBitsOfTheScalarCall) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, std::nanf(""), 708.0f, -708.0f,
                           std::nextafter(708.0f, inf), std::nextafter(-708.0f, -inf), 88.7f,
                           -103.9f, 1e-40f, -1e-40f, 1e-30f, 3.4e38f, -3.4e38f};
  // Eight-lane groups (aligned from index 16) mixing lanes below -708 with
  // ordinary ones, and a NaN or a large value in each lane position.
  while (xs.size() % 8 != 0) xs.push_back(1.0f);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 8; ++l) xs.push_back((l < 4) == (half == 0) ? -750.0f : -1.0f - l);
  }
  for (int pos = 0; pos < 8; ++pos) {
    for (float special : {std::nanf(""), 709.5f}) {
      for (int l = 0; l < 8; ++l) xs.push_back(l == pos ? special : 0.5f * l - 2.0f);
    }
  }
  for (float x : Inputs(-800.0f, 800.0f)) xs.push_back(x);
  for (float x : Inputs(-20.0f, 20.0f)) xs.push_back(x);
  for (size_t len : {xs.size(), xs.size() - 1, xs.size() - 2, xs.size() - 3}) {
    std::vector<float> out(len, 123.0f);
    ExpArray(xs.data(), out.data(), static_cast<int64_t>(len));
    int64_t differ = 0;
    for (size_t i = 0; i < len; ++i) {
      const float want = Exp(xs[i]);
      uint32_t a, b;
      std::memcpy(&a, &out[i], 4);
      std::memcpy(&b, &want, 4);
      if (a != b) {
        if (++differ < 5) ADD_FAILURE() << "x = " << xs[i] << ": " << out[i] << " vs " << want;
      }
    }
    EXPECT_EQ(differ, 0) << "length " << len;
  }
  std::vector<float> inplace(xs.begin(), xs.begin() + 1001);
  ExpArray(inplace.data(), inplace.data(), 1001);
  for (int i = 0; i < 1001; ++i) {
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(inplace[i]));
    } else {
      EXPECT_EQ(inplace[i], Exp(xs[i])) << xs[i];
    }
  }
}

TEST(PortableMathTest, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Exp(inf), inf);
  EXPECT_EQ(Exp(-inf), 0.0);
  EXPECT_EQ(Exp(0.0), 1.0);
  EXPECT_EQ(Exp(1000.0), inf);
  EXPECT_EQ(Exp(-1000.0), 0.0);
  EXPECT_GT(Exp(-745.0), 0.0);  // subnormal, not flushed
  EXPECT_TRUE(std::isnan(Exp(std::nan(""))));
  EXPECT_EQ(Log(0.0), -inf);
  EXPECT_EQ(Log(inf), inf);
  EXPECT_EQ(Log(1.0), 0.0);
  EXPECT_TRUE(std::isnan(Log(-1.0)));
  EXPECT_NEAR(Log(std::numeric_limits<double>::denorm_min()), -744.44007192138126, 1e-12);
  EXPECT_EQ(Log1p(-1.0), -inf);
  EXPECT_TRUE(std::signbit(Log1p(-0.0)));
  EXPECT_TRUE(std::signbit(Expm1(-0.0)));
  EXPECT_EQ(Expm1(-inf), -1.0);
  EXPECT_TRUE(std::signbit(Sin(-0.0)));
  EXPECT_TRUE(std::signbit(Tan(-0.0)));
  EXPECT_TRUE(std::signbit(Sinh(-0.0)));
  EXPECT_TRUE(std::signbit(Asin(-0.0)));
  EXPECT_TRUE(std::signbit(Tanh(-0.0)));
  EXPECT_TRUE(std::signbit(Atan(-0.0)));
  EXPECT_EQ(Tanh(inf), 1.0);
  EXPECT_EQ(Tanh(-inf), -1.0);
  EXPECT_TRUE(std::isnan(Sin(inf)));
  EXPECT_TRUE(std::isnan(Cos(-inf)));
  EXPECT_EQ(Atan(inf), 1.57079632679489655800);
  EXPECT_EQ(Asin(1.0), 1.57079632679489655800);
  EXPECT_EQ(Acos(-1.0), 3.14159265358979311600);
  EXPECT_EQ(Acos(1.0), 0.0);
  EXPECT_TRUE(std::isnan(Asin(1.5)));
  EXPECT_EQ(Atanh(1.0), inf);
  EXPECT_EQ(Atanh(-1.0), -inf);
  EXPECT_TRUE(std::isnan(Acosh(0.5)));
  EXPECT_EQ(Sinh(-inf), -inf);
  EXPECT_EQ(Cosh(-inf), inf);
  EXPECT_LE(UlpError(Sinh(710.0), std::sinh(710.0)), 4.0);  // finite, past exp's overflow
  EXPECT_LE(UlpError(Cosh(-710.0), std::cosh(710.0)), 4.0);
  EXPECT_LE(UlpDistance(Exp(88.0f), std::exp(88.0f)), 1);
  EXPECT_EQ(Exp(89.0f), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace slimpack::pmath
