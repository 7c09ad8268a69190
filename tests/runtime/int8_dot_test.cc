// The byte dot product kernels (runtime/kernels/int8_dot.h) against a naive
// int64 sum taken mod 2^32, on every tile shape the AVX512-VNNI and
// AVX-VNNI kernels have (1-4 rows, 1-4 vectors of 16 or 8 columns, a masked
// last vector; each kernel where the CPU has it) and the AVX2 one's (1-4
// rows, 1-2 vectors of 8), both operand signs, k from 0 to past the point where int32 wraps; and the W8A8 ops
// through the byte path (int8_dot_ops.h) for every pairing of u8 / i8
// operands, whose +-128 remapping and zero-point terms are where a sign
// slip would hide. On a CPU without AVX2 Dot runs the portable loop, so the
// remapping is still checked there.
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/quantize_util.h"
#include "support/cpu_features.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using kernels::int8dot::Operands;
using ::testing::ElementsAreArray;
using testing::Bytes;
using testing::BytePath;
using testing::OpTest;
using testing::RunOne;
using testing::Value;

// out[r][c] by definition, in int64, then wrapped as the kernels wrap.
std::vector<int32_t> Naive(const Operands& o) {
  std::vector<int32_t> out(o.rows * o.cols);
  for (int64_t r = 0; r < o.rows; ++r) {
    for (int64_t c = 0; c < o.cols; ++c) {
      int64_t s = 0;
      for (int64_t k = 0; k < 4 * o.kq; ++k) {
        const int64_t a = o.signed_rows ? static_cast<int8_t>(o.row[r * o.ldr + k])
                                        : o.row[r * o.ldr + k];
        const uint8_t pb = o.panel[((k / 4) * o.pcols + c) * 4 + k % 4];
        const int64_t b = o.signed_rows ? pb : static_cast<int8_t>(pb);
        s += a * b;
      }
      out[r * o.cols + c] = static_cast<int32_t>(static_cast<uint32_t>(s));
    }
  }
  return out;
}

// The rows of o widened as Operands::row_halves ([rows][kq][2]).
std::vector<uint32_t> Halves(const Operands& o) {
  std::vector<uint32_t> h(o.rows * o.kq * 2);
  for (int64_t r = 0; r < o.rows; ++r) {
    for (int64_t q = 0; q < o.kq; ++q) {
      kernels::int8dot::RowHalves(o.row + r * o.ldr + 4 * q, h.data() + (r * o.kq + q) * 2);
    }
  }
  return h;
}

