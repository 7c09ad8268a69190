// ggml_blocks decoding in the loader: the vectorised decoders (AVX2 chosen at
// run time on x86-64, NEON on arm64) against the scalar reference, bit for
// bit, for every block type on random blocks. The scalar reference itself is
// held to slimpack's IR decoder and to ggml's bytes by
// tests/shard/reader/ggml_blocks_artifact_test.cc.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/loader/dequantize.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"

namespace slimpack::loader {
namespace {

using shard::GgmlBlockType;
using testing::IsOk;

// Byte offsets of each type's f16 fields within a block (spec.md).
std::vector<int> HalfFields(uint32_t ggml_type) {
  switch (ggml_type) {
    case 3: case 7: case 12: case 13: return {0, 2};  // d, m / dmin
    case 10: return {80, 82};
    case 11: return {108};
    case 14: return {208};
    default: return {0};  // q4_0, q5_0, q8_0
  }
}

struct GgmlCase {
  const GgmlBlockType* type;
  uint64_t rows, blocks_per_row;
  bool finite;  // f16 fields finite (subnormals included); else raw bytes
};

void PrintTo(const GgmlCase& c, std::ostream* os) {
  *os << c.type->name << " " << c.rows << "x" << c.blocks_per_row << " blocks"
      << (c.finite ? "" : " raw");
}

class GgmlDequantTest : public ::testing::TestWithParam<GgmlCase> {};

TEST_P(GgmlDequantTest, VectorisedMatchesScalar) {
  if (std::string(DequantImplementation()) == "scalar") {
    GTEST_SKIP() << "this CPU has no vectorised decoder (AVX2 / NEON) to compare";
  }
  const GgmlCase& c = GetParam();
  const uint64_t blocks = c.rows * c.blocks_per_row;
  const uint64_t numel = blocks * c.type->block_size;
  std::mt19937 rng(c.type->ggml_type * 1000 + static_cast<uint32_t>(blocks) + c.finite);
  std::vector<uint8_t> bytes(blocks * c.type->block_bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  if (c.finite) {  // exponent field 31 (inf/NaN) -> 15
    for (uint64_t i = 0; i < blocks; ++i) {
      for (int off : HalfFields(c.type->ggml_type)) {
        uint8_t& high = bytes[i * c.type->block_bytes + off + 1];
        if (((high >> 2) & 31) == 31) high = static_cast<uint8_t>(high & ~0x40);
      }
    }
  }
  QuantizedTensorRef ref;
  ref.layout = shard::LayoutKind::kGgmlBlocks;
  ref.dtype = shard::DType::kU8;
  ref.shape = {c.rows, c.blocks_per_row * c.type->block_size};
  ref.axis = 1;
  ref.block_type = c.type->ggml_type;
  ref.data = bytes.data();
  ref.data_bytes = bytes.size();
  std::vector<float> best(numel, -1.0f), scalar(numel, -2.0f);
  ASSERT_THAT(DequantizeToF32(ref, best.data(), numel, DequantImpl::kBest), IsOk());
  ASSERT_THAT(DequantizeToF32(ref, scalar.data(), numel, DequantImpl::kScalar), IsOk());
  uint64_t finite = 0;
  for (uint64_t i = 0; i < numel; ++i) {
    finite += std::isfinite(scalar[i]);
    if (std::isnan(scalar[i]) && std::isnan(best[i])) continue;  // any NaN payload
    uint32_t a, b;
    std::memcpy(&a, &best[i], 4);
    std::memcpy(&b, &scalar[i], 4);
    ASSERT_EQ(a, b) << DequantImplementation() << " differs at weight " << i << " (block "
                    << i / c.type->block_size << ", weight " << i % c.type->block_size
                    << "): " << best[i] << " vs " << scalar[i];
  }
  if (c.finite) {
    EXPECT_EQ(finite, numel);
  }
}

std::vector<GgmlCase> AllCases() {
  std::vector<GgmlCase> cases;
  for (const GgmlBlockType& t : shard::kGgmlBlockTypes) {
    cases.push_back({&t, 1, 1, true});
    cases.push_back({&t, 3, 7, true});
    cases.push_back({&t, 2, 5, false});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgmlDequantTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<GgmlCase>& info) {
                           return std::string(info.param.type->name) + "_" +
                                  std::to_string(info.param.rows) + "x" +
                                  std::to_string(info.param.blocks_per_row) +
                                  (info.param.finite ? "" : "_raw");
                         });

}  // namespace
}  // namespace slimpack::loader
