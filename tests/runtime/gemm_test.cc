// The GEMM's summation order (runtime/gemm.h) as a test: every
// micro-kernel this CPU can run, and Sgemm at 1-3 threads, must give the
// bits of a plain std::fma loop in that order, for every transpose,
// alpha/beta, ragged edge and depth past a cache block, with special
// values included. On a CPU without AVX-512 or AVX2 those kernels are not
// listed here; the qemu cross-CPU test (tests/cli/cross_cpu_bytes_test.sh)
// runs whole conversions under emulated CPUs instead.
#include "runtime/gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/cpu_features.h"

namespace slimpack::runtime {
namespace {

struct Shape {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

struct Problem {
  Shape s;
  std::vector<float> a, b, c0;
  int64_t lda, ldb, ldc;
};

Problem Make(const Shape& s, uint32_t seed, bool specials) {
  Problem p{s, {}, {}, {}, 0, 0, 0};
  // Leading dimensions wider than the rows, to catch stride mix-ups.
  p.lda = (s.ta ? s.m : s.k) + 3;
  p.ldb = (s.tb ? s.k : s.n) + 5;
  p.ldc = s.n + 2;
  std::mt19937 rng(seed);
  // Mixed magnitudes make rounding order visible: a different order of
  // the same terms changes low bits in most outputs.
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  auto fill = [&](std::vector<float>& v, int64_t rows, int64_t ld) {
    v.assign(rows * ld, 0.0f);
    for (float& x : v) x = std::ldexp(u(rng), e(rng));
  };
  fill(p.a, s.ta ? s.k : s.m, p.lda);
  fill(p.b, s.tb ? s.n : s.k, p.ldb);
  fill(p.c0, s.m, p.ldc);
  if (specials) {
    const float inf = std::numeric_limits<float>::infinity();
    p.a[0] = 0.0f;
    p.a[1] = -0.0f;
    p.a[2] = std::numeric_limits<float>::denorm_min();
    p.b[0] = 3.0e38f;
    p.b[1] = -3.0e38f;  // overflow to +-inf inside a chain
    p.b[2] = inf;
    p.c0[0] = std::numeric_limits<float>::quiet_NaN();  // beta 0 must ignore it
  }
  return p;
}

float At(const std::vector<float>& v, int64_t ld, bool trans, int64_t r, int64_t c) {
  return trans ? v[c * ld + r] : v[r * ld + c];
}

// The definition, element by element.
std::vector<float> Reference(const Problem& p) {
  const Shape& s = p.s;
  std::vector<float> c = p.c0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int64_t q = 0; q < s.k; ++q) {
        acc = std::fma(At(p.a, p.lda, s.ta, i, q), At(p.b, p.ldb, s.tb, q, j), acc);
      }
      float v = acc;
      if (s.alpha != 1.0f) v = s.alpha * v;
      if (s.beta != 0.0f) v = v + s.beta * c[i * p.ldc + j];
      c[i * p.ldc + j] = v;
    }
  }
  return c;
}

std::vector<gemm::MicroKernel> Kernels() {
  std::vector<gemm::MicroKernel> out;
  gemm::MicroKernel k;
  if (gemm::Avx512Kernel(&k)) out.push_back(k);
  if (gemm::Avx2Kernel(&k)) out.push_back(k);
  if (gemm::Sse2Kernel(&k)) out.push_back(k);
  if (gemm::GenericKernel(&k)) out.push_back(k);
  return out;
}

// Same bits, NaN payloads aside (x86 and the C library may pick different
// quiet NaNs; no artifact byte is ever a NaN).
void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int64_t diffs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    if (g != w && ++diffs <= 5) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(diffs, 0) << what;
}

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {
      {1, 1, 1, false, false, 1.0f, 0.0f},
      {1, 37, 300, false, false, 1.0f, 0.0f},    // one row, depth past kKc
      {7, 5, 3, false, true, 1.0f, 0.0f},
      {17, 33, 65, true, false, 1.0f, 1.0f},     // beta 1: the Conv bias path
      {33, 70, 513, true, true, 0.5f, 0.0f},     // alpha, three k slices
      {130, 260, 40, false, false, 1.0f, 0.25f}, // several blocks each way
      {9, 300, 257, false, true, -2.0f, 1.0f},
  };
  return shapes;
}

TEST(GemmTest, ListsTheKernelsThisCpuHas) {
  const std::vector<gemm::MicroKernel> ks = Kernels();
  ASSERT_GE(ks.size(), 1u);
  EXPECT_STREQ(ks.back().name, "generic");
#if defined(__x86_64__)
  ASSERT_GE(ks.size(), 2u);  // SSE2 exists on every x86-64 CPU
  EXPECT_STREQ(gemm::BestMicroKernel().name, ks.front().name);
  EXPECT_EQ(std::string(ks.front().name) == "avx512", support::CpuAllows(support::CpuFeature::kAvx512f));
#endif
}

