// fp8_e4m3_groupwise in the loader: the E4M3FN decode table against a
// reference written from the bit layout (not the loader's formula), whole
// tensors through DequantizeToF32, the C++ artifact API and the C API
// (kBest and kScalar bit-identical), and the manifest refusals, each naming
// the tensor and the key.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/dequantize.h"
#include "formats/shard/loader/slimpack_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using shard::DType;
using shard::LayoutKind;
using testing::IsOk;
using testing::J;
using testing::StatusIs;
using testing::TestArtifact;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// E4M3FN from the bit layout: a normal code moves its exponent and mantissa
// straight into f32's fields (bias 7 -> 127); a subnormal is m / 512, done
// in double. NaN for 0x7F / 0xFF.
float ReferenceFp8(uint8_t q) {
  const uint32_t sign = uint32_t{q & 0x80u} << 24;
  const uint32_t e = (q >> 3) & 0x0F, m = q & 0x07;
  if (e == 15 && m == 7) return std::nanf("");
  if (e == 0) {
    const float mag = static_cast<float>(m / 512.0);
    return sign ? -mag : mag;
  }
  const uint32_t bits = sign | ((e + 120) << 23) | (m << 20);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A normal half from its fields (the sample's scales are all normal).
float NormalHalf(uint16_t h) {
  const float mag = std::ldexp(static_cast<float>(1024 + (h & 0x3FF)), ((h >> 10) & 31) - 25);
  return (h & 0x8000) ? -mag : mag;
}

// Equal bits, or both NaN (a NaN's payload after a multiply is the CPU's).
::testing::AssertionResult SameValue(float got, float want) {
  if (std::isnan(want) ? std::isnan(got) : Bits(got) == Bits(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << " (0x" << std::hex << Bits(got)
                                       << "), want " << want << " (0x" << Bits(want) << ")";
}

TEST(Fp8DecodeTest, EveryCodeMatchesTheBitLevelReference) {
  int nans = 0;
  for (int q = 0; q < 256; ++q) {
    const float got = Fp8E4M3ToFloat(static_cast<uint8_t>(q));
    EXPECT_TRUE(SameValue(got, ReferenceFp8(static_cast<uint8_t>(q)))) << "code " << q;
    EXPECT_FALSE(std::isinf(got)) << "E4M3FN has no infinities, code " << q;
    nans += std::isnan(got);
  }
  EXPECT_EQ(nans, 2);
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0xFF)));
  EXPECT_EQ(Fp8E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0xFE), -448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(Fp8E4M3ToFloat(0x07), 7.0f / 512.0f);          // largest subnormal
  EXPECT_EQ(Fp8E4M3ToFloat(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(Fp8E4M3ToFloat(0x38), 1.0f);
  EXPECT_EQ(Bits(Fp8E4M3ToFloat(0x00)), 0u);
  EXPECT_EQ(Bits(Fp8E4M3ToFloat(0x80)), 0x80000000u);  // -0
}

QuantizedTensorRef Fp8Ref(const std::vector<uint64_t>& shape, int axis, uint64_t group_size,
                          const std::vector<uint8_t>& q, const void* scale,
                          uint64_t scale_count, DType scale_dtype) {
  QuantizedTensorRef ref;
  ref.layout = LayoutKind::kFp8E4M3GroupWise;
  ref.dtype = DType::kU8;
  ref.shape = shape;
  ref.axis = axis;
  ref.group_size = group_size;
  ref.data = q.data();
  ref.data_bytes = q.size();
  ref.scale = scale;
  ref.scale_count = scale_count;
  ref.scale_dtype = scale_dtype;
  return ref;
}

// Every code once, one scale of 1: the output is the table itself.
TEST(Fp8DequantizeTest, UnitScaleYieldsTheTable) {
  std::vector<uint8_t> q(256);
  for (int i = 0; i < 256; ++i) q[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  const float one = 1.0f;
  const QuantizedTensorRef ref = Fp8Ref({256}, 0, 256, q, &one, 1, DType::kF32);
  for (DequantImpl impl : {DequantImpl::kBest, DequantImpl::kScalar}) {
    std::vector<float> out(256);
    ASSERT_THAT(DequantizeToF32(ref, out.data(), out.size(), impl), IsOk());
    for (int i = 0; i < 256; ++i) {
      EXPECT_TRUE(SameValue(out[static_cast<size_t>(i)], ReferenceFp8(static_cast<uint8_t>(i))))
          << "code " << i;
    }
  }
}

struct Fp8Case {
  std::vector<uint64_t> shape;
  int axis;
  uint64_t group_size;
  bool f16_scale;
  uint64_t block_rows = 1;  // rank 2, axis 1: rows sharing a scale row
};

void PrintTo(const Fp8Case& c, std::ostream* os) {
  *os << "[";
  for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "," : "") << c.shape[i];
  *os << "] axis " << c.axis << " group " << c.group_size << (c.f16_scale ? " f16" : " f32")
      << " block_rows " << c.block_rows;
}

class Fp8ShapesTest : public ::testing::TestWithParam<Fp8Case> {};

// Element by element from its index: code * scale at (.., i_A / G, ..).
TEST_P(Fp8ShapesTest, MatchesPerElementDefinitionAndBestEqualsScalar) {
  const Fp8Case& c = GetParam();
  const size_t rank = c.shape.size();
  std::vector<uint64_t> scale_shape = c.shape;
  scale_shape[c.axis] = (c.shape[c.axis] + c.group_size - 1) / c.group_size;
  scale_shape[0] = (scale_shape[0] + c.block_rows - 1) / c.block_rows;  // 1: unchanged
  uint64_t numel = 1, params = 1;
  for (size_t d = 0; d < rank; ++d) {
    numel *= c.shape[d];
    params *= scale_shape[d];
  }
  std::mt19937 rng(static_cast<uint32_t>(numel * 7 + c.group_size));
  std::vector<uint8_t> q(numel);
  for (auto& b : q) b = static_cast<uint8_t>(rng());
  std::vector<float> scale(params);
  std::vector<uint16_t> half(params);
  for (uint64_t k = 0; k < params; ++k) {
    // Normal halves of both signs, exponents 1..30.
    half[k] = static_cast<uint16_t>((rng() & 0x83FF) | ((1 + rng() % 30) << 10));
    scale[k] = NormalHalf(half[k]);
  }
  QuantizedTensorRef ref =
      c.f16_scale ? Fp8Ref(c.shape, c.axis, c.group_size, q, half.data(), params, DType::kF16)
                  : Fp8Ref(c.shape, c.axis, c.group_size, q, scale.data(), params, DType::kF32);
  ref.block_rows = c.block_rows;
  std::vector<float> best(numel), scalar(numel);
  ASSERT_THAT(DequantizeToF32(ref, best.data(), numel, DequantImpl::kBest), IsOk());
  ASSERT_THAT(DequantizeToF32(ref, scalar.data(), numel, DequantImpl::kScalar), IsOk());
  EXPECT_EQ(std::memcmp(best.data(), scalar.data(), numel * 4), 0);
  std::vector<uint64_t> idx(rank, 0);
  for (uint64_t k = 0; k < numel; ++k) {
    uint64_t p = 0;
    for (size_t d = 0; d < rank; ++d) {
      p = p * scale_shape[d] + (d == static_cast<size_t>(c.axis) ? idx[d] / c.group_size
                                : d == 0                          ? idx[d] / c.block_rows
                                                                  : idx[d]);
    }
    ASSERT_TRUE(SameValue(scalar[k], ReferenceFp8(q[k]) * scale[p])) << "element " << k;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < c.shape[d]) break;
      idx[d] = 0;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Fp8ShapesTest,
    ::testing::Values(Fp8Case{{8, 128}, 1, 128, false},  // one scale per row (channel)
                      Fp8Case{{8, 128}, 1, 32, true},
                      Fp8Case{{7, 37}, 1, 5, false},     // group remainder, axis 1
                      Fp8Case{{64, 9}, 0, 32, false},    // groups along axis 0
                      Fp8Case{{61, 9}, 0, 16, true},     // axis 0 with a remainder
                      Fp8Case{{3, 10, 33}, 1, 4, true},  // middle axis, inner runs
                      Fp8Case{{129}, 0, 1, false},
                      // Two-axis blocks: 128 x 128 with short edge blocks both
                      // ways, and small blocks with f16 scales.
                      Fp8Case{{300, 260}, 1, 128, false, 128},
                      Fp8Case{{7, 37}, 1, 5, true, 3},
                      Fp8Case{{9, 16}, 1, 16, false, 9}));  // one scale in all

// The checks DequantizeToF32 makes itself (the manifest refuses these first).
TEST(Fp8DequantizeTest, RefusesBadReferences) {
  const std::vector<uint8_t> q(12, 0x38);
  const float scale[3] = {1, 2, 3};
  float out[12];
  QuantizedTensorRef ref = Fp8Ref({3, 4}, 1, 4, q, scale, 3, DType::kF32);
  ASSERT_THAT(DequantizeToF32(ref, out, 12), IsOk());
  EXPECT_EQ(out[5], 2.0f);

  QuantizedTensorRef zp = ref;
  zp.zero_point = q.data();
  zp.zero_point_bytes = 3;
  EXPECT_THAT(DequantizeToF32(zp, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("has no zero point")));
  QuantizedTensorRef i8 = ref;
  i8.dtype = DType::kI8;
  EXPECT_THAT(DequantizeToF32(i8, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("does not match dtype i8")));
  QuantizedTensorRef g0 = ref;
  g0.group_size = 0;
  EXPECT_THAT(DequantizeToF32(g0, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("group_size must be at least 1")));
  QuantizedTensorRef g3 = ref;  // ceil(4 / 3) = 2 groups a row: 6 scales
  g3.group_size = 3;
  EXPECT_THAT(DequantizeToF32(g3, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("scale (elements) has 3, expected 6")));
  QuantizedTensorRef rows0 = ref;
  rows0.block_rows = 0;
  EXPECT_THAT(DequantizeToF32(rows0, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("block_rows must be at least 1")));
  QuantizedTensorRef rows2 = ref;  // ceil(3 / 2) = 2 scale rows, not 3
  rows2.block_rows = 2;
  EXPECT_THAT(DequantizeToF32(rows2, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("scale (elements) has 3, expected 2")));
  rows2.scale_count = 2;
  ASSERT_THAT(DequantizeToF32(rows2, out, 12), IsOk());
  EXPECT_EQ(out[5], 1.0f);   // row 1 takes scale row 0
  EXPECT_EQ(out[9], 2.0f);   // row 2 takes scale row 1
  QuantizedTensorRef rows_axis0 = rows2;
  rows_axis0.axis = 0;
  EXPECT_THAT(DequantizeToF32(rows_axis0, out, 12),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("block_rows 2 needs layout fp8_e4m3_groupwise of rank 2 and axis 1")));
  QuantizedTensorRef short_data = ref;
  short_data.data_bytes = 11;
  EXPECT_THAT(DequantizeToF32(short_data, out, 12),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("data has 11 bytes, expected 12")));
}

// --- whole artifacts: C++ API and C API -------------------------------------

// What the sample's tensor (v or w) must dequantize to, from the sample's
// codes and half scales and this file's reference decoders.
std::vector<float> ExpectedSample(bool w, uint64_t w_block_rows = 1) {
  const uint64_t rows = w ? 8 : 10, cols = w ? 40 : 7;
  std::vector<float> out(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      // [ceil(8 / w_block_rows), 3] / [2,7]
      const uint64_t p = w ? (r / w_block_rows) * 3 + c / 16 : (r / 5) * 7 + c;
      out[r * cols + c] = ReferenceFp8(testing::Fp8SampleCode(w, r * cols + c)) *
                          NormalHalf(testing::Fp8SampleScaleHalf(w, p));
    }
  }
  return out;
}