TEST(Int8DotTest, EveryTileShapeEqualsTheNaiveSum) {
  std::mt19937 rng(5);
  int checked = 0;
  for (bool signed_rows : {false, true}) {
    for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
      for (int64_t cols : {1, 7, 8, 9, 15, 16, 17, 33, 48, 64, 65, 130}) {
        const int64_t kq = static_cast<int64_t>(rng() % 40);
        const int64_t ldr = 4 * kq + 4, pcols = (cols + 15) / 16 * 16;
        std::vector<uint8_t> row(rows * ldr), panel(kq * pcols * 4 + 1);
        for (auto& v : row) v = static_cast<uint8_t>(rng());
        for (auto& v : panel) v = static_cast<uint8_t>(rng());
        std::vector<int32_t> out(rows * cols, -1);
        const Operands o{rows, cols, kq, row.data(), ldr, panel.data(), pcols,
                         signed_rows, out.data(), cols};
        kernels::int8dot::Dot(o);
        const std::vector<int32_t> want = Naive(o);
        EXPECT_THAT(out, ElementsAreArray(want))
            << rows << "x" << cols << " kq " << kq << (signed_rows ? " signed rows" : "");
        std::fill(out.begin(), out.end(), -1);
        kernels::int8dot::DotPortable(o);
        EXPECT_THAT(out, ElementsAreArray(want)) << "portable";
        // Each instruction set's kernel where this CPU has it (Dot above
        // ran the widest).
        std::fill(out.begin(), out.end(), -1);
        if (kernels::int8dot::DotAvxVnni(o)) {
          EXPECT_THAT(out, ElementsAreArray(want)) << "AVX-VNNI";
        }
        std::fill(out.begin(), out.end(), -1);
        if (kernels::int8dot::DotAvx2Madd(o)) {
          EXPECT_THAT(out, ElementsAreArray(want)) << "AVX2 madd";
        }
        if (signed_rows) {
          const std::vector<uint32_t> halves = Halves(o);
          Operands h = o;
          h.row_halves = halves.data();
          std::fill(out.begin(), out.end(), -1);
          if (kernels::int8dot::DotAvx2Madd(h)) {
            EXPECT_THAT(out, ElementsAreArray(want)) << "AVX2 madd, widened rows";
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 144);
}

// 70,000 products of 255 x -128 sum to -2,284,800,000, past int32's range:
// every path wraps it to the same 32 bits.
TEST(Int8DotTest, SumsWrapModTwoToTheThirtyTwo) {
  const int64_t kq = 17500, cols = 16;
  std::vector<uint8_t> row(4 * kq, 255), panel(kq * cols * 4, 0x80);
  std::vector<int32_t> out(cols), portable(cols);
  Operands o{1, cols, kq, row.data(), 4 * kq, panel.data(), cols, false, out.data(), cols};
  kernels::int8dot::Dot(o);
  o.out = portable.data();
  kernels::int8dot::DotPortable(o);
  const auto want = static_cast<int32_t>(static_cast<uint32_t>(int64_t{-2284800000}));
  EXPECT_EQ(want, 2010167296);
  EXPECT_THAT(out, ::testing::Each(want));
  EXPECT_THAT(portable, ::testing::Each(want));
  std::vector<int32_t> madd(cols, -1);
  o.out = madd.data();
  if (kernels::int8dot::DotAvx2Madd(o)) {
    EXPECT_THAT(madd, ::testing::Each(want));
  }
}

// The kernels' CPU checks against the kernel's own report of the CPU.
TEST(Int8DotTest, TheByteInstructionIsUsedWhereTheCpuHasIt) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  const auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  // SLIMPACK_CPU_MAX (support/cpu_features.h) may lower what kernels use.
  const support::CpuCap cap = support::CpuCapInForce();
  const bool avx512_level = cap == support::CpuCap::kAvx512;
  const bool avx2_level = cap != support::CpuCap::kSse2;
  EXPECT_EQ(kernels::int8dot::HaveVnni512(),
            avx512_level && has("avx512f") && has("avx512_vnni"));
  // AVX-VNNI is newer than the avx2 cap's CPUs (Haswell to Zen 3).
  EXPECT_EQ(kernels::int8dot::HaveAvxVnni(), avx512_level && has("avx2") && has("avx_vnni"));
  EXPECT_EQ(kernels::int8dot::HaveAvx2Madd(), avx2_level && has("avx2"));
  EXPECT_EQ(kernels::int8dot::HaveByteDot(),
            kernels::int8dot::HaveVnni512() || kernels::int8dot::HaveAvxVnni());
  // The byte path is the default wherever it has a vector kernel.
  EXPECT_EQ(kernels::int8dot::Fast(),
            kernels::int8dot::HaveByteDot() || kernels::int8dot::HaveAvx2Madd());
}

// The AVX-512 and AVX2 requantisations against quantize_internal::SaturateRoundBytes
// on what QLinearConv feeds it (f32(acc + bias) * mult): sums at int32's
// ends (the bias add wraps), ties that round to even, multipliers that
// saturate, zero, NaN and infinite ones, both byte types, every tail length.
TEST(Int8DotTest, RequantizeGivesTheScalarBytes) {
  std::mt19937 rng(8);
  std::vector<int32_t> acc(71);
  for (int32_t& v : acc) v = static_cast<int32_t>(rng()) >> (rng() % 31);
  acc[0] = INT32_MAX;
  acc[1] = INT32_MIN;
  // Ties at mult 0.5 inside the clamp range: u8 (bias 1000) (-995 + 1000)
  // * 0.5 = 2.5 and (-1003 + 1000) * 0.5 = -1.5; i8 (bias 1) (4 + 1) * 0.5
  // = 2.5 and (-4 + 1) * 0.5 = -1.5. Half to even: 2 and -2.
  acc[2] = -995;
  acc[3] = -1003;
  acc[4] = 4;
  acc[5] = -4;
  int checked = 0;
  for (const float mult : {0.5f, 1.3e-3f, -2.7e-2f, 40.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity()}) {
    for (const bool u8 : {true, false}) {
      const ir::DType type = u8 ? ir::DType::kU8 : ir::DType::kI8;
      const int32_t zp = u8 ? 131 : -9, bias = u8 ? 1000 : 1;
      for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 53, 71}) {
        std::vector<float> scaled(n);
        for (int64_t i = 0; i < n; ++i) {
          scaled[i] = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc[i]) +
                                                              static_cast<uint32_t>(bias))) * mult;
        }
        std::vector<uint8_t> want(n + 1, 0xA5), got(n + 1, 0xA5);
        // The scalar definition (SaturateRoundBytes' vector loop rounds
        // with cvtps2dq itself).
        for (int64_t i = 0; i < n; ++i) {
          want[i] = static_cast<uint8_t>(
              kernels::quantize_internal::SaturateRound(scaled[i], zp, type));
        }
        const bool ran = kernels::int8dot::RequantizeVnni512(acc.data(), n, bias, mult, u8 ? 0 : -128,
                                                            u8 ? 255 : 127, zp, got.data());
        ASSERT_EQ(ran, kernels::int8dot::HaveVnni512());
        if (ran) {
          EXPECT_EQ(got, want) << "mult " << mult << (u8 ? " u8 " : " i8 ") << n;
        }
        std::vector<uint8_t> got2(n + 1, 0xA5);
        const bool ran2 = kernels::int8dot::RequantizeAvx2(acc.data(), n, bias, mult,
                                                           u8 ? 0 : -128, u8 ? 255 : 127, zp,
                                                           got2.data());
        ASSERT_EQ(ran2, kernels::int8dot::HaveAvx2Madd());
        if (ran2) {
          EXPECT_EQ(got2, want) << "AVX2, mult " << mult << (u8 ? " u8 " : " i8 ") << n;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 182);
}