TEST(GemmTest, EveryKernelGivesTheDefinedBits) {
  const std::vector<gemm::MicroKernel> ks = Kernels();
  int checked = 0;
  for (const Shape& s : Shapes()) {
    for (bool specials : {false, true}) {
      const Problem p = Make(s, 1234 + static_cast<uint32_t>(s.m * 31 + s.k), specials);
      const std::vector<float> want = Reference(p);
      for (const gemm::MicroKernel& kern : ks) {
        std::vector<float> c = p.c0;
        ASSERT_TRUE(SgemmWithKernel(kern, s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(),
                                    p.lda, p.b.data(), p.ldb, s.beta, c.data(), p.ldc)
                        .ok());
        ExpectSameBits(c, want,
                       std::string(kern.name) + " m=" + std::to_string(s.m) + " n=" +
                           std::to_string(s.n) + " k=" + std::to_string(s.k) +
                           (specials ? " specials" : ""));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(Shapes().size() * 2 * ks.size()));
}

TEST(GemmTest, ThreadCountDoesNotChangeABit) {
  // Large enough that Sgemm cuts it into several tiles.
  const Shape s{600, 700, 300, false, true, 1.0f, 1.0f};
  const Problem p = Make(s, 99, false);
  const std::vector<float> want = Reference(p);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> c = p.c0;
    ASSERT_TRUE(Sgemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda, p.b.data(),
                      p.ldb, s.beta, c.data(), p.ldc, &pool)
                    .ok());
    ExpectSameBits(c, want, std::to_string(threads) + " threads");
  }
  ASSERT_GT(GemmTileExtent(s.m, double(s.m) * s.n * s.k), 0);
  EXPECT_LT(GemmTileExtent(s.m, double(s.m) * s.n * s.k), s.m);  // really cut
}

// One row of A against a transposed B takes the packing-free GEMV where
// the CPU has AVX2 + FMA (runtime/gemm/gemv_avx2.h): the same bits as the
// definition for row counts around its 8-row blocks, depths around its
// 8-column transposes, alpha/beta, specials, and any thread count.
TEST(GemmTest, OneRowAgainstTransposedBGivesTheDefinedBits) {
  const std::vector<Shape> shapes = {
      {1, 1, 1, false, true, 1.0f, 0.0f},      {1, 7, 13, false, true, 1.0f, 0.0f},
      {1, 8, 8, false, true, 0.5f, 0.0f},      {1, 9, 7, false, true, 1.0f, 1.0f},
      {1, 1000, 576, false, true, 1.0f, 0.0f}, {1, 37, 300, false, true, -2.0f, 0.25f},
  };
  for (const Shape& s : shapes) {
    for (bool specials : {false, true}) {
      const Problem p = Make(s, 77 + static_cast<uint32_t>(s.n * 7 + s.k), specials);
      const std::vector<float> want = Reference(p);
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        std::vector<float> c = p.c0;
        ASSERT_TRUE(Sgemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda, p.b.data(),
                          p.ldb, s.beta, c.data(), p.ldc, &pool)
                        .ok());
        const std::string what = "n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                                 (specials ? " specials" : "") + " threads " +
                                 std::to_string(threads);
        ExpectSameBits(c, want, what);
        std::vector<float> single = p.c0;
        ASSERT_TRUE(SgemmSingleCall(s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda,
                                    p.b.data(), p.ldb, s.beta, single.data(), p.ldc)
                        .ok());
        ExpectSameBits(single, want, what + " (single call)");
      }
    }
  }
}

