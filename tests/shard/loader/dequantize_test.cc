// Dequantization: the scalar reference against hand-computed values and an
// independent per-element implementation, and the vectorised kernels (AVX2 /
// NEON) against the scalar reference, bit for bit, over shapes that hit
// every tail, odd nibble start and group remainder.
#include "formats/shard/loader/dequantize.h"

#include <cstring>
#include <random>
#include <vector>

#include "formats/shard/loader/artifact.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using shard::DType;
using shard::LayoutKind;
using testing::IsOk;
using testing::StatusIs;

TEST(DequantizeTest, Int8PerChannelHandValues) {
  // [2, 3], axis 0: row 0 scale 0.5 zp 1, row 1 scale 2 zp -2.
  const int8_t q[] = {3, 1, -1, 0, -2, 5};
  const float scale[] = {0.5f, 2.0f};
  const int8_t zp[] = {1, -2};
  QuantizedTensorRef ref;
  ref.layout = LayoutKind::kInt8PerChannel;
  ref.dtype = DType::kI8;
  ref.shape = {2, 3};
  ref.axis = 0;
  ref.data = q;
  ref.data_bytes = 6;
  ref.scale = scale;
  ref.scale_count = 2;
  ref.zero_point = zp;
  ref.zero_point_bytes = 2;
  float out[6];
  ASSERT_THAT(DequantizeToF32(ref, out, 6), IsOk());
  EXPECT_THAT(out, ElementsAre(1.0f, 0.0f, -1.0f, 4.0f, 0.0f, 14.0f));
  // Axis 1: per column.
  const float col_scale[] = {1.0f, 10.0f, 100.0f};
  ref.axis = 1;
  ref.scale = col_scale;
  ref.scale_count = 3;
  ref.zero_point = nullptr;
  ASSERT_THAT(DequantizeToF32(ref, out, 6), IsOk());
  EXPECT_THAT(out, ElementsAre(3.0f, 10.0f, -100.0f, 0.0f, -20.0f, 500.0f));
}

TEST(DequantizeTest, Int4LowNibbleFirstAndSignExtension) {
  // Bytes 0x21, 0xF8: elements 1, 2, -8, -1 as i4; 1, 2, 8, 15 as u4.
  const uint8_t q[] = {0x21, 0xF8};
  const float scale[] = {1.0f};
  QuantizedTensorRef ref;
  ref.layout = LayoutKind::kInt4GroupWise;
  ref.dtype = DType::kI4;
  ref.shape = {4};
  ref.axis = 0;
  ref.group_size = 4;
  ref.data = q;
  ref.data_bytes = 2;
  ref.scale = scale;
  ref.scale_count = 1;
  float out[4];
  ASSERT_THAT(DequantizeToF32(ref, out, 4), IsOk());
  EXPECT_THAT(out, ElementsAre(1.0f, 2.0f, -8.0f, -1.0f));
  ref.dtype = DType::kU4;
  const uint8_t zp[] = {0x08};  // zero point 8 (low nibble)
  ref.zero_point = zp;
  ref.zero_point_bytes = 1;
  ASSERT_THAT(DequantizeToF32(ref, out, 4), IsOk());
  EXPECT_THAT(out, ElementsAre(-7.0f, -6.0f, 0.0f, 7.0f));
}

TEST(DequantizeTest, PlainConversions) {
  const uint16_t half[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00};
  QuantizedTensorRef ref;
  ref.dtype = DType::kF16;
  ref.shape = {5};
  ref.data = half;
  ref.data_bytes = 10;
  float out[5];
  ASSERT_THAT(DequantizeToF32(ref, out, 5), IsOk());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 65504.0f);
  EXPECT_EQ(out[3], 5.9604644775390625e-8f);  // 2^-24, smallest subnormal
  EXPECT_TRUE(std::isinf(out[4]));
  EXPECT_EQ(BFloat16ToFloat(0x3FC0), 1.5f);
  ref.dtype = DType::kI32;
  ref.data_bytes = 20;
  EXPECT_THAT(DequantizeToF32(ref, out, 5),
              StatusIs(StatusCode::kUnimplemented, HasSubstr("plain i32")));
}