// Dot's requantising store (Operands::requant) against its definition
// applied to the naive sums: every tile shape of every kernel this CPU has
// (and the portable loop), both operand signs, with and without the
// zero-point term (zp x colsum), both byte types, per-row multipliers that
// round ties, saturate, are zero, negative, NaN or infinite, and add terms
// that make the sum wrap. Bytes past each row's columns stay untouched.
TEST(Int8DotTest, RequantizedStoreGivesTheDefinedBytesOnEveryKernel) {
  namespace int8dot = kernels::int8dot;
  std::mt19937 rng(12);
  const float kMults[] = {0.5f,  1.3e-3f, -2.7e-2f, 40.0f, 0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(), 7.1e-4f, 2.2e-3f};
  int checked = 0;
  for (bool signed_rows : {false, true}) {
    for (bool with_zp : {false, true}) {
      for (bool u8 : {true, false}) {
        for (int64_t rows : {1, 3, 4, 5, 9}) {
          for (int64_t cols : {1, 7, 8, 9, 16, 17, 33, 64, 65, 130}) {
            const int64_t kq = 1 + static_cast<int64_t>(rng() % 30);
            const int64_t ldr = 4 * kq, pcols = (cols + 15) / 16 * 16, ldo = cols + 3;
            std::vector<uint8_t> row(rows * ldr), panel(kq * pcols * 4);
            for (auto& v : row) v = static_cast<uint8_t>(rng());
            for (auto& v : panel) v = static_cast<uint8_t>(rng());
            std::vector<int32_t> add(rows), zp(rows), colsum(cols);
            std::vector<float> mult(rows);
            for (int64_t r = 0; r < rows; ++r) {
              add[r] = static_cast<int32_t>(rng());
              zp[r] = static_cast<int32_t>(rng() % 256) - 128;
              mult[r] = kMults[(r + cols) % 9];
              // Row 0 lands on ties: its sum (with add) becomes 2k + 1
              // at mult 0.5.
              if (r == 0) mult[r] = 0.5f;
            }
            for (auto& v : colsum) v = static_cast<int32_t>(rng());  // zp x colsum wraps
            const int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
            const int32_t out_zp = u8 ? 131 : -9;
            std::vector<int32_t> sums(rows * cols);
            const Operands plain{rows, cols, kq, row.data(), ldr, panel.data(), pcols,
                                 signed_rows, sums.data(), cols};
            const std::vector<int32_t> naive = Naive(plain);
            add[0] = static_cast<int32_t>(
                1u - static_cast<uint32_t>(naive[0]) +
                (with_zp ? static_cast<uint32_t>(zp[0]) * static_cast<uint32_t>(colsum[0]) : 0u));
            std::vector<uint8_t> want(rows * ldo, 0xA5);
            const ir::DType type = u8 ? ir::DType::kU8 : ir::DType::kI8;
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t c = 0; c < cols; ++c) {
                uint32_t s = static_cast<uint32_t>(naive[r * cols + c]) +
                             static_cast<uint32_t>(add[r]);
                if (with_zp) {
                  s -= static_cast<uint32_t>(zp[r]) * static_cast<uint32_t>(colsum[c]);
                }
                const float v = static_cast<float>(static_cast<int32_t>(s)) * mult[r];
                want[r * ldo + c] = static_cast<uint8_t>(
                    kernels::quantize_internal::SaturateRound(v, out_zp, type));
              }
            }
            EXPECT_EQ(want[0], static_cast<uint8_t>(out_zp)) << "1 * 0.5 rounds to even 0";
            std::vector<uint8_t> got(rows * ldo);
            const int8dot::Requant q{add.data(), with_zp ? zp.data() : nullptr, colsum.data(),
                                     mult.data(), lo, hi, out_zp, got.data(), ldo};
            Operands o = plain;
            o.out = nullptr;
            o.requant = &q;
            const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " kq " +
                                     std::to_string(kq) + (signed_rows ? " signed rows" : "") +
                                     (with_zp ? " zp" : "") + (u8 ? " u8" : " i8");
            const auto check = [&](const char* kernel, auto run) {
              std::fill(got.begin(), got.end(), 0xA5);
              if (run()) {
                EXPECT_EQ(got, want) << kernel << " " << what;
              }
            };
            check("Dot", [&] { int8dot::Dot(o); return true; });
            check("portable", [&] { int8dot::DotPortable(o); return true; });
            check("AVX512-VNNI", [&] { return int8dot::DotVnni512(o); });
            check("AVX-VNNI", [&] { return int8dot::DotAvxVnni(o); });
            check("AVX2 madd", [&] { return int8dot::DotAvx2Madd(o); });
            if (signed_rows) {
              const std::vector<uint32_t> halves = Halves(o);
              o.row_halves = halves.data();
              check("AVX2 madd, widened rows", [&] { return int8dot::DotAvx2Madd(o); });
              o.row_halves = nullptr;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 400);
}

template <typename A, typename B>
void CheckMatMulInteger(int64_t m, int64_t k, int64_t n, std::mt19937& rng) {
  const RtTensor a = Bytes<A>({2, m, k}, rng), b = Bytes<B>({k, n}, rng);
  const RtTensor az = Bytes<A>({m}, rng), bz = Bytes<B>({n}, rng);
  std::vector<int32_t> want(2 * m * n);
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          s += (Value(a, (bi * m + i) * k + kk) - Value(az, i)) * (Value(b, kk * n + j) - Value(bz, j));
        }
        want[(bi * m + i) * n + j] = static_cast<int32_t>(s);
      }
    }
  }
  for (bool bytes : {true, false}) {
    BytePath path(bytes);
    OpTest t("MatMulInteger", {{"a", a}, {"b", b}, {"az", az}, {"bz", bz}});
    t.num_threads = 2;
    EXPECT_THAT(RunOne(t).ToVector<int32_t>(), ElementsAreArray(want))
        << m << "x" << k << "x" << n << (bytes ? " byte path" : " other paths");
  }
}

