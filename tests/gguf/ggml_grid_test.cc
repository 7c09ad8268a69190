// BlockGrids / SetBlockCodes against the block codecs: the grid read from a
// block decodes every code to what DequantizeRow decodes, and writing back
// the codes ggml's encoder chose (the nearest code to each decoded weight)
// reproduces the encoder's bytes, so the packing is ggml's for every type.
#include "formats/gguf/ggml_grid.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf/ggml_blocks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

const TensorType kTypes[] = {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                             TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K,
                             TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                             TensorType::kQ6_K};

std::string Name(TensorType t) {
  TypeTraits traits{};
  GetTypeTraits(static_cast<uint32_t>(t), &traits);
  return std::string(traits.name);
}

std::vector<float> Gaussian(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = g(rng) * 0.02f + 0.003f;  // weight-like, slightly off centre
  return v;
}

float Decode(const WeightGrid& g, int q) { return g.scale * static_cast<float>(q - g.zero) + g.offset; }

class GridTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(GridTest, EncodedBlocksRoundTripThroughTheirGrid) {
  const TensorType type = GetParam();
  const int n = 512, bs = static_cast<int>(BlockSize(type));
  const int64_t block_bytes = RowBytes(type, bs);
  for (bool weighted : {false, true}) {
    SCOPED_TRACE(Name(type) + (weighted ? " with importance" : ""));
    const std::vector<float> x = Gaussian(n, 7);
    std::vector<float> importance(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) importance[i] = 0.5f + static_cast<float>(i % 7);
    std::vector<uint8_t> bytes(static_cast<size_t>(RowBytes(type, n)));
    ASSERT_THAT(QuantizeRow(type, x.data(), n, weighted ? importance.data() : nullptr,
                            bytes.data()),
                IsOk());
    std::vector<float> decoded(static_cast<size_t>(n));
    ASSERT_THAT(DequantizeRow(type, bytes.data(), n, decoded.data()), IsOk());
    for (int b = 0; b < n / bs; ++b) {
      uint8_t* block = bytes.data() + b * block_bytes;
      std::vector<WeightGrid> grids(static_cast<size_t>(bs));
      ASSERT_THAT(BlockGrids(type, block, grids.data()), IsOk());
      std::vector<uint8_t> codes(static_cast<size_t>(bs));
      bool all_scaled = true;
      for (int j = 0; j < bs; ++j) {
        const WeightGrid& g = grids[j];
        const float want = decoded[b * bs + j];
        codes[j] = static_cast<uint8_t>(NearestCode(g, want));
        // The grid's formula reaches ggml's decoded value to float rounding.
        EXPECT_NEAR(Decode(g, codes[j]), want, 1e-6f * std::fabs(want) + 1e-12f)
            << "block " << b << " weight " << j;
        all_scaled = all_scaled && g.scale != 0;
      }
      std::vector<uint8_t> rewritten(block, block + block_bytes);
      ASSERT_THAT(SetBlockCodes(type, codes.data(), rewritten.data()), IsOk());
      std::vector<float> again(static_cast<size_t>(bs));
      ASSERT_THAT(DequantizeRow(type, rewritten.data(), bs, again.data()), IsOk());
      for (int j = 0; j < bs; ++j) ASSERT_EQ(again[j], decoded[b * bs + j]) << "weight " << j;
      // A sub-block whose scale is 0 keeps whatever codes the search left,
      // which decode alike; elsewhere the bytes are the encoder's own.
      if (all_scaled) {
        EXPECT_EQ(rewritten, std::vector<uint8_t>(block, block + block_bytes)) << "block " << b;
      }
    }
  }
}

TEST_P(GridTest, EveryCodeLandsWhereTheGridSays) {
  const TensorType type = GetParam();
  const int bs = static_cast<int>(BlockSize(type));
  const std::vector<float> x = Gaussian(bs, 11);
  std::vector<uint8_t> block(static_cast<size_t>(RowBytes(type, bs)));
  ASSERT_THAT(QuantizeRow(type, x.data(), bs, nullptr, block.data()), IsOk());
  std::vector<WeightGrid> grids(static_cast<size_t>(bs));
  ASSERT_THAT(BlockGrids(type, block.data(), grids.data()), IsOk());
  std::mt19937 rng(3);
  for (int round = 0; round < 8; ++round) {
    std::vector<uint8_t> codes(static_cast<size_t>(bs));
    for (int j = 0; j < bs; ++j) {
      // Extremes first (every high bit set / clear), then random codes.
      codes[j] = static_cast<uint8_t>(
          round == 0   ? grids[j].qmax
          : round == 1 ? grids[j].qmin
                       : grids[j].qmin + static_cast<int>(rng() % (grids[j].qmax - grids[j].qmin + 1)));
    }
    ASSERT_THAT(SetBlockCodes(type, codes.data(), block.data()), IsOk());
    std::vector<float> got(static_cast<size_t>(bs));
    ASSERT_THAT(DequantizeRow(type, block.data(), bs, got.data()), IsOk());
    for (int j = 0; j < bs; ++j) {
      const float want = Decode(grids[j], codes[j]);
      ASSERT_NEAR(got[j], want, 1e-6f * std::fabs(want) + 1e-12f)
          << Name(type) << " round " << round << " weight " << j << " code " << int(codes[j]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllBlockTypes, GridTest, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return Name(info.param); });

TEST(GridTest, NearestCodeRoundsAndClamps) {
  const WeightGrid g{0.5f, -1.f, 8, 0, 15};  // values 0.5 * (q - 8) - 1
  EXPECT_EQ(NearestCode(g, -1.f), 8);
  EXPECT_EQ(NearestCode(g, -0.74f), 9);   // 0.52 steps above code 8
  EXPECT_EQ(NearestCode(g, 100.f), 15);
  EXPECT_EQ(NearestCode(g, -100.f), 0);
  EXPECT_EQ(NearestCode(WeightGrid{0.f, 0.f, 4, 0, 7}, 3.f), 0);  // no scale: every code alike
  const WeightGrid negative{-0.25f, 0.f, 32, 0, 63};  // q6_K/q3_K scales can be negative
  EXPECT_EQ(NearestCode(negative, 0.5f), 30);
}

TEST(GridTest, RefusesFloatTypesAndCodesOutOfRange) {
  uint8_t block[34] = {};
  WeightGrid grids[32];
  EXPECT_THAT(BlockGrids(TensorType::kF16, block, grids),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("f16")));
  uint8_t codes[32] = {};
  codes[5] = 16;  // q4_0 codes are 0..15
  EXPECT_THAT(SetBlockCodes(TensorType::kQ4_0, codes, block),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("code 16 at index 5")));
  codes[5] = 0;  // q8_0's code 0 would be -128, which ggml never writes
  EXPECT_THAT(SetBlockCodes(TensorType::kQ8_0, codes, block),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("index 0 is outside [1, 255]")));
}

}  // namespace
}  // namespace slimpack::gguf
