// ggml block codecs against ggml's own bytes: tests/testdata/gguf holds what
// ggml-quants.c produced for the inputs that MakeInputs regenerates (README
// there), so every encoder must match byte for byte (unweighted and imatrix)
// and every decoder float for float. Then the error each type provably keeps
// (legacy types: half a step plus the f16 drift of the scale; K-quants: each
// weight decodes to the nearest level of its stored sub-block grid), and the
// argument errors.
#include "formats/gguf/ggml_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// ---------------------------------------------------------------- inputs
// Must match the generator described in tests/testdata/gguf/README.md;
// GeneratorMatchesCommittedInputs checks it against input.f32.bin.

constexpr int kN = 2048;     // 8 super-blocks of 256
constexpr int kRows = 4;     // the imatrix goldens quantize 4 rows of 512
constexpr int kCols = 512;

struct SplitMix64 {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float Uniform() { return static_cast<float>(Next() >> 40) * 0x1p-24f; }
  // Irwin-Hall(4) scaled to unit variance: adds then one multiply, so no
  // compiler can fuse it differently from the C driver.
  float Gauss() {
    const float a = Uniform(), b = Uniform(), c = Uniform(), d = Uniform();
    return (a + b + c + d - 2.0f) * 1.7320508f;
  }
};

std::vector<float> MakeInputs() {
  static const float kLadder[16] = {0.001f, 0.002f, 0.005f, 0.01f, 0.02f, 0.05f, 0.1f, 0.2f,
                                    0.5f,   1.0f,   2.0f,   5.0f,  10.0f, 0.3f,  3.0f, 0.03f};
  SplitMix64 rng{0x5EED};
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) {
    const float g = rng.Gauss();
    const float u = rng.Uniform();
    float v = g;
    switch (i / 256) {
      case 0: break;                                      // gaussian
      case 1: if (i % 37 == 5) v = g * 20.0f; break;      // outliers
      case 2:                                             // one kind per 32 block
        switch ((i / 32) % 8) {
          case 0: v = 0.0f; break;
          case 1: v = 0.75f; break;
          case 2: v = -3.0f; break;
          case 3: v = -std::fabs(g) - 0.25f; break;
          case 4: v = std::fabs(g) + 1.0f; break;
          case 5: v = g * 1e-6f; break;
          case 6: v = g * 1e-40f; break;                  // subnormal
          case 7: v = g * 1e4f; break;
        }
        break;
      case 3: v = 0.0f; break;                            // all-zero super-block
      case 4: v = g * kLadder[(i / 16) % 16]; break;      // sub-block scales 1e-3..10
      case 5: v = -std::fabs(g) * 0.5f; break;            // negative only
      case 6: v = g * 1e-5f; break;                       // f16-subnormal scales
      case 7:                                             // quarter grid (ties) + outlier
        v = i % 256 == 100 ? 100.0f : static_cast<float>(static_cast<int>(u * 17.0f) - 8) * 0.25f;
        break;
    }
    x[i] = v;
  }
  return x;
}

std::vector<float> MakeImportance() {
  SplitMix64 rng{0x1A7A};
  std::vector<float> imp(kCols);
  for (int j = 0; j < kCols; ++j) {
    const float u = rng.Uniform();
    imp[j] = j % 97 == 3 ? 0.0f : (u + 0.001f) * (u + 0.001f) * 1000.0f;
  }
  return imp;
}

// ---------------------------------------------------------------- files