TEST(Int8DotTest, MatMulIntegerOfEveryOperandTypeEqualsTheNaiveSum) {
  std::mt19937 rng(6);
  CheckMatMulInteger<uint8_t, int8_t>(5, 37, 70, rng);
  CheckMatMulInteger<int8_t, int8_t>(17, 9, 300, rng);
  CheckMatMulInteger<uint8_t, uint8_t>(1, 130, 33, rng);
  CheckMatMulInteger<int8_t, uint8_t>(3, 4, 1, rng);
}

template <typename X, typename W>
void CheckConvInteger(int64_t c, int64_t hw, int64_t m, int64_t group, int64_t kernel,
                      std::mt19937& rng, int64_t stride = 1) {
  const int64_t cg = c / group, mg = m / group, pad = kernel / 2;
  const int64_t ohw = (hw + 2 * pad - kernel) / stride + 1;
  // x ends at an unreadable page: the layouts' vector loads run past rows
  // and must stop at the tensor's end.
  const RtTensor x = testing::GuardedBytes<X>({1, c, hw, hw}, rng);
  const RtTensor w = Bytes<W>({m, cg, kernel, kernel}, rng);
  const RtTensor xz = Bytes<X>({}, rng), wz = Bytes<W>({m}, rng);
  std::vector<int32_t> want(m * ohw * ohw);
  for (int64_t mi = 0; mi < m; ++mi) {
    for (int64_t oy = 0; oy < ohw; ++oy) {
      for (int64_t ox = 0; ox < ohw; ++ox) {
        int64_t s = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          for (int64_t ky = 0; ky < kernel; ++ky) {
            for (int64_t kx = 0; kx < kernel; ++kx) {
              const int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
              const int64_t xv = Value(x, ((mi / mg * cg + ci) * hw + iy) * hw + ix);
              const int64_t wv = Value(w, ((mi * cg + ci) * kernel + ky) * kernel + kx);
              s += (xv - Value(xz, 0)) * (wv - Value(wz, mi));
            }
          }
        }
        want[(mi * ohw + oy) * ohw + ox] = static_cast<int32_t>(s);
      }
    }
  }
  for (bool bytes : {true, false}) {
    BytePath path(bytes);
    OpTest t("ConvInteger", {{"x", x}, {"w", w}, {"xz", xz}, {"wz", wz}},
             {{"group", ir::Attribute::Int(group)},
              {"pads", ir::Attribute::Ints({pad, pad, pad, pad})},
              {"strides", ir::Attribute::Ints({stride, stride})}});
    for (int threads : {1, 2}) {
      t.num_threads = threads;
      EXPECT_THAT(RunOne(t).ToVector<int32_t>(), ElementsAreArray(want))
          << c << " channels, " << m << " outputs, group " << group << ", stride " << stride
          << (bytes ? ", byte path, " : ", other paths, ") << threads << " threads";
    }
  }
}