class Fp8ArtifactTest : public ::testing::TestWithParam<bool> {};  // f16 scales

TEST_P(Fp8ArtifactTest, DequantizesThroughCppAndCApis) {
  testing::TempDir dir;
  ASSERT_THAT(testing::Fp8SampleArtifact(GetParam()).Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT((*a)->Verify(), IsOk());
  const TensorInfo* w = (*a)->FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->layout.kind, LayoutKind::kFp8E4M3GroupWise);
  EXPECT_EQ(w->layout.axis, 1);
  EXPECT_EQ(w->layout.group_size, 16u);
  EXPECT_EQ(w->layout.scale, testing::kFp8WScale);
  EXPECT_EQ(w->layout.zero_point, -1);

  slimpack_artifact* c = nullptr;
  ASSERT_EQ(slimpack_artifact_open(dir.path().c_str(), nullptr, &c), SLIMPACK_OK)
      << slimpack_last_error_message();
  for (bool is_w : {false, true}) {
    SCOPED_TRACE(is_w ? "w" : "v");
    const std::vector<float> want = ExpectedSample(is_w);
    std::vector<float> best(want.size()), scalar(want.size()), from_c(want.size());
    const char* name = is_w ? "w" : "v";
    ASSERT_THAT((*a)->DequantizeToF32(name, best.data(), best.size(), DequantImpl::kBest),
                IsOk());
    ASSERT_THAT((*a)->DequantizeToF32(name, scalar.data(), scalar.size(), DequantImpl::kScalar),
                IsOk());
    EXPECT_EQ(std::memcmp(best.data(), scalar.data(), best.size() * 4), 0);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(SameValue(scalar[i], want[i])) << "element " << i;
    }

    uint64_t index = 0;
    ASSERT_EQ(slimpack_artifact_find_tensor(c, name, &index), SLIMPACK_OK);
    slimpack_tensor_info info;
    ASSERT_EQ(slimpack_artifact_tensor_info(c, index, &info), SLIMPACK_OK);
    EXPECT_EQ(info.layout, SLIMPACK_LAYOUT_FP8_E4M3_GROUPWISE);
    EXPECT_EQ(info.dtype, SLIMPACK_DTYPE_U8);
    EXPECT_EQ(info.axis, is_w ? 1 : 0);
    EXPECT_EQ(info.group_size, is_w ? 16u : 5u);
    EXPECT_EQ(info.scale_index, is_w ? testing::kFp8WScale : testing::kFp8VScale);
    EXPECT_EQ(info.zero_point_index, -1);
    EXPECT_EQ(slimpack_artifact_tensor_block_type(c, index), nullptr);
    ASSERT_EQ(slimpack_artifact_dequantize_f32(c, index, from_c.data(), from_c.size()),
              SLIMPACK_OK)
        << slimpack_last_error_message();
    EXPECT_EQ(std::memcmp(from_c.data(), best.data(), best.size() * 4), 0);
    EXPECT_EQ(slimpack_artifact_dequantize_f32(c, index, from_c.data(), 3),
              SLIMPACK_INVALID_ARGUMENT);
    EXPECT_THAT(slimpack_last_error_message(), HasSubstr(std::string("tensor '") + name + "'"));
  }
  slimpack_artifact_close(c);
}

