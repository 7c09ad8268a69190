// RTN: hand-computed grids, error bounds, AVX2 == scalar bit for bit,
// thread-count invariance, clip search, input validation.
#include "quantize/numerics/rtn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "quantize/numerics/error_stats.h"
#include "support/threads.h"
#include "tests/quantize/numerics/quant_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quant {
namespace {

using ::slimpack::quant::testing::Gaussian;
using ::slimpack::quant::testing::HeavyTailed;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<float> Deq(const QuantizedMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  Dequantize(m, out.data());
  return out;
}

// Weighted squared error sum_rc imp[c] (w - deq)^2, in double.
double WeightedError(const std::vector<float>& w, const QuantizedMatrix& m,
                     const std::vector<float>& imp) {
  const std::vector<float> d = Deq(m);
  double e = 0;
  for (int64_t i = 0; i < m.rows * m.cols; ++i) {
    const double diff = static_cast<double>(w[i]) - d[i];
    e += imp[i % m.cols] * diff * diff;
  }
  return e;
}

TEST(QuantRtnTest, SymmetricInt8HandComputed) {
  // |min| = |max| = 1: the tie picks min, which lands on code -128, so
  // scale = -1 / -128 = 1/128; 1.0 -> 128 clamps to 127; 0.5 -> 64.
  const float w[] = {-1.0f, 0.5f, 1.0f, 0.0f};
  auto m = QuantizeRtn(w, 1, 4, Scheme{8, 0, true}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  EXPECT_THAT(m->q, ElementsAre(-128, 64, 127, 0));
  EXPECT_EQ(m->scale[0], 1.0f / 128.0f);
  EXPECT_TRUE(m->zero.empty());
}

TEST(QuantRtnTest, RestrictedRangeIsMaxOver127) {
  // Static W8A8's convention: amax 1 -> scale 1/127, codes in [-127, 127];
  // 0.5*127 = 63.5 rounds half to even -> 64.
  const float w[] = {-1.0f, 0.5f, 1.0f, 0.0f};
  RtnOptions o;
  o.restricted_range = true;
  auto m = QuantizeRtn(w, 1, 4, Scheme{8, 0, true}, o);
  ASSERT_THAT(m, IsOk());
  EXPECT_THAT(m->q, ElementsAre(-127, 64, 127, 0));
  EXPECT_EQ(m->scale[0], 1.0f / 127.0f);
}

TEST(QuantRtnTest, SymmetricPositiveExtremeTakesTheLowestCode) {
  // max 2 outweighs min -1: 2 maps to code -8 with scale 2 / -8 = -0.25, so
  // -1 -> 4, 0.5 -> -2, and all 16 int4 codes stay available.
  const float w[] = {-1.0f, 0.5f, 2.0f, 0.0f};
  auto m = QuantizeRtn(w, 1, 4, Scheme{4, 0, true}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  EXPECT_THAT(m->q, ElementsAre(4, -2, -8, 0));
  EXPECT_EQ(m->scale[0], -0.25f);
  EXPECT_TRUE(m->zero.empty());
}

TEST(QuantRtnTest, AsymmetricTwoBitHandComputed) {
  // Range [0, 3] over 3 steps: scale 1, unsigned zero point 0 (centred -2),
  // unsigned codes 0..3 -> centred -2..1.
  const float w[] = {0.0f, 1.0f, 2.0f, 3.0f};
  auto m = QuantizeRtn(w, 1, 4, Scheme{2, 0, false}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  EXPECT_THAT(m->q, ElementsAre(-2, -1, 0, 1));
  EXPECT_THAT(m->zero, ElementsAre(-2));
  EXPECT_EQ(m->scale[0], 1.0f);
  EXPECT_THAT(Deq(*m), ElementsAre(0.0f, 1.0f, 2.0f, 3.0f));
}

TEST(QuantRtnTest, ZeroRowIsExact) {
  const std::vector<float> w(64, 0.0f);
  for (bool sym : {true, false}) {
    auto m = QuantizeRtn(w.data(), 2, 32, Scheme{4, 16, sym}, RtnOptions{});
    ASSERT_THAT(m, IsOk());
    for (float x : Deq(*m)) EXPECT_EQ(x, 0.0f);
  }
}

TEST(QuantRtnTest, DequantizeIsExactlyTheSpecFormula) {
  const std::vector<float> w = Gaussian(5 * 70, 1);
  auto m = QuantizeRtn(w.data(), 5, 70, Scheme{4, 32, false}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  ASSERT_EQ(m->num_groups(), 3);  // 32 + 32 + 6: last group shorter
  ASSERT_EQ(m->scale.size(), 15u);
  const std::vector<float> d = Deq(*m);
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 70; ++c) {
      const int64_t g = r * 3 + c / 32;
      const float expect =
          static_cast<float>(int{m->q[r * 70 + c]} - int{m->zero[g]}) *
          m->scale[g];
      ASSERT_EQ(d[r * 70 + c], expect) << r << "," << c;
      ASSERT_GE(m->q[r * 70 + c], -8);
      ASSERT_LE(m->q[r * 70 + c], 7);
    }
  }
}

// The vector path (eight codes at a time where the CPU has AVX2) and the
// scalar tails give the formula's bits, with and without zero points, and
// a range of rows gives those rows of the whole.
TEST(QuantRtnTest, DequantizeRowsIsTheFormulaOnEveryPath) {
  const std::vector<float> w = Gaussian(6 * 45, 2);
  for (const Scheme& scheme : {Scheme{4, 16, true}, Scheme{8, 0, false}, Scheme{3, 13, false}}) {
    auto m = QuantizeRtn(w.data(), 6, 45, scheme, RtnOptions{});
    ASSERT_THAT(m, IsOk());
    const int64_t ng = m->num_groups(), gs = m->group_size();
    std::vector<float> rows(3 * 45, -1.0f);
    DequantizeRows(*m, 2, 5, rows.data());
    const std::vector<float> whole = Deq(*m);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 45; ++c) {
        const int64_t g = r * ng + c / gs;
        const int z = m->zero.empty() ? 0 : int{m->zero[g]};
        const float expect = static_cast<float>(int{m->q[r * 45 + c]} - z) * m->scale[g];
        ASSERT_EQ(whole[r * 45 + c], expect) << scheme.ToString() << " " << r << "," << c;
        if (r >= 2 && r < 5) {
          ASSERT_EQ(rows[(r - 2) * 45 + c], expect) << r << "," << c;
        }
      }
    }
  }
}

// Gaussian rows: per-channel int8 step is max|w|/127 ~ 3.1 sigma/127 for 256
// columns, so RMS error ~ step/sqrt(12) ~ 0.007 sigma (bound 0.01). int4 g32:
// group max ~ 2.2 sigma, step ~ 2.2/7 sigma, RMS ~ 0.09 sigma (bound 0.12).
// Asymmetric uses 15 steps over the range instead of 14: no worse.
TEST(QuantRtnTest, GaussianErrorBounds) {
  const int64_t rows = 64, cols = 256;
  const std::vector<float> w = Gaussian(rows * cols, 7);
  struct Case { Scheme s; double bound; };
  for (const Case& c : {Case{{8, 0, true}, 0.01}, Case{{8, 0, false}, 0.01},
                        Case{{4, 32, true}, 0.12}, Case{{4, 32, false}, 0.12},
                        Case{{4, 128, true}, 0.14}}) {
    auto m = QuantizeRtn(w.data(), rows, cols, c.s, RtnOptions{});
    ASSERT_THAT(m, IsOk());
    const std::vector<float> d = Deq(*m);
    EXPECT_LT(RelativeL2(w.data(), d.data(), rows * cols), c.bound)
        << c.s.ToString();
  }
}

// Every scale an f16-scale scheme produces is an f16 value, the codes are
// the rounding of w by that scale (the grid a reader dequantizes with), and
// the error stays within 2 % of the f32-scale scheme's (the scale's relative
// rounding is at most 2^-11).
TEST(QuantRtnTest, F16ScalesAreOnTheF16GridAndCostAlmostNothing) {
  const int64_t rows = 64, cols = 256;
  const std::vector<float> w = HeavyTailed(rows * cols, 21);
  for (bool sym : {true, false}) {
    for (bool search : {false, true}) {
      for (const Scheme base : {Scheme{4, 32, sym}, Scheme{8, 32, sym}, Scheme{3, 64, sym}}) {
        Scheme f16 = base;
        f16.scale_dtype = ScaleDType::kF16;
        SCOPED_TRACE(f16.ToString() + (search ? " mse" : ""));
        RtnOptions o;
        o.mse_clip = search;
        auto a = QuantizeRtn(w.data(), rows, cols, base, o);
        auto b = QuantizeRtn(w.data(), rows, cols, f16, o);
        ASSERT_THAT(a, IsOk());
        ASSERT_THAT(b, IsOk());
        for (float sc : b->scale) {
          ASSERT_EQ(ir::F16ToF32(ir::F32ToF16(sc)), sc) << sc;
        }
        if (!search) {
          // Plain RTN: each code is w / scale rounded and clamped.
          const int64_t ng = b->num_groups();
          const int32_t half = 1 << (f16.bits - 1);
          for (int64_t i = 0; i < rows * cols; ++i) {
            const int64_t g = (i / cols) * ng + (i % cols) / f16.group_size;
            const float sc = b->scale[g];
            const int32_t z = sym ? 0 : b->zero[g];
            const float t = std::nearbyint(w[i] / sc) + static_cast<float>(z);
            const int32_t want = static_cast<int32_t>(
                std::min(std::max(t, static_cast<float>(-half)), static_cast<float>(half - 1)));
            ASSERT_EQ(b->q[i], want) << i;
          }
        }
        const double ea = RelativeL2(w.data(), Deq(*a).data(), rows * cols);
        const double eb = RelativeL2(w.data(), Deq(*b).data(), rows * cols);
        EXPECT_LE(eb, ea * 1.02) << "f32 scales " << ea << ", f16 scales " << eb;
        // Half the scale bytes.
        EXPECT_EQ(a->StorageBytes() - b->StorageBytes(),
                  static_cast<uint64_t>(rows * a->num_groups() * 2));
      }
    }
  }
}

// StoredScale: f16 rounding, never 0 or infinite, sign kept.
TEST(QuantRtnTest, StoredScaleClampsToF16Range) {
  EXPECT_EQ(StoredScale(0.1f, ScaleDType::kF32), 0.1f);
  EXPECT_EQ(StoredScale(0.1f, ScaleDType::kF16), ir::F16ToF32(ir::F32ToF16(0.1f)));
  EXPECT_EQ(StoredScale(1e-9f, ScaleDType::kF16), 0x1p-24f);
  EXPECT_EQ(StoredScale(-1e-9f, ScaleDType::kF16), -0x1p-24f);
  EXPECT_EQ(StoredScale(1e6f, ScaleDType::kF16), 65504.0f);
  EXPECT_EQ(StoredScale(-1e6f, ScaleDType::kF16), -65504.0f);
  EXPECT_EQ(StoredScale(3e-6f, ScaleDType::kF16), ir::F16ToF32(ir::F32ToF16(3e-6f)));  // subnormal
  // Tiny weights still quantize to finite values with the smallest scale.
  const float w[] = {1e-9f, -2e-9f, 0.0f, 5e-10f};
  auto m = QuantizeRtn(w, 1, 4, Scheme{4, 4, true, ScaleDType::kF16}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(std::fabs(m->scale[0]), 0x1p-24f);
  EXPECT_THAT(m->q, ElementsAre(0, 0, 0, 0));
}

struct KernelCase {
  Scheme scheme;
  int64_t cols;
  bool search;
  bool importance;
};

TEST(QuantRtnTest, Avx2MatchesScalarBitForBit) {
  const int64_t rows = 9;
  if (!RtnHasAvx2()) {
    // Without AVX2 asking for it must fail cleanly instead of crashing.
    const std::vector<float> w(8, 1.0f);
    RtnOptions o;
    o.kernel = RtnOptions::Kernel::kAvx2;
    EXPECT_THAT(QuantizeRtn(w.data(), 1, 8, Scheme{}, o),
                StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("AVX2")));
    GTEST_SKIP() << "no AVX2 on this CPU: the refusal was checked, the AVX2 kernel was not";
  }
  for (const KernelCase& k :
       {KernelCase{{8, 0, true}, 333, false, false},
        KernelCase{{8, 0, false}, 333, true, false},
        KernelCase{{4, 32, true}, 333, false, false},
        KernelCase{{4, 32, false}, 333, true, true},
        KernelCase{{4, 64, true}, 200, true, true},
        KernelCase{{4, 128, false}, 131, false, false},
        KernelCase{{3, 0, false}, 7, true, false},
        KernelCase{{2, 8, true}, 40, true, true},
        KernelCase{{4, 32, false, ScaleDType::kF16}, 333, true, true},
        KernelCase{{8, 32, true, ScaleDType::kF16}, 200, false, false}}) {
    const std::vector<float> w = HeavyTailed(rows * k.cols, 11);
    std::vector<float> imp = Gaussian(k.cols, 12);
    for (float& x : imp) x = x * x;
    RtnOptions o;
    o.mse_clip = k.search;
    o.importance = k.importance ? imp.data() : nullptr;
    o.kernel = RtnOptions::Kernel::kScalar;
    auto a = QuantizeRtn(w.data(), rows, k.cols, k.scheme, o);
    o.kernel = RtnOptions::Kernel::kAvx2;
    auto b = QuantizeRtn(w.data(), rows, k.cols, k.scheme, o);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_EQ(a->q, b->q) << k.scheme.ToString();
    EXPECT_EQ(a->zero, b->zero) << k.scheme.ToString();
    ASSERT_EQ(a->scale.size(), b->scale.size());
    EXPECT_EQ(0, std::memcmp(a->scale.data(), b->scale.data(),
                             a->scale.size() * sizeof(float)))
        << k.scheme.ToString();
  }
}

// The AVX2 kernel computes eight groups' grids at once when it does not
// search clip ratios: every edge of MakeGrid and StoredScale (zero groups,
// signed zeros, ties of |min| and |max|, scales below f16's subnormals or
// above its largest value, ranges whose width overflows, subnormal weights)
// in one row, against the scalar kernel, for every grid kind.
TEST(QuantRtnTest, Avx2GridsOfEightGroupsMatchScalarOnEdgeRanges) {
  if (!RtnHasAvx2()) GTEST_SKIP() << "no AVX2/F16C: Avx2MatchesScalarBitForBit checks the refusal";
  const float big = 3e38f;
  const std::vector<std::pair<float, float>> ranges = {
      {0.0f, 0.0f},      {-0.0f, -0.0f},    {-0.0f, 0.0f},    {-3.0f, 3.0f},  {3.0f, -3.0f},
      {-1e-9f, 1e-10f},  {1e-10f, 2e-9f},   {-1e-40f, 1e-40f}, {-6e-6f, 2e-6f}, {0.25f, 0.5f},
      {-0.5f, -0.25f},   {-7e5f, 1.0f},     {1.0f, 5.3e5f},   {-big, big},    {-big, -1.0f},
      {1.0f, big},       {-65504.0f, 1.0f}, {-2.0f, 1e-3f},   {3e-5f, 3e-5f}, {-1.5f, 1.4999f},
      {-0.1f, 0.7f},     {-1e-30f, 1e30f},  {5e-8f, 6e-8f},   {-8.0f, 7.0f}};
  const int64_t group = 16;
  const int64_t cols = group * static_cast<int64_t>(ranges.size());
  std::vector<float> w(static_cast<size_t>(cols));
  for (size_t k = 0; k < ranges.size(); ++k) {
    const auto [a, b] = ranges[k];
    for (int64_t i = 0; i < group; ++i) {
      // Both extremes, then values between them.
      const float t = static_cast<float>(i % 5) / 4.0f;
      w[k * group + i] = i == 0 ? a : i == 1 ? b : a * (1.0f - t) + b * t;
    }
  }
  for (int bits : {2, 3, 4, 8}) {
    for (bool symmetric : {true, false}) {
      for (bool restricted : {false, true}) {
        if (restricted && !symmetric) continue;
        for (ScaleDType dt : {ScaleDType::kF32, ScaleDType::kF16}) {
          const Scheme scheme{bits, bits > 4 && bits < 8 ? 0 : group, symmetric, dt};
          if (scheme.group_size == 0) continue;
          RtnOptions o;
          o.restricted_range = restricted;
          o.kernel = RtnOptions::Kernel::kScalar;
          auto a = QuantizeRtn(w.data(), 1, cols, scheme, o);
          o.kernel = RtnOptions::Kernel::kAvx2;
          auto b = QuantizeRtn(w.data(), 1, cols, scheme, o);
          ASSERT_THAT(a, IsOk());
          ASSERT_THAT(b, IsOk());
          const std::string what = scheme.ToString() + (restricted ? " restricted" : "");
          EXPECT_EQ(a->q, b->q) << what;
          EXPECT_EQ(a->zero, b->zero) << what;
          ASSERT_EQ(a->scale.size(), ranges.size());
          for (size_t k = 0; k < ranges.size(); ++k) {
            uint32_t sa, sb;
            std::memcpy(&sa, &a->scale[k], 4);
            std::memcpy(&sb, &b->scale[k], 4);
            EXPECT_EQ(sa, sb) << what << ", group " << k << " [" << ranges[k].first << ", "
                              << ranges[k].second << "]: " << a->scale[k] << " vs "
                              << b->scale[k];
          }
        }
      }
    }
  }
}

TEST(QuantRtnTest, ResultIndependentOfThreadCount) {
  const int64_t rows = 37, cols = 96;
  const std::vector<float> w = HeavyTailed(rows * cols, 3);
  RtnOptions o;
  o.mse_clip = true;
  auto ref = QuantizeRtn(w.data(), rows, cols, Scheme{4, 32, false}, o);
  ASSERT_THAT(ref, IsOk());
  for (int t : {2, 3, 8, 64}) {
    o.threads = t;
    auto m = QuantizeRtn(w.data(), rows, cols, Scheme{4, 32, false}, o);
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ(m->q, ref->q) << t;
    EXPECT_EQ(m->scale, ref->scale) << t;
    EXPECT_EQ(m->zero, ref->zero) << t;
  }
}

// `--threads 64` where the system refuses threads (support/threads.h's test
// hook fails starts the way pthread_create's EAGAIN does): the row blocks of
// refused threads run on the caller and the result is the same bytes.
TEST(QuantRtnTest, RefusedThreadsGiveTheSameResult) {
  const int64_t rows = 37, cols = 96;
  const std::vector<float> w = HeavyTailed(rows * cols, 3);
  RtnOptions o;
  auto ref = QuantizeRtn(w.data(), rows, cols, Scheme{4, 32, false}, o);
  ASSERT_THAT(ref, IsOk());
  o.threads = 64;
  for (int allowed : {0, 2}) {
    support::LimitThreadStartsForTesting(allowed);
    auto m = QuantizeRtn(w.data(), rows, cols, Scheme{4, 32, false}, o);
    support::LimitThreadStartsForTesting(-1);
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ(m->q, ref->q) << allowed;
    EXPECT_EQ(m->scale, ref->scale) << allowed;
    EXPECT_EQ(m->zero, ref->zero) << allowed;
  }
}

// The search includes ratio 1, so it can never be worse per group; on
// heavy-tailed weights clipping the rare extremes must pay clearly (>= 5 %).
TEST(QuantRtnTest, MseClipReducesErrorOnHeavyTails) {
  const int64_t rows = 32, cols = 256;
  const std::vector<float> w = HeavyTailed(rows * cols, 5);
  const std::vector<float> ones(cols, 1.0f);
  for (bool sym : {true, false}) {
    const Scheme s{4, 128, sym};
    auto plain = QuantizeRtn(w.data(), rows, cols, s, RtnOptions{});
    RtnOptions o;
    o.mse_clip = true;
    auto clip = QuantizeRtn(w.data(), rows, cols, s, o);
    ASSERT_THAT(plain, IsOk());
    ASSERT_THAT(clip, IsOk());
    const double e0 = WeightedError(w, *plain, ones);
    const double e1 = WeightedError(w, *clip, ones);
    EXPECT_LT(e1, 0.95 * e0) << s.ToString();
  }
}

// Weighting the search by importance lowers the importance-weighted error
// versus an unweighted search (columns' importance spans 4 decades).
TEST(QuantRtnTest, ImportanceLowersWeightedError) {
  const int64_t rows = 32, cols = 256;
  const std::vector<float> w = HeavyTailed(rows * cols, 8);
  std::vector<float> imp(cols);
  for (int64_t c = 0; c < cols; ++c) {
    imp[c] = std::pow(10.0f, static_cast<float>((c * 37) % 5) - 2.0f);
  }
  const Scheme s{4, 32, true};
  RtnOptions plain;
  plain.mse_clip = true;
  RtnOptions weighted = plain;
  weighted.importance = imp.data();
  auto a = QuantizeRtn(w.data(), rows, cols, s, plain);
  auto b = QuantizeRtn(w.data(), rows, cols, s, weighted);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_LT(WeightedError(w, *b, imp), 0.97 * WeightedError(w, *a, imp));
}

// Weights near FLT_MAX: the asymmetric range hi - lo overflows; the grid
// must stay finite so dequantization does not produce inf/NaN.
TEST(QuantRtnTest, HugeAsymmetricRangeStaysFinite) {
  const float big = 0.9f * std::numeric_limits<float>::max();
  const float w[] = {-big, big, 0.0f, big / 2};
  auto m = QuantizeRtn(w, 1, 4, Scheme{8, 0, false}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  EXPECT_TRUE(std::isfinite(m->scale[0]));
  for (float x : Deq(*m)) EXPECT_TRUE(std::isfinite(x));
  EXPECT_LT(RelativeL2(w, Deq(*m).data(), 4), 0.01);
}

TEST(QuantRtnTest, RejectsBadSchemes) {
  const std::vector<float> w(64, 1.0f);
  EXPECT_THAT(QuantizeRtn(w.data(), 2, 32, Scheme{1, 0, true}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bits 1")));
  EXPECT_THAT(QuantizeRtn(w.data(), 2, 32, Scheme{9, 0, true}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bits 9")));
  EXPECT_THAT(QuantizeRtn(w.data(), 2, 32, Scheme{4, -1, true}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("group_size -1")));
  EXPECT_THAT(QuantizeRtn(w.data(), 2, 32, Scheme{6, 16, true}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("per-channel only")));
  EXPECT_THAT(QuantizeRtn(w.data(), 0, 32, Scheme{}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0x32")));
  EXPECT_THAT(QuantizeRtn(w.data(), 2, 32, Scheme{8, 32, true}, {}), IsOk());
}

TEST(QuantRtnTest, RejectsNonFiniteWeightNamingRowAndCol) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    std::vector<float> w = Gaussian(6 * 40, 2);
    w[4 * 40 + 17] = bad;
    for (int threads : {1, 3}) {
      RtnOptions o;
      o.threads = threads;
      EXPECT_THAT(QuantizeRtn(w.data(), 6, 40, Scheme{4, 32, true}, o),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("row 4 col 17 is")));
    }
  }
  const std::vector<float> w(8, 1.0f);
  std::vector<float> imp(8, 1.0f);
  imp[3] = -1.0f;
  RtnOptions o;
  o.importance = imp.data();
  EXPECT_THAT(QuantizeRtn(w.data(), 1, 8, Scheme{}, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("importance of column 3")));
}

}  // namespace
}  // namespace slimpack::quant
