// The lane-parallel scale searches (ggml_blocks_lanes.cc) against the
// scalar routines they batch (ggml_blocks_search.cc, themselves bit-exact
// with ggml): every scale, offset and code must be the same bits, for every
// parameter set the K-quant encoders use, group counts that fill the
// vector lanes partly, and the groups where the scalar routines take an
// early exit (all zero, flat, all positive, tiny, huge). Each test runs at
// every vector width the host has (16, 8, 4); cross_cpu_bytes_test.sh runs
// the suite again under qemu as an AVX2-only and an SSE-only CPU.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "formats/gguf/ggml_blocks_internal.h"
#include "formats/gguf/ggml_lanes_vector.h"
#include "gtest/gtest.h"

namespace slimpack::gguf::internal {
namespace {

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// `groups` groups of n values: mostly Gaussian with outliers, and every
// fifth group one of the cases the scalar routines branch on.
std::vector<float> Groups(int64_t groups, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(groups * n));
  for (int64_t g = 0; g < groups; ++g) {
    float* v = x.data() + g * n;
    const float scale = std::ldexp(1.f, static_cast<int>(rng() % 20) - 10);
    for (int i = 0; i < n; ++i) v[i] = normal(rng) * scale * (rng() % 50 == 0 ? 20.f : 1.f);
    switch (g % 25) {
      case 4: for (int i = 0; i < n; ++i) v[i] = 0; break;                     // all zero
      case 9: for (int i = 0; i < n; ++i) v[i] = -0.75f; break;                // flat
      case 14: for (int i = 0; i < n; ++i) v[i] = std::fabs(v[i]) + 1; break;  // min > 0
      case 19: for (int i = 0; i < n; ++i) v[i] *= 1e-17f; break;              // below eps
      case 24: for (int i = 0; i < n; ++i) v[i] *= 1e30f; break;               // huge
      default: break;
    }
  }
  return x;
}

// Importance-like weights for groups of n; every seventh group all zero
// and every eleventh mostly zero (zero importance is allowed: a column the
// calibration never used), where the scalar searches' suml2 == 0 and
// D <= 0 branches decide.
// The lane widths this CPU can run (SetLaneWidth gives the widest it has
// for one it lacks); the searches go back to the widest when the test ends.
std::vector<int> Widths() {
  std::vector<int> widths;
  for (int w : {16, 8, 4}) {
    if (SetLaneWidth(w) == w) widths.push_back(w);
  }
  SetLaneWidth(0);
  return widths;
}

class EachWidth {
 public:
  explicit EachWidth(int w) { EXPECT_EQ(SetLaneWidth(w), w); }
  ~EachWidth() { SetLaneWidth(0); }
};

std::vector<float> Weights(const std::vector<float>& x, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 2.f);
  std::vector<float> w(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t g = i / static_cast<size_t>(n);
    w[i] = g % 7 == 3 ? 0.f : g % 11 == 5 && i % 5 != 0 ? 0.f : u(rng) + std::fabs(x[i]);
  }
  return w;
}

struct QxCase {
  int n, nmax;
  bool weighted;
};

class QxLanesTest : public ::testing::TestWithParam<QxCase> {};