INSTANTIATE_TEST_SUITE_P(Scales, Fp8ArtifactTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "F16" : "F32"; });

// w's rows in blocks of 3 (8 rows: 3 scale rows, the last block 2 rows).
TEST(Fp8ArtifactTest, BlockRowsThroughCppAndCApis) {
  testing::TempDir dir;
  ASSERT_THAT(testing::Fp8SampleArtifact(true, 3).Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  const TensorInfo* w = (*a)->FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->layout.block_rows, 3u);
  EXPECT_EQ((*a)->FindTensor("v")->layout.block_rows, 1u);
  const std::vector<float> want = ExpectedSample(true, 3);
  std::vector<float> best(want.size()), scalar(want.size()), from_c(want.size());
  ASSERT_THAT((*a)->DequantizeToF32("w", best.data(), best.size(), DequantImpl::kBest), IsOk());
  ASSERT_THAT((*a)->DequantizeToF32("w", scalar.data(), scalar.size(), DequantImpl::kScalar),
              IsOk());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(SameValue(scalar[i], want[i])) << "element " << i;
    ASSERT_TRUE(SameValue(best[i], want[i])) << "element " << i;
  }
  slimpack_artifact* c = nullptr;
  ASSERT_EQ(slimpack_artifact_open(dir.path().c_str(), nullptr, &c), SLIMPACK_OK)
      << slimpack_last_error_message();
  uint64_t index = 0;
  ASSERT_EQ(slimpack_artifact_find_tensor(c, "w", &index), SLIMPACK_OK);
  EXPECT_EQ(slimpack_artifact_tensor_block_rows(c, index), 3u);
  ASSERT_EQ(slimpack_artifact_dequantize_f32(c, index, from_c.data(), from_c.size()),
            SLIMPACK_OK)
      << slimpack_last_error_message();
  EXPECT_EQ(std::memcmp(from_c.data(), best.data(), best.size() * 4), 0);
  slimpack_artifact_close(c);
}