std::vector<uint8_t> ReadGolden(const std::string& name) {
  std::ifstream in(std::string(SLIMPACK_GGUF_TESTDATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<float> ReadGoldenFloats(const std::string& name) {
  const std::vector<uint8_t> bytes = ReadGolden(name);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::vector<uint8_t> AsBytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Compares encodings block by block so a failure names the block.
void ExpectSameBlocks(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                      int block_bytes, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t b = 0; b < got.size(); b += block_bytes) {
    if (std::memcmp(got.data() + b, want.data() + b, block_bytes) != 0) {
      ADD_FAILURE() << what << ": block " << b / block_bytes << " differs from ggml's";
      return;
    }
  }
}

// ---------------------------------------------------------------- goldens

struct Case {
  TensorType type;
  const char* name;  // ggml's type name, the golden file stem
  bool weighted;     // ggml has an imatrix path for it
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const Case kQuantCases[] = {
    {TensorType::kQ8_0, "q8_0", false}, {TensorType::kQ4_0, "q4_0", true},
    {TensorType::kQ4_1, "q4_1", true},  {TensorType::kQ5_0, "q5_0", true},
    {TensorType::kQ5_1, "q5_1", true},  {TensorType::kQ2_K, "q2_K", true},
    {TensorType::kQ3_K, "q3_K", true},  {TensorType::kQ4_K, "q4_K", true},
    {TensorType::kQ5_K, "q5_K", true},  {TensorType::kQ6_K, "q6_K", true},
};

class GgmlBlocksGoldenTest : public ::testing::TestWithParam<Case> {
 protected:
  int BlockBytes() const {
    TypeTraits t{};
    GetTypeTraits(static_cast<uint32_t>(GetParam().type), &t);
    return static_cast<int>(t.block_bytes);
  }
};

TEST(GgmlBlocksTest, GeneratorMatchesCommittedInputs) {
  EXPECT_EQ(AsBytes(MakeInputs()), ReadGolden("input.f32.bin"));
  EXPECT_EQ(AsBytes(MakeImportance()), ReadGolden("importance.f32.bin"));
}

TEST_P(GgmlBlocksGoldenTest, UnweightedEncodingIsGgmlsRef) {
  const Case& c = GetParam();
  const std::vector<float> x = MakeInputs();
  std::vector<uint8_t> got(RowBytes(c.type, kN));
  ASSERT_THAT(QuantizeRow(c.type, x.data(), kN, nullptr, got.data()), IsOk());
  ExpectSameBlocks(got, ReadGolden(std::string(c.name) + ".ref.bin"), BlockBytes(), c.name);
}

TEST_P(GgmlBlocksGoldenTest, ImatrixEncodingIsGgmls) {
  const Case& c = GetParam();
  const std::vector<float> x = MakeInputs();
  const std::vector<float> imp = MakeImportance();
  const int64_t row_bytes = RowBytes(c.type, kCols);
  std::vector<uint8_t> got(row_bytes * kRows);
  for (int r = 0; r < kRows; ++r) {
    ASSERT_THAT(QuantizeRow(c.type, x.data() + r * kCols, kCols, imp.data(),
                            got.data() + r * row_bytes),
                IsOk());
  }
  // Q8_0 has no imatrix path in ggml: importance changes nothing.
  const std::string golden = std::string(c.name) + (c.weighted ? ".imatrix.bin" : ".ref.bin");
  ExpectSameBlocks(got, ReadGolden(golden), BlockBytes(), golden);
}

TEST_P(GgmlBlocksGoldenTest, DecodingIsGgmls) {
  const Case& c = GetParam();
  const std::vector<uint8_t> bytes = ReadGolden(std::string(c.name) + ".ref.bin");
  const std::vector<float> want = ReadGoldenFloats(std::string(c.name) + ".dequant.bin");
  std::vector<float> got(kN);
  ASSERT_THAT(DequantizeRow(c.type, bytes.data(), kN, got.data()), IsOk());
  ASSERT_EQ(want.size(), got.size());
  for (int i = 0; i < kN; ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    ASSERT_EQ(g, w) << c.name << " weight " << i << ": " << got[i] << " vs ggml " << want[i];
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgmlBlocksGoldenTest, ::testing::ValuesIn(kQuantCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GgmlBlocksTest, FloatTypesMatchGgmlConversions) {
  const std::vector<float> x = MakeInputs();
  for (auto [type, file] : {std::pair{TensorType::kF16, "f16.bin"},
                            std::pair{TensorType::kBF16, "bf16.bin"}}) {
    std::vector<uint8_t> bytes(RowBytes(type, kN));
    ASSERT_THAT(QuantizeRow(type, x.data(), kN, nullptr, bytes.data()), IsOk());
    EXPECT_EQ(bytes, ReadGolden(file)) << file;
    // Decoding is exact, so re-encoding the decoded row gives the same bytes.
    std::vector<float> back(kN);
    ASSERT_THAT(DequantizeRow(type, bytes.data(), kN, back.data()), IsOk());
    std::vector<uint8_t> again(bytes.size());
    ASSERT_THAT(QuantizeRow(type, back.data(), kN, nullptr, again.data()), IsOk());
    EXPECT_EQ(again, bytes) << file;
  }
  std::vector<uint8_t> f32(RowBytes(TensorType::kF32, kN));
  ASSERT_THAT(QuantizeRow(TensorType::kF32, x.data(), kN, nullptr, f32.data()), IsOk());
  EXPECT_EQ(f32, AsBytes(x));
}

// ---------------------------------------------------------------- bounds

float F16At(const uint8_t* p) { return ir::F16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// Legacy types: codes are x/d rounded with the f32 step d, then decoded with
// the stored f16 step d'. So |x - x̂| <= |d|/2 + |q|*|d - d'| (+ |min - m'|
// for the affine types), where a symmetric type's top code is clamped (the
// extreme opposite to the block's signed max sits one full step away) and
// |q| <= 2^(bits-1) (symmetric) or 2^bits - 1 (affine). Slack covers f32
// rounding in x*(1/d).
TEST(GgmlBlocksTest, LegacyTypesKeepHalfAStepPlusScaleRounding) {
  struct Legacy {
    TensorType type;
    int bits;
    bool affine;
    int block_bytes;
  };
  const std::vector<float> x = MakeInputs();
  for (const Legacy& t : {Legacy{TensorType::kQ8_0, 8, false, 34},
                          Legacy{TensorType::kQ4_0, 4, false, 18},
                          Legacy{TensorType::kQ5_0, 5, false, 22},
                          Legacy{TensorType::kQ4_1, 4, true, 20},
                          Legacy{TensorType::kQ5_1, 5, true, 24}}) {
    std::vector<uint8_t> bytes(RowBytes(t.type, kN));
    std::vector<float> y(kN);
    ASSERT_THAT(QuantizeRow(t.type, x.data(), kN, nullptr, bytes.data()), IsOk());
    ASSERT_THAT(DequantizeRow(t.type, bytes.data(), kN, y.data()), IsOk());
    for (int b = 0; b < kN / 32; ++b) {
      const float* xb = &x[32 * b];
      const uint8_t* block = &bytes[b * t.block_bytes];
      const float mn = *std::min_element(xb, xb + 32), mx = *std::max_element(xb, xb + 32);
      float amax = 0, signed_max = 0;  // ggml's: the first weight of largest magnitude
      for (int j = 0; j < 32; ++j) {
        if (std::fabs(xb[j]) > amax) {
          amax = std::fabs(xb[j]);
          signed_max = xb[j];
        }
      }
      double d, max_code, offset_err = 0;
      if (t.type == TensorType::kQ8_0) {
        d = amax / 127.0f;
        max_code = 127;
      } else if (!t.affine) {
        d = std::fabs(signed_max / static_cast<float>(-(1 << (t.bits - 1))));
        max_code = 1 << (t.bits - 1);
      } else {
        d = (mx - mn) / static_cast<float>((1 << t.bits) - 1);
        max_code = (1 << t.bits) - 1;
        offset_err = std::fabs(static_cast<double>(mn) - F16At(block + 2));
      }
      const double drift = max_code * std::fabs(d - std::fabs(F16At(block)));
      const double slack = 1e-5 * (d + amax);
      for (int j = 0; j < 32; ++j) {
        // Only a symmetric 4/5-bit type clamps, and only past +max_code - 0.5.
        const bool clamped = !t.affine && t.bits < 8 && d > 0 &&
                             xb[j] / (signed_max / -(1 << (t.bits - 1))) > max_code - 0.5;
        const double bound = (clamped ? d : d / 2) + drift + offset_err + slack;
        ASSERT_LE(std::fabs(static_cast<double>(xb[j]) - y[32 * b + j]), bound)
            << "type " << static_cast<int>(t.type) << " block " << b << " weight " << j;
      }
    }
  }
}

// quantize_row_q8_0_ref rounds x*id with roundf: ties away from zero. With
// amax 127 the scale is 1 and every x below is its own x*id, so each tie
// (and each value a hair either side of one) must give roundf's code; a
// block whose scale is subnormal (id Inf) takes the cast path and must
// give ggml's bytes too.
TEST(GgmlBlocksTest, Q8_0RoundsTiesAwayFromZeroAsRoundf) {
  std::vector<float> x(64);
  const float ties[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f,
                        std::nextafter(0.5f, 0.f), std::nextafter(-0.5f, 0.f),
                        std::nextafter(2.5f, 3.f), std::nextafter(-2.5f, -3.f),
                        0.f, -0.f, 3.f, -3.f, 0.49999997f, -0.49999997f};
  x[0] = 127;
  for (size_t j = 0; j < std::size(ties); ++j) x[1 + j] = ties[j];
  // d = amax/127 a nonzero subnormal below 2^-128, so id = 1/d is Inf and
  // the block takes std::round's path (codes of Inf*x cast as ggml does).
  for (int j = 32; j < 64; ++j) x[j] = (j % 2 ? 1e-40f : -1e-40f) * static_cast<float>(1 + j % 7);
  std::vector<uint8_t> bytes(RowBytes(TensorType::kQ8_0, 64));
  ASSERT_THAT(QuantizeRow(TensorType::kQ8_0, x.data(), 64, nullptr, bytes.data()), IsOk());
  for (int j = 0; j < 32; ++j) {
    const int expected = static_cast<int>(std::round(x[j]));
    EXPECT_EQ(static_cast<int8_t>(bytes[2 + j]), expected) << "x = " << x[j];
  }
  // Second block: ggml's cast of roundf(x*id) keeps the low byte of
  // INT32_MIN (0) for out-of-range values.
  float amax = 0;
  for (int j = 32; j < 64; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
  ASSERT_GT(d, 0.0f);
  ASSERT_TRUE(std::isinf(id)) << "the block must exercise the Inf-id path";
  for (int j = 0; j < 32; ++j) {
    const float v = std::round(x[32 + j] * id);
    const int32_t cast = v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int32_t>(v)
                                                                     : INT32_MIN;
    EXPECT_EQ(bytes[34 + 2 + j], static_cast<uint8_t>(cast)) << "weight " << 32 + j;
  }
}

// One sub-block's stored grid: weight = step*q - offset, q in [q_lo, q_hi].
struct Grid {
  float step, offset;
  int q_lo, q_hi;
};

// Reads sub-block j's grid from a K-quant super-block (ggml-common.h
// layouts, restated here independently of the encoder).
Grid KGrid(TensorType type, const uint8_t* b, int j) {
  switch (type) {
    case TensorType::kQ2_K:
      return {F16At(b + 80) * (b[j] & 0xF), F16At(b + 82) * (b[j] >> 4), 0, 3};
    case TensorType::kQ3_K: {
      const int low = j < 8 ? b[96 + j] & 0xF : b[96 + j - 8] >> 4;
      const int high = (b[96 + 8 + j % 4] >> (2 * (j / 4))) & 3;
      return {F16At(b + 108) * ((low | high << 4) - 32), 0, -4, 3};
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {
      const uint8_t* s = b + 4;
      const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
      const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      return {F16At(b) * sc, F16At(b + 2) * m, 0, type == TensorType::kQ4_K ? 15 : 31};
    }
    default:  // kQ6_K
      return {F16At(b + 208) * static_cast<int8_t>(b[192 + j]), 0, -32, 31};
  }
}

// Every K-quant encoder ends by re-rounding each weight against the scales
// it stored, so where a sub-block's step is non-zero each weight decodes to
// the nearest level of that grid (clamped weights to the nearest end).
// Sub-blocks whose step rounded to zero keep the search's codes and decode
// to -offset; nothing is promised there.
TEST(GgmlBlocksTest, KQuantsDecodeToTheNearestStoredLevel) {
  const std::vector<float> x = MakeInputs();
  const std::vector<float> imp = MakeImportance();
  for (TensorType type : {TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
                          TensorType::kQ5_K, TensorType::kQ6_K}) {
    const int sub = type == TensorType::kQ4_K || type == TensorType::kQ5_K ? 32 : 16;
    for (const float* importance : {static_cast<const float*>(nullptr), imp.data()}) {
      const int64_t row_bytes = RowBytes(type, kCols);
      std::vector<uint8_t> bytes(row_bytes * kRows);
      std::vector<float> y(kN);
      for (int r = 0; r < kRows; ++r) {
        ASSERT_THAT(QuantizeRow(type, &x[r * kCols], kCols, importance, &bytes[r * row_bytes]),
                    IsOk());
      }
      ASSERT_THAT(DequantizeRow(type, bytes.data(), kN, y.data()), IsOk());
      const int block_bytes = static_cast<int>(RowBytes(type, 256));
      for (int i = 0; i < kN; ++i) {
        const Grid g = KGrid(type, &bytes[(i / 256) * block_bytes], (i % 256) / sub);
        if (g.step == 0) continue;
        double nearest = std::numeric_limits<double>::infinity();
        for (int q = g.q_lo; q <= g.q_hi; ++q) {
          nearest = std::min(nearest, std::fabs(static_cast<double>(x[i]) -
                                                (static_cast<double>(g.step) * q - g.offset)));
        }
        ASSERT_LE(std::fabs(static_cast<double>(x[i]) - y[i]),
                  nearest + 1e-4 * std::fabs(g.step))
            << "type " << static_cast<int>(type) << (importance ? " imatrix" : "")
            << " weight " << i;
      }
    }
  }
}

// ---------------------------------------------------------------- errors

// The K encoders search 16 super-blocks per batch: a row of 40 (two whole
// batches and a partial one) must give, block for block, what each
// super-block encoded alone gives (which the golden tests pin to ggml's),
// with and without importance.
TEST(GgmlBlocksTest, KTypesAcrossBatchBoundariesEqualBlockByBlock) {
  const std::vector<float> base = MakeInputs();
  // 41: a partial last batch at every lane width (64 lanes on AVX-512).
  constexpr int64_t kBlocks = 41, kSuper = 256;
  std::vector<float> x(kBlocks * kSuper), imp(kBlocks * kSuper);
  for (int64_t i = 0; i < kBlocks * kSuper; ++i) {
    // Tiled with a different scale per block, so no two blocks are alike.
    x[i] = base[i % base.size()] * (1.0f + 0.01f * static_cast<float>(i / kSuper));
    imp[i] = 0.25f + static_cast<float>((i * 7) % 13);
  }
  for (TensorType type : {TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
                          TensorType::kQ5_K, TensorType::kQ6_K}) {
    for (bool weighted : {false, true}) {
      const int64_t block_bytes = RowBytes(type, kSuper);
      std::vector<uint8_t> row(block_bytes * kBlocks), alone(block_bytes * kBlocks);
      ASSERT_THAT(QuantizeRow(type, x.data(), kBlocks * kSuper, weighted ? imp.data() : nullptr,
                              row.data()),
                  IsOk());
      for (int64_t b = 0; b < kBlocks; ++b) {
        ASSERT_THAT(QuantizeRow(type, x.data() + b * kSuper, kSuper,
                                weighted ? imp.data() + b * kSuper : nullptr,
                                alone.data() + b * block_bytes),
                    IsOk());
      }
      EXPECT_EQ(row, alone) << static_cast<int>(type) << (weighted ? " with importance" : "");
    }
  }
}

// QuantizeRows hands a K type's rows to the searches together: the bytes
// must be one QuantizeRow call's per row, for every type, with and without
// importance (one value per column, the same for every row), and an error
// must name the row as the one-row call names the index.
TEST(GgmlBlocksTest, QuantizeRowsEqualsOneCallPerRow) {
  const std::vector<float> base = MakeInputs();
  constexpr int64_t kManyRows = 7, kRowCols = 512;
  std::vector<float> x(kManyRows * kRowCols);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = base[(i * 5) % base.size()] * (1.0f + 0.1f * static_cast<float>(i / kRowCols));
  }
  const std::vector<float> imp = MakeImportance();
  ASSERT_EQ(imp.size(), static_cast<size_t>(kRowCols));
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                          TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                          TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ2_K,
                          TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                          TensorType::kQ6_K}) {
    for (bool weighted : {false, true}) {
      const float* w = weighted ? imp.data() : nullptr;
      const int64_t row_bytes = RowBytes(type, kRowCols);
      std::vector<uint8_t> together(row_bytes * kManyRows, 0xAA), alone(together.size(), 0x55);
      ASSERT_THAT(QuantizeRows(type, x.data(), kManyRows, kRowCols, w, together.data()), IsOk());
      for (int64_t r = 0; r < kManyRows; ++r) {
        ASSERT_THAT(QuantizeRow(type, x.data() + r * kRowCols, kRowCols, w,
                                alone.data() + r * row_bytes),
                    IsOk());
      }
      EXPECT_EQ(together, alone) << static_cast<int>(type) << (weighted ? " with importance" : "");
    }
  }
  std::vector<float> bad = x;
  bad[3 * kRowCols + 7] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> out(RowBytes(TensorType::kQ4_K, kRowCols) * kManyRows);
  EXPECT_THAT(QuantizeRows(TensorType::kQ4_K, bad.data(), kManyRows, kRowCols, nullptr,
                           out.data(), 100),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("row 103: "), HasSubstr("src[7] is inf"))));
  std::vector<float> bad_imp = imp;
  bad_imp[11] = -2.0f;
  EXPECT_THAT(QuantizeRows(TensorType::kQ6_K, x.data(), kManyRows, kRowCols, bad_imp.data(),
                           out.data()),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("row 0: "), HasSubstr("importance[11] is -2"))));
}

TEST(GgmlBlocksTest, RowBytes) {
  EXPECT_EQ(RowBytes(TensorType::kQ4_K, 512), 288);
  EXPECT_EQ(RowBytes(TensorType::kQ8_0, 64), 68);
  EXPECT_EQ(RowBytes(TensorType::kBF16, 3), 6);
  EXPECT_EQ(RowBytes(TensorType::kQ4_K, 0), 0);
  EXPECT_EQ(RowBytes(TensorType::kQ4_K, 100), -1);
  EXPECT_EQ(RowBytes(TensorType::kQ4_0, -32), -1);
  EXPECT_EQ(RowBytes(static_cast<TensorType>(5), 32), -1);
  EXPECT_EQ(RowBytes(TensorType::kF32, int64_t{1} << 62), -1);  // bytes overflow
}

TEST(GgmlBlocksTest, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> out(1024);
  EXPECT_THAT(QuantizeRow(TensorType::kQ4_K, x.data(), 300, nullptr, out.data()),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("q4_K"), HasSubstr("n = 300"), HasSubstr("256"))));
  EXPECT_THAT(DequantizeRow(TensorType::kQ8_0, out.data(), 40, x.data()),
              StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("n = 40"), HasSubstr("32"))));
  EXPECT_THAT(QuantizeRow(TensorType::kQ4_0, x.data(), -32, nullptr, out.data()),
              StatusIs(Code::kInvalidArgument, HasSubstr("n = -32")));
}