TEST(Int8DotTest, ConvIntegerOfEveryOperandTypeEqualsTheNaiveSum) {
  std::mt19937 rng(7);
  CheckConvInteger<uint8_t, int8_t>(6, 9, 10, 1, 3, rng);
  CheckConvInteger<int8_t, int8_t>(8, 5, 8, 8, 3, rng);    // depthwise
  CheckConvInteger<uint8_t, uint8_t>(5, 17, 3, 1, 1, rng);  // 289 positions: two chunks
  CheckConvInteger<int8_t, uint8_t>(4, 6, 6, 2, 3, rng);
  CheckConvInteger<uint8_t, int8_t>(3, 4, 130, 1, 1, rng);  // three blocks of channels
  CheckConvInteger<int8_t, uint8_t>(8, 7, 6, 2, 3, rng);    // row-wise layout, i8 x, groups
  // The row-wise layout's vector paths: stride-2 rows of four channels
  // together (8-wide outputs, a tail), two blocks of output channels laid
  // out once on one thread and split between tasks on two.
  CheckConvInteger<uint8_t, int8_t>(8, 15, 70, 1, 3, rng, 2);
  // 7- and 20-wide rows at stride 1 (a vector and a tail), three blocks.
  CheckConvInteger<int8_t, int8_t>(4, 7, 130, 1, 3, rng);
  CheckConvInteger<uint8_t, uint8_t>(12, 20, 9, 1, 3, rng);
  // A strided 1x1 (row-wise) and a pointwise one (no offset table).
  CheckConvInteger<uint8_t, int8_t>(8, 33, 8, 1, 1, rng, 2);
  CheckConvInteger<int8_t, uint8_t>(12, 20, 66, 1, 1, rng);
  // Taps whose channels are padded to four (DotConvWeights::lane_channels):
  // 3-channel stems (3 x 3 and 7 x 7 at stride 2, zero points on both
  // sides), two channels per group, and five (padded to eight).
  CheckConvInteger<uint8_t, int8_t>(3, 23, 16, 1, 3, rng, 2);
  CheckConvInteger<int8_t, uint8_t>(3, 17, 5, 1, 7, rng, 2);
  CheckConvInteger<uint8_t, uint8_t>(6, 13, 9, 3, 3, rng);
  CheckConvInteger<int8_t, int8_t>(5, 11, 20, 1, 3, rng);
}