// --- manifest refusals --------------------------------------------------------

struct Fp8Refusal {
  const char* name;
  bool f16_scales;  // the sample it starts from
  std::function<void(TestArtifact&)> edit;
  StatusCode code;
  const char* message;
};

void PrintTo(const Fp8Refusal& c, std::ostream* os) { *os << c.name; }

J& Layout(TestArtifact& a, int i) { return a.manifest["tensors"][i]["layout"]; }

const Fp8Refusal kRefusals[] = {
    {"ZeroPointKey", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["zero_point"] = "w.scale"; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout zero_point: layout fp8_e4m3_groupwise has no zero_point"},
    {"PackingKey", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["packing"] = "low_nibble_first"; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout packing: layout fp8_e4m3_groupwise has no packing"},
    {"DtypeI8", false,
     [](TestArtifact& a) { a.manifest["tensors"][testing::kFp8W]["dtype"] = "i8"; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout kind: layout fp8_e4m3_groupwise needs dtype u8, found i8"},
    {"MissingFeature", false, [](TestArtifact& a) { a.manifest["required_features"] = J::Array(); },
     StatusCode::kInvalidArgument,
     "tensors[0] 'v'.layout kind: layout fp8_e4m3_groupwise is used but required_features "
     "does not list \"fp8_e4m3\""},
    {"ScaleWrongShape", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["scale"] = "v.scale"; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout scale: tensor 'v.scale' has shape [2,7], expected [8,3]"},
    {"ScaleShapeForOtherGroupSize", false,  // ceil(40 / 20) = 2 groups, not 3
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["group_size"] = 20; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout scale: tensor 'w.scale' has shape [8,3], expected [8,2]"},
    {"ScaleMissing", false, [](TestArtifact& a) { Layout(a, testing::kFp8W).Erase("scale"); },
     StatusCode::kInvalidArgument, "tensors[2] 'w'.layout scale: missing required key"},
    {"ScaleIsQuantizedCode", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8V)["scale"] = "w"; },
     StatusCode::kInvalidArgument,
     "tensors[0] 'v'.layout scale: tensor 'w' has dtype u8, expected f32"},
    {"F16ScaleWithoutFeature", true,
     [](TestArtifact& a) { a.manifest["required_features"] = J::Array({J("fp8_e4m3")}); },
     StatusCode::kInvalidArgument,
     "tensors[0] 'v'.layout scale: tensor 'v.scale' has dtype f16, expected f32"},
    {"GroupSizeZero", false, [](TestArtifact& a) { Layout(a, testing::kFp8W)["group_size"] = 0; },
     StatusCode::kInvalidArgument, "tensors[2] 'w'.layout group_size: must be at least 1"},
    {"GroupSizeMissing", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W).Erase("group_size"); },
     StatusCode::kInvalidArgument, "tensors[2] 'w'.layout group_size: missing required key"},
    {"AxisOutOfRange", false, [](TestArtifact& a) { Layout(a, testing::kFp8W)["axis"] = 2; },
     StatusCode::kInvalidArgument, "tensors[2] 'w'.layout axis: axis 2 is out of range for rank 2"},
    {"UnknownKindListsFp8", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["kind"] = "fp8_e5m2_groupwise"; },
     StatusCode::kUnimplemented,
     "unknown layout \"fp8_e5m2_groupwise\" (supported: plain, int8_per_channel, "
     "int4_groupwise, int8_groupwise, sparse_2_4, ggml_blocks, fp8_e4m3_groupwise)"},
    {"BlockRowsWithoutFeature", false,
     [](TestArtifact& a) { Layout(a, testing::kFp8W)["block_rows"] = 8; },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout block_rows: block_rows is used but required_features does not list "
     "\"fp8_block_rows\""},
    {"BlockRowsShapeMismatch", false,  // 8 rows in blocks of 4: scale [2,3], not [8,3]
     [](TestArtifact& a) {
       a.manifest["required_features"].Push(J("fp8_block_rows"));
       Layout(a, testing::kFp8W)["block_rows"] = 4;
     },
     StatusCode::kInvalidArgument,
     "tensors[2] 'w'.layout scale: tensor 'w.scale' has shape [8,3], expected [2,3]"},
    {"BlockRowsOnAScale", false,  // a plain tensor: refused, not ignored
     [](TestArtifact& a) {
       a.manifest["required_features"].Push(J("fp8_block_rows"));
       Layout(a, testing::kFp8WScale)["block_rows"] = 2;
     },
     StatusCode::kInvalidArgument,
     "tensors[3] 'w.scale'.layout block_rows: layout plain has no block_rows "
     "(fp8_e4m3_groupwise only)"},
    {"BlockRowsZero", false,
     [](TestArtifact& a) {
       a.manifest["required_features"].Push(J("fp8_block_rows"));
       Layout(a, testing::kFp8W)["block_rows"] = 0;
     },
     StatusCode::kInvalidArgument, "tensors[2] 'w'.layout block_rows: must be at least 1"},
    {"BlockRowsOnAxis0", false,
     [](TestArtifact& a) {
       a.manifest["required_features"].Push(J("fp8_block_rows"));
       Layout(a, testing::kFp8V)["block_rows"] = 2;
     },
     StatusCode::kInvalidArgument,
     "tensors[0] 'v'.layout block_rows: block_rows needs a rank-2 tensor grouped along axis 1, "
     "found rank 2 axis 0"},
    {"UnknownFeatureListsFp8", false,
     [](TestArtifact& a) { a.manifest["required_features"].Push(J("fp8_e5m2")); },
     StatusCode::kUnimplemented,
     "supported features: f16_scales, fp8_block_rows, fp8_e4m3, ggml_blocks, int8_groupwise, sparse_2_4)"},
};

class Fp8RefusalTest : public ::testing::TestWithParam<Fp8Refusal> {};

TEST_P(Fp8RefusalTest, OpenFailsNamingTheKey) {
  const Fp8Refusal& c = GetParam();
  testing::TempDir dir;
  TestArtifact art = testing::Fp8SampleArtifact(c.f16_scales);
  c.edit(art);
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  EXPECT_THAT(Artifact::Open(dir.path()), StatusIs(c.code, HasSubstr(c.message)));
}

INSTANTIATE_TEST_SUITE_P(Manifest, Fp8RefusalTest, ::testing::ValuesIn(kRefusals),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace slimpack::loader