TEST(GgmlBlocksTest, RefusesUnknownTypes) {
  std::vector<float> x(32, 1.0f);
  std::vector<uint8_t> out(64);
  EXPECT_THAT(QuantizeRow(static_cast<TensorType>(5), x.data(), 32, nullptr, out.data()),
              StatusIs(Code::kUnimplemented,
                       AllOf(HasSubstr("type 5"), HasSubstr("supported"), HasSubstr("q6_K"))));
  EXPECT_THAT(DequantizeRow(static_cast<TensorType>(16), out.data(), 32, x.data()),
              StatusIs(Code::kUnimplemented, HasSubstr("type 16")));
}

TEST(GgmlBlocksTest, RefusesNonFiniteWeightsAndBadImportance) {
  std::vector<float> x(256, 0.5f), imp(256, 1.0f);
  std::vector<uint8_t> out(RowBytes(TensorType::kQ4_K, 256));
  x[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(QuantizeRow(TensorType::kQ4_K, x.data(), 256, nullptr, out.data()),
              StatusIs(Code::kInvalidArgument, AllOf(HasSubstr("src[7]"), HasSubstr("nan"))));
  x[7] = 0.5f;
  imp[9] = -1.0f;
  EXPECT_THAT(QuantizeRow(TensorType::kQ4_K, x.data(), 256, imp.data(), out.data()),
              StatusIs(Code::kInvalidArgument, HasSubstr("importance[9] is -1")));
  // Q8_0 and the float types ignore importance, so they do not check it.
  std::vector<uint8_t> q8(RowBytes(TensorType::kQ8_0, 256));
  EXPECT_THAT(QuantizeRow(TensorType::kQ8_0, x.data(), 256, imp.data(), q8.data()), IsOk());
  // Float types store NaN as NaN.
  x[7] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> f16(RowBytes(TensorType::kF16, 256));
  EXPECT_THAT(QuantizeRow(TensorType::kF16, x.data(), 256, nullptr, f16.data()), IsOk());
}

}  // namespace
}  // namespace slimpack::gguf
