// The blocked integer kernels (MatMulInteger's pmaddwd tiles, ConvInteger's
// im2col) against the definition summed naively, on shapes that exercise
// every edge of the blocking: odd depth (an unpaired last k), columns not a
// multiple of the 8-column panel, rows not a multiple of the 4-row tile or
// the 16-row task, broadcast batches, per-row/per-column zero points, the
// extreme 8-bit values (differences of +-255 at the int16 pair's range),
// strides, dilations, padding and groups; and the same bits at 1 and 3
// threads. Products whose partial sums stay below 2^24 run through the float
// kernels (quantize_util.h, kFloatExactBound), the others through the
// integer ones: the random cases below take the float path, the "extreme"
// cases (weights of +-128/127 and a zero input zero point, so some sum of
// |w - wzp| * 255 passes 2^24) the integer one, and the last tests pin the
// bound itself with sums one product either side of it. Every case also
// runs through the byte dot product path (int8_dot_ops.h), which has no
// such bound: the VNNI kernel where the CPU has it, else the portable loop.
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using ::testing::ElementsAreArray;
using testing::OpTest;
using testing::RunOne;

template <typename T>
std::vector<T> Random(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  // The extremes, where (x - zp) reaches +-255.
  if (n >= 2) {
    v[0] = std::numeric_limits<T>::min();
    v[n - 1] = std::numeric_limits<T>::max();
  }
  return v;
}

struct MatMulCase {
  int64_t batch, m, k, n;
  bool extreme = false;  // b of +-128/127 with zero points 0: the integer path
};

// Weights of only -128 and 127, at random.
std::vector<int8_t> Extremes(size_t n, std::mt19937& rng) {
  std::vector<int8_t> v(n);
  for (int8_t& x : v) x = (rng() & 1) != 0 ? int8_t{127} : int8_t{-128};
  return v;
}