// A constant B packed once (PackedB, kept by a plan's node cache) gives the
// defined bits through SgemmConstantB, at any thread count and for every
// shape above plus one cut into column tiles (n > m, several 32-wide
// tiles, a ragged last panel). A packing of another matrix size is not
// used; the product is still right.
TEST(GemmTest, PrepackedBGivesTheDefinedBits) {
  std::vector<Shape> shapes = Shapes();
  shapes.push_back({64, 1000, 300, false, true, 1.0f, 0.0f});
  shapes.push_back({64, 1000, 300, true, false, 1.0f, 1.0f});
  int packed_used = 0;
  for (const Shape& s : shapes) {
    const Problem p = Make(s, 4321 + static_cast<uint32_t>(s.n * 13 + s.k), false);
    const std::vector<float> want = Reference(p);
    const std::shared_ptr<const PackedB> packed = PackedB::Pack(s.tb, s.k, s.n, p.b.data(), p.ldb);
    ASSERT_EQ(packed->k(), s.k);
    ASSERT_EQ(packed->n(), s.n);
    ASSERT_EQ(packed->nr(), gemm::BestMicroKernel().nr);
    ASSERT_GE(packed->bytes(), static_cast<int64_t>(s.n * s.k * sizeof(float)));
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<float> c = p.c0;
      ASSERT_TRUE(SgemmConstantB(s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda,
                                 p.b.data(), p.ldb, packed.get(), s.beta, c.data(), p.ldc, &pool)
                      .ok());
      ExpectSameBits(c, want,
                     "prepacked m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                         " k=" + std::to_string(s.k) + " threads " + std::to_string(threads));
    }
    ++packed_used;
  }
  EXPECT_EQ(packed_used, static_cast<int>(shapes.size()));
  // The panels are op(B)'s columns: panel 0, row 3 holds op(B)[3, 0 .. nr-1].
  const Shape s{5, 40, 9, false, true, 1.0f, 0.0f};
  const Problem p = Make(s, 7, false);
  const std::shared_ptr<const PackedB> packed = PackedB::Pack(true, s.k, s.n, p.b.data(), p.ldb);
  for (int j = 0; j < packed->nr() && j < s.n; ++j) {
    EXPECT_EQ(packed->panel(0)[3 * packed->nr() + j], At(p.b, p.ldb, true, 3, j)) << j;
  }
  // A packing made for a smaller B is ignored, not read past its end.
  const std::shared_ptr<const PackedB> other = PackedB::Pack(true, s.k, 8, p.b.data(), p.ldb);
  std::vector<float> c = p.c0;
  ASSERT_TRUE(SgemmConstantB(s.ta, s.tb, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda, p.b.data(),
                             p.ldb, other.get(), s.beta, c.data(), p.ldc, nullptr)
                  .ok());
  ExpectSameBits(c, Reference(p), "mismatched packing");
}

TEST(GemmTest, ZeroDepthScalesCAndNegativeSizesAreRefused) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  ASSERT_TRUE(SgemmSingleCall(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f,
                              c.data(), 2)
                  .ok());
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  absl::Status st = SgemmSingleCall(false, false, -1, 2, 2, 1.0f, nullptr, 1, nullptr, 2,
                                    0.0f, c.data(), 2);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("-1"), absl::string_view::npos) << st;
}

// The exact-FMA emulation on its hardest inputs: c plus a product that is
// half an ulp of c minus (or plus) a sliver far below double precision.
// The double sum rounds onto the float midpoint, and rounding that to
// float would tie to even: one rounding too many, unless the emulation
// rounds the double to odd first.
TEST(GemmTest, EmulatedFmaMatchesStdFmaWhereDoubleRoundingWouldNot) {
  gemm::MicroKernel sse;
  if (!gemm::Sse2Kernel(&sse)) {
    GTEST_SKIP() << "the SSE2 exact-FMA kernel exists on x86-64 only";
  }
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> mant(0, (1u << 23) - 1);
  std::uniform_int_distribution<int> small(1, 7), ex(-60, 60), sign(0, 1);
  int double_rounding_wrong = 0, trials = 0;
  for (; trials < 20000; ++trials) {
    const int e = ex(rng);
    const float c = (sign(rng) ? -1.0f : 1.0f) *
                    std::ldexp(1.0f + std::ldexp(float(mant(rng)), -23), e);
    const float t = std::ldexp(float(small(rng)), -23);
    // a * b = 2^(e-24) * (1 + t)(1 - t) = half an ulp of c, minus t^2 of it
    // (or plus, when the signs of a and c differ).
    const float a = 1.0f + t;
    const float b = (sign(rng) ? -1.0f : 1.0f) * std::ldexp(1.0f - t, e - 24);
    std::vector<float> ap(sse.mr, a), bp(sse.nr, b), acc(sse.mr * sse.nr, c);
    sse.fn(1, ap.data(), bp.data(), acc.data(), false);
    const float want = std::fma(a, b, c);
    uint32_t g, w;
    std::memcpy(&g, &acc[0], 4);
    std::memcpy(&w, &want, 4);
    ASSERT_EQ(g, w) << "a=" << a << " b=" << b << " c=" << c;
    const float twice = static_cast<float>(double(a) * double(b) + double(c));
    if (twice != want) ++double_rounding_wrong;
  }
  // The inputs really are the hard ones: plain double arithmetic gets a
  // good share of them wrong.
  EXPECT_GT(double_rounding_wrong, trials / 10) << double_rounding_wrong << " of " << trials;
}

}  // namespace
}  // namespace slimpack::runtime