// The requantising ops and batched matmuls give the same bytes through the
// byte path as through the others (each checked against the definition
// elsewhere): QLinearConv with per-channel i8 weights, bias and i8 output,
// 3x3 with padding, a strided, padded 1x1, a strided 3x3 into 70
// channels (two blocks) and 3-channel stems (3x3 and 7x7 at stride 2), on one
// and two threads; QLinearMatMul with per-row
// a/y parameters and per-column b; MatMulInteger with a batched B and a
// broadcast A.
// QLinearConv's requantising byte path against the other paths where the
// weights have per-channel zero points (the x' sums' term), in groups, on a
// batch of two, with u8 input, weights and output: each task's output
// channels, images and groups are offsets into y, the bias and the zero
// points, which a mix-up of would shift.
TEST(Int8DotTest, QLinearConvWithWeightZeroPointsGroupsAndBatchOnEveryPath) {
  std::mt19937 rng(14);
  int checked = 0;
  // (channels, groups, kernel, stride, output channels): pointwise, a
  // 3 x 3 in two groups of 8, a padded-channel stem in two groups of 3.
  for (const auto& [c, group, kernel, stride, m] :
       {std::tuple{16, 1, 1, 1, 70}, std::tuple{16, 2, 3, 1, 20}, std::tuple{6, 2, 3, 2, 10}}) {
    std::vector<float> ws(m);
    for (float& v : ws) v = 0.001f + static_cast<float>(rng() % 100) * 1e-4f;
    std::vector<int32_t> bias(m);
    for (int32_t& v : bias) v = static_cast<int32_t>(rng() % 20001) - 10000;
    const int64_t pad = kernel / 2;
    OpTest t("QLinearConv",
             {{"x", Bytes<uint8_t>({2, c, 13, 11}, rng)},
              {"xs", RtTensor::FromVector<float>({}, {0.02f})},
              {"xz", RtTensor::FromVector<uint8_t>({}, {121})},
              {"w", Bytes<uint8_t>({m, c / group, kernel, kernel}, rng)},
              {"ws", RtTensor::FromVector<float>({m}, ws)},
              {"wz", Bytes<uint8_t>({m}, rng)},
              {"ys", RtTensor::FromVector<float>({}, {0.3f})},
              {"yz", RtTensor::FromVector<uint8_t>({}, {97})},
              {"b", RtTensor::FromVector<int32_t>({m}, bias)}},
             {{"group", ir::Attribute::Int(group)},
              {"pads", ir::Attribute::Ints({pad, pad, pad, pad})},
              {"strides", ir::Attribute::Ints({stride, stride})}});
    std::vector<std::vector<uint8_t>> out;
    for (bool bytes : {true, false}) {
      BytePath path(bytes);
      for (int threads : {1, 2}) {
        t.num_threads = threads;
        out.push_back(RunOne(t).ToVector<uint8_t>());
      }
    }
    for (size_t i = 1; i < out.size(); ++i) {
      EXPECT_EQ(out[i], out[0]) << c << " channels, group " << group << ", kernel " << kernel
                                << ", run " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(Int8DotTest, RequantisingAndBatchedOpsGiveTheSameBytesOnEveryPath) {
  std::mt19937 rng(10);
  const auto f32 = [](std::vector<int64_t> dims, std::vector<float> v) {
    return RtTensor::FromVector<float>(dims, v);
  };
  const auto both = [](const OpTest& t) {
    std::vector<RtTensor> out;
    for (bool bytes : {true, false}) {
      BytePath path(bytes);
      out.push_back(RunOne(t));
    }
    return out;
  };
  int checked = 0;
  for (const auto& [kernel, stride, pad, m, c] :
       {std::tuple{3, 1, 1, 12, 8}, std::tuple{1, 2, 1, 12, 8}, std::tuple{3, 2, 1, 70, 8},
        std::tuple{3, 2, 1, 16, 3}, std::tuple{7, 2, 3, 16, 3}}) {
    std::vector<float> ws(m);
    for (float& v : ws) v = 0.001f + static_cast<float>(rng() % 100) * 1e-4f;
    std::vector<int32_t> bias(m);
    for (int32_t& v : bias) v = static_cast<int32_t>(rng() % 20001) - 10000;
    OpTest t("QLinearConv",
             {{"x", Bytes<int8_t>({1, c, 11, 13}, rng)},
              {"xs", f32({}, {0.02f})},
              {"xz", RtTensor::FromVector<int8_t>({}, {-3})},
              {"w", Bytes<int8_t>({m, c, kernel, kernel}, rng)},
              {"ws", f32({m}, ws)},
              {"wz", RtTensor::FromVector<int8_t>({m}, std::vector<int8_t>(m, 0))},
              {"ys", f32({}, {0.05f})},
              {"yz", RtTensor::FromVector<int8_t>({}, {7})},
              {"b", RtTensor::FromVector<int32_t>({m}, bias)}},
             {{"pads", ir::Attribute::Ints({pad, pad, pad, pad})},
              {"strides", ir::Attribute::Ints({stride, stride})}});
    const std::vector<RtTensor> y = both(t);
    EXPECT_EQ(y[0].ToVector<int8_t>(), y[1].ToVector<int8_t>()) << "QLinearConv " << kernel;
    t.num_threads = 2;
    const std::vector<RtTensor> y2 = both(t);
    EXPECT_EQ(y2[0].ToVector<int8_t>(), y[0].ToVector<int8_t>()) << "2 threads " << kernel;
    EXPECT_EQ(y2[1].ToVector<int8_t>(), y[0].ToVector<int8_t>()) << "2 threads " << kernel;
    ++checked;
  }
  {
    const int64_t m = 6, k = 21, n = 19;
    std::vector<float> as(m), ys(m), bs(n);
    for (float& v : as) v = 0.01f + static_cast<float>(rng() % 50) * 1e-3f;
    for (float& v : ys) v = 0.5f + static_cast<float>(rng() % 50) * 1e-2f;
    for (float& v : bs) v = 0.01f + static_cast<float>(rng() % 50) * 1e-3f;
    OpTest t("QLinearMatMul",
             {{"a", Bytes<uint8_t>({2, m, k}, rng)}, {"as", f32({m}, as)},
              {"az", Bytes<uint8_t>({m}, rng)}, {"b", Bytes<int8_t>({2, k, n}, rng)},
              {"bs", f32({n}, bs)}, {"bz", Bytes<int8_t>({n}, rng)},
              {"ys", f32({m}, ys)}, {"yz", Bytes<uint8_t>({m}, rng)}});
    const std::vector<RtTensor> y = both(t);
    EXPECT_EQ(y[0].ToVector<uint8_t>(), y[1].ToVector<uint8_t>()) << "QLinearMatMul";
    ++checked;
  }
  {
    OpTest t("MatMulInteger", {{"a", Bytes<uint8_t>({5, 33}, rng)},
                               {"b", Bytes<int8_t>({3, 33, 40}, rng)},
                               {"az", Bytes<uint8_t>({}, rng)},
                               {"bz", Bytes<int8_t>({40}, rng)}});
    const std::vector<RtTensor> y = both(t);
    EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{3, 5, 40}));
    EXPECT_EQ(y[0].ToVector<int32_t>(), y[1].ToVector<int32_t>()) << "MatMulInteger batched B";
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

}  // namespace
}  // namespace slimpack::runtime
