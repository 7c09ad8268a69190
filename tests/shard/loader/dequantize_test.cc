// Dequantization: the scalar reference against hand-computed values and an
// independent per-element implementation, and the vectorised kernels (AVX2 /
// NEON) against the scalar reference, bit for bit, over shapes that hit
// every tail, odd nibble start and group remainder.
#include "formats/shard/loader/dequantize.h"

#include <cmath>
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
// Half bits to float by the IEEE definition (independent of HalfToFloat).
float NaiveHalf(uint16_t h) {
  const int exp = (h >> 10) & 31;
  const int mant = h & 1023;
  const float mag = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
                             : std::ldexp(static_cast<float>(1024 + mant), exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

std::vector<float> NaiveDequant(const QuantizedTensorRef& ref) {
  const bool four = ref.dtype == DType::kI4 || ref.dtype == DType::kU4;
  const bool grouped = ref.layout != LayoutKind::kInt8PerChannel;
  auto scale_at = [&](uint64_t p) {
    return ref.scale_dtype == DType::kF16 ? NaiveHalf(static_cast<const uint16_t*>(ref.scale)[p])
                                          : static_cast<const float*>(ref.scale)[p];
  };
  const bool is_signed = ref.dtype == DType::kI4 || ref.dtype == DType::kI8;
  auto element = [&](const void* p, uint64_t k) -> int32_t {
    const auto* b = static_cast<const uint8_t*>(p);
    if (!four) return is_signed ? static_cast<int8_t>(b[k]) : b[k];
    int32_t v = (k % 2) ? (b[k / 2] >> 4) : (b[k / 2] & 15);
    return is_signed && v >= 8 ? v - 16 : v;
  };
  const size_t rank = ref.shape.size();
  std::vector<uint64_t> pshape = ref.shape;
  if (grouped) {
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
    if (grouped) {
      for (size_t d = 0; d < rank; ++d) {
        uint64_t i = d == static_cast<size_t>(ref.axis) ? idx[d] / ref.group_size : idx[d];
        p = p * pshape[d] + i;
      }
    } else {
      p = idx[ref.axis];
    }
    const int32_t zp = ref.zero_point ? element(ref.zero_point, p) : 0;
    out[k] = static_cast<float>(element(ref.data, k) - zp) * scale_at(p);
  }
  return out;
}

struct RandomCase {
  DType dtype;
  std::vector<uint64_t> shape;
  int axis;
  uint64_t group_size;
  bool zero_point;
  bool int8_groups = false;  // i8/u8 with group_size: int8_groupwise
  bool f16_scale = false;
};

void PrintTo(const RandomCase& c, std::ostream* os) {
  *os << shard::DTypeName(c.dtype) << " [";
  for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "," : "") << c.shape[i];
  *os << "] axis " << c.axis << " group " << c.group_size
      << (c.zero_point ? " with zero point" : "") << (c.int8_groups ? " int8_groupwise" : "")
      << (c.f16_scale ? " f16 scales" : "");
}

class DequantizeRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(DequantizeRandomTest, VectorisedMatchesScalarAndNaive) {
  const RandomCase& c = GetParam();
  const bool four = c.dtype == DType::kI4 || c.dtype == DType::kU4;
  const bool grouped = four || c.int8_groups;
  uint64_t numel = 1;
  for (uint64_t d : c.shape) numel *= d;
  uint64_t params = 1;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (!grouped) {
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
  // Random finite halves, subnormals included (exponent field 0..30).
  std::vector<uint16_t> half_scale(params);
  for (auto& h : half_scale) {
    h = static_cast<uint16_t>(rng() & 0xFFFF);
    if (((h >> 10) & 31) == 31) h = static_cast<uint16_t>(h & ~0x4000);
  }

  QuantizedTensorRef ref;
  ref.layout = four ? LayoutKind::kInt4GroupWise
               : c.int8_groups ? LayoutKind::kInt8GroupWise
                               : LayoutKind::kInt8PerChannel;
  ref.dtype = c.dtype;
  ref.shape = c.shape;
  ref.axis = c.axis;
  ref.group_size = c.group_size;
  ref.data = q.data();
  ref.data_bytes = qbytes;
  ref.scale = scale.data();
  if (c.f16_scale) {
    ref.scale = half_scale.data();
    ref.scale_dtype = DType::kF16;
  }
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
        RandomCase{DType::kU4, {1}, 0, 1, true},
        RandomCase{DType::kI8, {8, 128}, 1, 32, false, true},       // Q8_0-like
        RandomCase{DType::kU8, {5, 37}, 1, 7, true, true},          // group remainder
        RandomCase{DType::kI8, {64, 9}, 0, 32, true, true},         // groups along axis 0
        RandomCase{DType::kU8, {3, 10, 33}, 1, 4, true, true},      // vector runs
        RandomCase{DType::kI8, {8, 128}, 1, 32, false, true, true}, // f16 scales
        RandomCase{DType::kU4, {5, 37}, 1, 7, true, false, true},
        RandomCase{DType::kI8, {7, 37}, 1, 0, true, false, true},   // per channel, f16
        RandomCase{DType::kU8, {3, 10, 33}, 1, 4, true, true, true}));

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

// int8_groupwise with f16 scales (features listed): the loader opens it and
// dequantizes element (r, c) as (q - zp[r, c/2]) * half(scale[r, c/2]).
TEST(DequantizeArtifactTest, Int8GroupWiseWithF16Scales) {
  testing::TempDir dir;
  testing::TestArtifactSpec spec = testing::SampleSpec();
  testing::TestTensor& c = spec.tensors[testing::kC];
  c.layout["kind"] = "int8_groupwise";
  c.layout["axis"] = 1;
  c.layout["group_size"] = 2;
  // [3, 3] f16 scales 0.5, 1, 1.5, ... and i8 zero points -4 .. 4.
  std::vector<uint8_t> half, zp;
  for (int i = 0; i < 9; ++i) {
    const uint16_t h = static_cast<uint16_t>(0x3800 + 0x200 * i);  // 0.5 + i/8 ... exactly
    half.push_back(static_cast<uint8_t>(h & 0xFF));
    half.push_back(static_cast<uint8_t>(h >> 8));
    zp.push_back(static_cast<uint8_t>(static_cast<int8_t>(i - 4)));
  }
  spec.tensors[testing::kCScale] = {"c.scale", "f16", {3, 3}, half};
  spec.tensors[testing::kCZp] = {"c.zp", "i8", {3, 3}, zp};
  auto art = testing::TestArtifact::Build(spec);
  art.manifest["required_features"].Push(testing::J("f16_scales"));
  art.manifest["required_features"].Push(testing::J("int8_groupwise"));
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  const TensorInfo* info = (*a)->FindTensor("c");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->layout.kind, LayoutKind::kInt8GroupWise);
  EXPECT_EQ(info->layout.group_size, 2u);
  auto got = (*a)->DequantizeToF32("c");
  ASSERT_THAT(got, IsOk());
  const std::vector<uint8_t> q = testing::PatternBytes(15, 1);
  for (int r = 0; r < 3; ++r) {
    for (int col = 0; col < 5; ++col) {
      const int p = r * 3 + col / 2;
      const float want = static_cast<float>(static_cast<int8_t>(q[r * 5 + col]) - (p - 4)) *
                         NaiveHalf(static_cast<uint16_t>(0x3800 + 0x200 * p));
      EXPECT_EQ((*got)[r * 5 + col], want) << r << "," << col;
    }
  }
}

}  // namespace
}  // namespace slimpack::loader