TEST(IntegerKernelsTest, MatMulIntegerEqualsTheNaiveSum) {
  std::mt19937 rng(11);
  const MatMulCase cases[] = {{1, 1, 1, 1},           {1, 3, 5, 7},
                              {2, 17, 33, 9},         {1, 4, 64, 8},
                              {3, 21, 127, 40},       {1, 130, 16, 3},
                              {1, 1, 601, 19, true},  {2, 21, 613, 9, true}};
  int checked = 0;
  for (const MatMulCase& c : cases) {
    const std::vector<uint8_t> a = Random<uint8_t>(c.batch * c.m * c.k, rng);
    const std::vector<int8_t> b =
        c.extreme ? Extremes(c.k * c.n, rng) : Random<int8_t>(c.k * c.n, rng);
    std::vector<uint8_t> az(c.m);
    std::vector<int8_t> bz(c.n);
    for (auto& z : az) z = static_cast<uint8_t>(rng() % 256);
    for (auto& z : bz) z = c.extreme ? int8_t{0} : static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    az[0] = 255;  // a = 0 gives -255
    bz[0] = 127;  // b = -128 gives -255
    std::vector<int32_t> want(c.batch * c.m * c.n);
    for (int64_t bi = 0; bi < c.batch; ++bi) {
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          int64_t s = 0;
          for (int64_t k = 0; k < c.k; ++k) {
            s += (int64_t{a[(bi * c.m + i) * c.k + k]} - az[i]) * (int64_t{b[k * c.n + j]} - bz[j]);
          }
          want[(bi * c.m + i) * c.n + j] = static_cast<int32_t>(s);
        }
      }
    }
    for (int threads : {1, 3}) for (bool bytes : {true, false}) {
      testing::BytePath path(bytes);
      OpTest t("MatMulInteger",
               {{"a", RtTensor::FromVector<uint8_t>({c.batch, c.m, c.k}, a)},
                {"b", RtTensor::FromVector<int8_t>({c.k, c.n}, b)},
                {"az", RtTensor::FromVector<uint8_t>({c.m}, az)},
                {"bz", RtTensor::FromVector<int8_t>({c.n}, bz)}});
      t.num_threads = threads;
      const RtTensor y = RunOne(t);
      EXPECT_THAT(y.ToVector<int32_t>(), ElementsAreArray(want))
          << c.batch << "x" << c.m << "x" << c.k << "x" << c.n << ", " << threads << " threads"
          << (bytes ? ", byte path" : "");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

struct ConvCase {
  int64_t batch, c, h, w, m, group, kh, kw, stride, dilation, pad;
  bool extreme = false;  // w of +-128/127, zero points 0: the integer path
};

TEST(IntegerKernelsTest, ConvIntegerEqualsTheNaiveSum) {
  std::mt19937 rng(12);
  const ConvCase cases[] = {
      {1, 1, 5, 5, 1, 1, 3, 3, 1, 1, 1},  {2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 1},
      {1, 3, 9, 9, 5, 1, 3, 3, 1, 2, 2},  {1, 6, 20, 20, 6, 6, 3, 3, 1, 1, 1},
      {1, 5, 17, 18, 3, 1, 1, 1, 1, 1, 0},  // 306 positions: two chunks
      {1, 70, 6, 7, 4, 1, 3, 3, 1, 1, 1, true},
      {1, 140, 9, 9, 6, 2, 3, 3, 2, 1, 1, true},
      // The byte path's row-wise layout (four or more channels per group):
      // quads straddling two taps (5 channels), dilation; whole quads with
      // stride 2; SSE2 stretches of 16 with tails, three groups.
      {1, 5, 9, 11, 7, 1, 3, 3, 1, 2, 2},
      {2, 8, 12, 40, 5, 1, 3, 3, 2, 1, 1},
      {1, 12, 30, 37, 9, 3, 3, 3, 1, 1, 1},
  };
  int checked = 0;
  for (const ConvCase& c : cases) {
    const int64_t cg = c.c / c.group, mg = c.m / c.group;
    const int64_t ho = (c.h + 2 * c.pad - c.dilation * (c.kh - 1) - 1) / c.stride + 1;
    const int64_t wo = (c.w + 2 * c.pad - c.dilation * (c.kw - 1) - 1) / c.stride + 1;
    const std::vector<uint8_t> x = Random<uint8_t>(c.batch * c.c * c.h * c.w, rng);
    const std::vector<int8_t> w = c.extreme ? Extremes(c.m * cg * c.kh * c.kw, rng)
                                            : Random<int8_t>(c.m * cg * c.kh * c.kw, rng);
    const uint8_t xz = c.extreme ? uint8_t{0} : static_cast<uint8_t>(rng() % 256);
    std::vector<int8_t> wz(c.m);
    for (auto& z : wz) z = c.extreme ? int8_t{0} : static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    std::vector<int32_t> want(c.batch * c.m * ho * wo);
    for (int64_t n = 0; n < c.batch; ++n) {
      for (int64_t mi = 0; mi < c.m; ++mi) {
        const int64_t g = mi / mg;
        for (int64_t oy = 0; oy < ho; ++oy) {
          for (int64_t ox = 0; ox < wo; ++ox) {
            int64_t s = 0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              for (int64_t ky = 0; ky < c.kh; ++ky) {
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = oy * c.stride - c.pad + ky * c.dilation;
                  const int64_t ix = ox * c.stride - c.pad + kx * c.dilation;
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  const int64_t xv = x[((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix];
                  const int64_t wv = w[((mi * cg + ci) * c.kh + ky) * c.kw + kx];
                  s += (xv - xz) * (wv - wz[mi]);
                }
              }
            }
            want[((n * c.m + mi) * ho + oy) * wo + ox] = static_cast<int32_t>(s);
          }
        }
      }
    }
    for (int threads : {1, 3}) for (bool bytes : {true, false}) {
      testing::BytePath path(bytes);
      OpTest t("ConvInteger",
               {{"x", RtTensor::FromVector<uint8_t>({c.batch, c.c, c.h, c.w}, x)},
                {"w", RtTensor::FromVector<int8_t>({c.m, cg, c.kh, c.kw}, w)},
                {"xz", RtTensor::FromVector<uint8_t>({}, {xz})},
                {"wz", RtTensor::FromVector<int8_t>({c.m}, wz)}},
               {{"group", ir::Attribute::Int(c.group)},
                {"strides", ir::Attribute::Ints({c.stride, c.stride})},
                {"dilations", ir::Attribute::Ints({c.dilation, c.dilation})},
                {"pads", ir::Attribute::Ints({c.pad, c.pad, c.pad, c.pad})}});
      t.num_threads = threads;
      const RtTensor y = RunOne(t);
      EXPECT_THAT(y.ToVector<int32_t>(), ElementsAreArray(want))
          << "case " << checked << ", " << threads << " threads" << (bytes ? ", byte path" : "");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// 518 products of 255 x 127 sum to 16,774,530 < 2^24: the float kernels
// may take it and every partial sum is exact. 519 sum to 16,807,815, odd
// and past 2^24, which a float sum would round to an even neighbour: only
// the integer kernel gives it, so the bound must send it there.
TEST(IntegerKernelsTest, SumsEitherSideOfTwoToTheTwentyFourAreExact) {
  testing::BytePath path(false);  // the bound chooses between the other two
  for (int64_t k : {518, 519}) {
    const int64_t want = k * 255 * 127;
    const RtTensor mm = RunOne(OpTest(
        "MatMulInteger", {{"a", RtTensor::FromVector<uint8_t>({1, k}, std::vector<uint8_t>(k, 255))},
                          {"b", RtTensor::FromVector<int8_t>({k, 2}, std::vector<int8_t>(2 * k, 127))}}));
    EXPECT_THAT(mm.ToVector<int32_t>(), ElementsAreArray({want, want})) << "MatMulInteger k " << k;
    const RtTensor conv = RunOne(OpTest(
        "ConvInteger",
        {{"x", RtTensor::FromVector<uint8_t>({1, k, 1, 2}, std::vector<uint8_t>(2 * k, 255))},
         {"w", RtTensor::FromVector<int8_t>({1, k, 1, 1}, std::vector<int8_t>(k, 127))}}));
    EXPECT_THAT(conv.ToVector<int32_t>(), ElementsAreArray({want, want})) << "ConvInteger c " << k;
  }
}

}  // namespace
}  // namespace slimpack::runtime