TEST_P(QxLanesTest, SameBitsAsTheScalarSearch) {
  const QxCase c = GetParam();
  for (int width : Widths()) {
    SCOPED_TRACE(::testing::Message() << width << " floats wide");
    const EachWidth at(width);
    for (int64_t groups : {1, 7, 16, 17, 50, 65, 130}) {
      const std::vector<float> x = Groups(groups, c.n, static_cast<uint32_t>(groups * 31 + c.nmax));
      const std::vector<float> w = Weights(x, c.n, 7);
      const float* weights = c.weighted ? w.data() : nullptr;
      std::vector<int8_t> lanes_codes(x.size(), -1), scalar_codes(x.size(), -1);
      std::vector<float> lanes_scales(static_cast<size_t>(groups));
      MakeQxQuantsGroups(groups, c.n, c.nmax, x.data(), weights, lanes_codes.data(),
                         lanes_scales.data());
      for (int64_t g = 0; g < groups; ++g) {
        const float scale =
            MakeQxQuants(c.n, c.nmax, x.data() + g * c.n, weights ? weights + g * c.n : nullptr,
                         scalar_codes.data() + g * c.n);
        EXPECT_EQ(Bits(lanes_scales[g]), Bits(scale)) << "group " << g << " of " << groups;
      }
      EXPECT_EQ(lanes_codes, scalar_codes) << groups << " groups";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KQuantParameters, QxLanesTest,
                         ::testing::Values(QxCase{16, 32, false}, QxCase{16, 32, true},
                                           QxCase{16, 4, true}, QxCase{32, 8, false},
                                           // lengths that are no multiple of every width
                                           // (the element-by-element transpose)
                                           QxCase{8, 4, true}, QxCase{24, 16, false}));

// make_q3_quants (q3_K's search without importance), including lengths
// that take the element-wise transpose.
TEST(Q3LanesTest, SameBitsAsTheScalarSearch) {
  for (int width : Widths()) {
    SCOPED_TRACE(::testing::Message() << width << " floats wide");
    const EachWidth at(width);
    for (const int n : {16, 8, 24}) {
      for (int64_t groups : {1, 7, 16, 17, 50, 65, 130}) {
        std::vector<float> x = Groups(groups, n, static_cast<uint32_t>(groups * 13 + n));
        // Groups where the descent's guards decide: one non-zero value, one
        // spike among tiny values, an infinite value.
        for (int64_t g = 0; g < groups; ++g) {
          float* v = x.data() + g * n;
          if (g % 25 == 2) {
            for (int i = 0; i < n; ++i) v[i] = i == 3 ? 1.5f : 0.0f;
          } else if (g % 25 == 7) {
            for (int i = 0; i < n; ++i) v[i] = i == n - 1 ? -40.0f : 1e-6f * static_cast<float>(i);
          } else if (g % 25 == 12) {
            v[1] = INFINITY;
          }
        }
        std::vector<int8_t> lanes_codes(x.size(), -1), scalar_codes(x.size(), -1);
        std::vector<float> lanes_scales(static_cast<size_t>(groups));
        MakeQ3QuantsGroups(groups, n, 4, x.data(), lanes_codes.data(), lanes_scales.data());
        for (int64_t g = 0; g < groups; ++g) {
          const float scale = MakeQ3Quants(n, 4, x.data() + g * n, scalar_codes.data() + g * n);
          EXPECT_EQ(Bits(lanes_scales[g]), Bits(scale)) << "group " << g << " of " << groups;
        }
        EXPECT_EQ(lanes_codes, scalar_codes) << groups << " groups of " << n;
      }
    }
  }
}

struct QkxCase {
  int n, nmax;
  float rmin, rdelta;
  int nstep;
  bool use_mad;
  bool weighted = true;  // false: null weights, ggml's q4_K/q5_K reference weights
};

// quantize_row_q4_K_ref's weights for one group: sqrt(mean x^2) + |x|.
std::vector<float> ReferenceWeights(const std::vector<float>& x, int n) {
  std::vector<float> w(x.size());
  for (size_t g = 0; g < x.size() / static_cast<size_t>(n); ++g) {
    float sum = 0;
    for (int i = 0; i < n; ++i) sum += x[g * n + i] * x[g * n + i];
    const float av_x = std::sqrt(sum / n);
    for (int i = 0; i < n; ++i) w[g * n + i] = av_x + std::fabs(x[g * n + i]);
  }
  return w;
}

class QkxLanesTest : public ::testing::TestWithParam<QkxCase> {};

TEST_P(QkxLanesTest, SameBitsAsTheScalarSearch) {
  const QkxCase c = GetParam();
  for (int width : Widths()) {
    SCOPED_TRACE(::testing::Message() << width << " floats wide");
    const EachWidth at(width);
    for (int64_t groups : {1, 7, 16, 17, 50, 65, 130}) {
      const std::vector<float> x =
          Groups(groups, c.n, static_cast<uint32_t>(groups * 17 + c.nstep));
      const std::vector<float> w = c.weighted ? Weights(x, c.n, 11) : ReferenceWeights(x, c.n);
      std::vector<uint8_t> lanes_codes(x.size(), 255), scalar_codes(x.size(), 255);
      std::vector<float> lanes_scales(static_cast<size_t>(groups)),
          lanes_mins(static_cast<size_t>(groups));
      MakeQkxQuantsGroups(groups, c.n, c.nmax, x.data(), c.weighted ? w.data() : nullptr,
                          lanes_codes.data(), lanes_scales.data(), lanes_mins.data(), c.rmin,
                          c.rdelta, c.nstep, c.use_mad);
      for (int64_t g = 0; g < groups; ++g) {
        float min = 0;
        const float scale = MakeQkxQuants(c.n, c.nmax, x.data() + g * c.n, w.data() + g * c.n,
                                          scalar_codes.data() + g * c.n, &min, c.rmin, c.rdelta,
                                          c.nstep, c.use_mad);
        EXPECT_EQ(Bits(lanes_scales[g]), Bits(scale)) << "group " << g << " of " << groups;
        EXPECT_EQ(Bits(lanes_mins[g]), Bits(min)) << "group " << g << " of " << groups;
      }
      EXPECT_EQ(lanes_codes, scalar_codes) << groups << " groups";
    }
  }
}

// q4_K and q5_K without importance (their weights given, and computed by
// the search from null), q4_K/q5_K with it, q2_K's two searches. The last
// two are no encoder's: trial scales just below 2^21 (the searches round
// in floats up to there) and above 2^22 (where only Nearest's integer trick
// gives ggml's codes, so the searches must fall back to it).
INSTANTIATE_TEST_SUITE_P(KQuantParameters, QkxLanesTest,
                         ::testing::Values(QkxCase{32, 15, -1.f, 0.1f, 20, false},
                                           QkxCase{32, 31, -0.5f, 0.1f, 15, false},
                                           QkxCase{32, 15, -1.f, 0.1f, 20, false, false},
                                           QkxCase{32, 31, -0.5f, 0.1f, 15, false, false},
                                           QkxCase{32, 15, -0.9f, 0.05f, 36, false},
                                           QkxCase{32, 31, -0.9f, 0.05f, 36, false},
                                           QkxCase{16, 3, -0.9f, 0.05f, 36, false},
                                           QkxCase{16, 3, -0.5f, 0.1f, 15, true},
                                           QkxCase{24, 15, -1.f, 0.1f, 20, false, false},
                                           QkxCase{8, 3, -0.5f, 0.1f, 15, true},
                                           QkxCase{32, 15, 2.09e6f, 1.f, 3, false},
                                           QkxCase{32, 15, 6e6f, 0.1f, 3, false}));

// The searches round trial codes in floats (RoundClampF) wherever they have
// bounded |v| below 2^21, and fall back to ggml's integer trick elsewhere:
// the two agree on every value below the bound (ties, negatives, the
// clamps, the bound's neighbourhood) and do differ above it, which is why
// the bound is kept.
TEST(LaneRoundingTest, FloatRoundingIsNearestBelowTheBoundOnly) {
  using lanes::Vf;
  std::vector<float> below;
  for (float v = -40.f; v <= 40.f; v += 0.25f) below.push_back(v);  // every tie
  for (float v : {-0.f, 0.49999997f, 0.5f, 1.5f, 2.5f, 14.5f, 15.5f, 16.5f, -0.5f, -1.5f,
                  -32.5f, 31.5f, 2097151.5f, -2097151.5f, 2097151.f, 1e-30f, -1e-30f}) {
    below.push_back(v);
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2097151.f, 2097151.f);
  for (int i = 0; i < 4000; ++i) below.push_back(u(rng) / static_cast<float>(1 << (i % 23)));
  auto check = [](float v, int lo, int hi) {
    Vf<4> in = lanes::Splat<4>(v);
    const Vf<4> as_float = lanes::RoundClampF(in, static_cast<float>(lo), static_cast<float>(hi));
    const Vf<4> as_int = lanes::ToFloat(lanes::ClampI(lanes::Nearest(in), lo, hi));
    return Bits(as_float[0]) == Bits(as_int[0]);
  };
  for (float v : below) {
    EXPECT_TRUE(check(v, 0, 15)) << v;
    EXPECT_TRUE(check(v, -32, 31)) << v;
  }
  int differ = 0;
  for (float v : {4194303.5f, 5e6f, 6e6f, 8.5e6f, 1e7f, 3e7f, -5e6f}) differ += check(v, 0, 15) ? 0 : 1;
  EXPECT_GT(differ, 0) << "ggml's integer trick agrees with rounding near 2^22";
}

// The K types' final rounding against the scalar expression, for q4_K's
// (offset, [0, 15]) and q6_K's (no offset, [-32, 31] + 32) grids: groups
// with d == 0 keep their codes; huge quotients, subnormal and negative
// steps and -0 weights round as ggml's loops do.
TEST(RoundToGridsTest, SameCodesAsTheScalarRounding) {
  for (const int n : {16, 32}) {
    const int64_t groups = 40;
    std::vector<float> x = Groups(groups, n, static_cast<uint32_t>(n));
    std::vector<float> d(groups), offset(groups);
    std::mt19937 rng(3);
    for (int64_t g = 0; g < groups; ++g) {
      // Zero steps (left untouched), subnormal ones (quotients overflow)
      // and negative ones (q6_K's scales may be).
      d[g] = g % 9 == 2    ? 0.f
             : g % 13 == 6 ? 1e-40f
                           : std::ldexp(g % 5 == 1 ? -1.f : 1.f, static_cast<int>(rng() % 12) - 8);
      offset[g] = g % 2 ? 0.f : std::ldexp(1.f, static_cast<int>(rng() % 6) - 4);
    }
    x[1 * n + 3] = -0.0f;  // in a group without offset, as q6_K's x / d sees it
    for (int width : Widths()) {
      const EachWidth at(width);
      for (const int lo : {0, -32}) {
        const int hi = lo == 0 ? 15 : 31, bias = lo == 0 ? 0 : 32;
        std::vector<uint8_t> lanes(x.size(), 200), scalar(x.size(), 200);
        RoundToGrids(groups, n, x.data(), d.data(), offset.data(), lo, hi, bias, lanes.data());
        for (int64_t g = 0; g < groups; ++g) {
          if (d[g] == 0) continue;
          for (int i = 0; i < n; ++i) {
            // q6_K divides without an offset (RoundToGrids adds +0 first).
            const float v = offset[g] == 0 ? x[g * n + i] : x[g * n + i] + offset[g];
            const int q = NearestInt(v / d[g]);
            scalar[g * n + i] = static_cast<uint8_t>(std::clamp(q, lo, hi) + bias);
          }
        }
        EXPECT_EQ(lanes, scalar) << "n " << n << ", grid [" << lo << ", " << hi << "], " << width
                                 << " floats wide";
      }
    }
  }
}

}  // namespace
}  // namespace slimpack::gguf::internal