TEST(DequantizeTest, RejectsInconsistentSizes) {
  const int8_t q[6] = {};
  const float scale[2] = {1, 1};
  QuantizedTensorRef ref;
  ref.layout = LayoutKind::kInt8PerChannel;
  ref.dtype = DType::kI8;
  ref.shape = {2, 3};
  ref.axis = 0;
  ref.data = q;
  ref.data_bytes = 6;
  ref.scale = scale;
  ref.scale_count = 2;
  float out[6];
  EXPECT_THAT(DequantizeToF32(ref, out, 5),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("output (elements) has 5, expected 6")));
  ref.data_bytes = 5;
  EXPECT_THAT(DequantizeToF32(ref, out, 6),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("data has 5 bytes, expected 6")));
  ref.data_bytes = 6;
  ref.scale_count = 3;
  EXPECT_THAT(DequantizeToF32(ref, out, 6),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("scale (elements) has 3, expected 2")));
  ref.scale_count = 2;
  ref.axis = 2;
  EXPECT_THAT(DequantizeToF32(ref, out, 6),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("axis 2 out of range")));
}

// Independent reference: element by element through the multi-index, as
// spec.md words it, without the [outer, axis, inner] blocking.
std::vector<float> NaiveDequant(const QuantizedTensorRef& ref) {
  const bool four = ref.dtype == DType::kI4 || ref.dtype == DType::kU4;
  const bool is_signed = ref.dtype == DType::kI4 || ref.dtype == DType::kI8;
  auto element = [&](const void* p, uint64_t k) -> int32_t {
    const auto* b = static_cast<const uint8_t*>(p);
    if (!four) return is_signed ? static_cast<int8_t>(b[k]) : b[k];
    int32_t v = (k % 2) ? (b[k / 2] >> 4) : (b[k / 2] & 15);
    return is_signed && v >= 8 ? v - 16 : v;
  };
  const size_t rank = ref.shape.size();
  std::vector<uint64_t> pshape = ref.shape;
  if (four) {
    pshape[ref.axis] = (ref.shape[ref.axis] + ref.group_size - 1) / ref.group_size;
  } else {
    pshape = {ref.shape[ref.axis]};
  }
  uint64_t numel = 1;
  for (uint64_t d : ref.shape) numel *= d;
  std::vector<float> out(numel);
  std::vector<uint64_t> idx(rank, 0);
  for (uint64_t k = 0; k < numel; ++k) {
    uint64_t rem = k;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % ref.shape[d];
      rem /= ref.shape[d];
    }
    uint64_t p = 0;
    if (four) {
      for (size_t d = 0; d < rank; ++d) {
        uint64_t i = d == static_cast<size_t>(ref.axis) ? idx[d] / ref.group_size : idx[d];
        p = p * pshape[d] + i;
      }
    } else {
      p = idx[ref.axis];
    }
    const int32_t zp = ref.zero_point ? element(ref.zero_point, p) : 0;
    out[k] = static_cast<float>(element(ref.data, k) - zp) * ref.scale[p];
  }
  return out;
}

struct RandomCase {
  DType dtype;
  std::vector<uint64_t> shape;
  int axis;
  uint64_t group_size;
  bool zero_point;
};

void PrintTo(const RandomCase& c, std::ostream* os) {
  *os << shard::DTypeName(c.dtype) << " [";
  for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "," : "") << c.shape[i];
  *os << "] axis " << c.axis << " group " << c.group_size
      << (c.zero_point ? " with zero point" : "");
}

class DequantizeRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(DequantizeRandomTest, VectorisedMatchesScalarAndNaive) {
  const RandomCase& c = GetParam();
  const bool four = c.dtype == DType::kI4 || c.dtype == DType::kU4;
  uint64_t numel = 1;
  for (uint64_t d : c.shape) numel *= d;
  uint64_t params = 1;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (!four) {
      params = c.shape[c.axis];
      break;
    }
    params *= d == static_cast<size_t>(c.axis)
                  ? (c.shape[d] + c.group_size - 1) / c.group_size
                  : c.shape[d];
  }
  std::mt19937 rng(static_cast<uint32_t>(numel * 31 + c.shape.size()));
  const uint64_t qbytes = four ? (numel + 1) / 2 : numel;
  const uint64_t zbytes = four ? (params + 1) / 2 : params;
  std::vector<uint8_t> q(qbytes), zp(zbytes);
  for (auto& b : q) b = static_cast<uint8_t>(rng());
  for (auto& b : zp) b = static_cast<uint8_t>(rng());
  std::vector<float> scale(params);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (auto& s : scale) s = dist(rng) * 1e-3f;

  QuantizedTensorRef ref;
  ref.layout = four ? LayoutKind::kInt4GroupWise : LayoutKind::kInt8PerChannel;
  ref.dtype = c.dtype;
  ref.shape = c.shape;
  ref.axis = c.axis;
  ref.group_size = c.group_size;
  ref.data = q.data();
  ref.data_bytes = qbytes;
  ref.scale = scale.data();
  ref.scale_count = params;
  if (c.zero_point) {
    ref.zero_point = zp.data();
    ref.zero_point_bytes = zbytes;
  }
  std::vector<float> best(numel), scalar(numel);
  ASSERT_THAT(DequantizeToF32(ref, best.data(), numel, DequantImpl::kBest), IsOk());
  ASSERT_THAT(DequantizeToF32(ref, scalar.data(), numel, DequantImpl::kScalar), IsOk());
  const std::vector<float> naive = NaiveDequant(ref);
  ASSERT_EQ(std::memcmp(scalar.data(), naive.data(), numel * 4), 0)
      << "scalar reference disagrees with the per-element definition";
  for (uint64_t i = 0; i < numel; ++i) {
    uint32_t a, b;
    std::memcpy(&a, &best[i], 4);
    std::memcpy(&b, &scalar[i], 4);
    ASSERT_EQ(a, b) << DequantImplementation() << " differs at element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DequantizeRandomTest,
    ::testing::Values(
        RandomCase{DType::kI8, {7, 37}, 0, 0, true},     // broadcast runs with tails
        RandomCase{DType::kI8, {7, 37}, 1, 0, true},     // vector runs with tails
        RandomCase{DType::kU8, {3, 64, 5}, 1, 0, true},  // middle axis
        RandomCase{DType::kU8, {129}, 0, 0, false},
        RandomCase{DType::kI8, {2, 3, 40}, 2, 0, false},
        RandomCase{DType::kI4, {8, 128}, 1, 32, true},   // typical HF layout
        RandomCase{DType::kI4, {5, 37}, 1, 16, true},    // odd rows: odd nibble starts
        RandomCase{DType::kU4, {5, 37}, 1, 7, true},     // group remainder
        RandomCase{DType::kU4, {64, 9}, 0, 32, true},    // groups along axis 0
        RandomCase{DType::kI4, {3, 10, 33}, 1, 4, true}, // vector runs, odd inner
        RandomCase{DType::kI4, {3, 10, 33}, 1, 4, false},
        RandomCase{DType::kU4, {1}, 0, 1, true}));

TEST(DequantizeArtifactTest, DequantizesSampleTensors) {
  testing::TempDir dir;
  auto art = testing::TestArtifact::Build(testing::SampleSpec());
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  // c: i8 [3,5] per row, scale {0.5, 0.25, 2}, zp {0, 3, -5}.
  auto c = (*a)->DequantizeToF32("c");
  ASSERT_THAT(c, IsOk());
  const std::vector<uint8_t> cq = testing::PatternBytes(15, 1);
  const float cs[] = {0.5f, 0.25f, 2.0f};
  const int cz[] = {0, 3, -5};
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ((*c)[static_cast<size_t>(i)],
              static_cast<float>(static_cast<int8_t>(cq[static_cast<size_t>(i)]) - cz[i / 5]) *
                  cs[i / 5]);
  }
  // q4: element (1, 5) is flat 15 (high nibble of byte 7); group 1 of row 1
  // is parameter 4: scale 5, zero point 4 (low nibble of 0x54).
  auto q4 = (*a)->DequantizeToF32("q4");
  ASSERT_THAT(q4, IsOk());
  const uint8_t byte7 = testing::PatternBytes(20, 2)[7];
  const int v = (byte7 >> 4) >= 8 ? (byte7 >> 4) - 16 : (byte7 >> 4);
  EXPECT_EQ((*q4)[15], static_cast<float>(v - 4) * 5.0f);
  // Plain f32 goes through as a copy.
  auto d = (*a)->DequantizeToF32("d");
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)[4], 1.0f);
}

}  // namespace
}  // namespace slimpack::loader
