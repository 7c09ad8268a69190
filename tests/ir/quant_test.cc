// ir/quant.h: the spec's dequantization on hand-checked values
// (per-channel on either axis, packed int4 groups with a short last group,
// zero points), the layout checks with the offending value in each message,
// and the verifier running them on quantized initializers.
#include "ir/quant.h"

#include <cstring>

#include "ir/float_convert.h"
#include "ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::ir {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor Raw(std::string name, DType dt, std::vector<int64_t> dims,
           std::vector<uint8_t> bytes) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dt;
  t.dims = std::move(dims);
  t.data = TensorData::Owned(std::move(bytes));
  return t;
}

Tensor F32(std::string name, std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return Raw(std::move(name), DType::kF32, std::move(dims), std::move(b));
}

Tensor I8(std::string name, std::vector<int64_t> dims, const std::vector<int8_t>& v) {
  std::vector<uint8_t> b(v.size());
  std::memcpy(b.data(), v.data(), b.size());
  return Raw(std::move(name), DType::kI8, std::move(dims), std::move(b));
}

// Packs 4-bit values (two's complement for i4), element 2k in the low nibble.
std::vector<uint8_t> Pack4(const std::vector<int>& v) {
  std::vector<uint8_t> b((v.size() + 1) / 2, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    b[i / 2] |= static_cast<uint8_t>((v[i] & 0xF) << (i % 2 ? 4 : 0));
  }
  return b;
}

Tensor PerChannel(int axis) {
  Tensor q = I8("w", {2, 3}, {-128, 0, 127, 5, -5, 1});
  q.quant.kind = QuantKind::kInt8PerChannel;
  q.quant.axis = axis;
  q.quant.scale = "w.scale";
  return q;
}

TEST(DequantizeTest, Int8PerChannelAxis0WithZeroPoint) {
  Tensor q = PerChannel(0);
  q.quant.zero_point = "w.zp";
  const Tensor scale = F32("w.scale", {2}, {0.5f, 0.25f});
  const Tensor zp = I8("w.zp", {2}, {1, -2});
  auto x = DequantizeToF32(q, scale, &zp);
  ASSERT_THAT(x, IsOk());
  // Row r: (q - zp[r]) * scale[r].
  EXPECT_THAT(*x, ElementsAreArray({-64.5f, -0.5f, 63.0f, 1.75f, -0.75f, 0.75f}));
}

TEST(DequantizeTest, Int8PerChannelAxis1WithoutZeroPoint) {
  const Tensor q = PerChannel(1);
  const Tensor scale = F32("w.scale", {3}, {1.0f, 0.5f, 2.0f});
  auto x = DequantizeToF32(q, scale, nullptr);
  ASSERT_THAT(x, IsOk());
  // Column c: q * scale[c].
  EXPECT_THAT(*x, ElementsAreArray({-128.0f, 0.0f, 254.0f, 5.0f, -2.5f, 2.0f}));
}

TEST(DequantizeTest, Int4GroupWiseShortLastGroupAndPackedZeroPoint) {
  // u4 [2, 5], groups of 2 along axis 1: groups {0,1}, {2,3}, {4}.
  const std::vector<int> qv = {0, 15, 8, 9, 3, 1, 2, 14, 7, 8};
  Tensor q = Raw("m", DType::kU4, {2, 5}, Pack4(qv));
  q.quant.kind = QuantKind::kInt4GroupWise;
  q.quant.axis = 1;
  q.quant.group_size = 2;
  q.quant.scale = "m.s";
  q.quant.zero_point = "m.z";
  const Tensor scale = F32("m.s", {2, 3}, {1.0f, 0.5f, 0.25f, 2.0f, 4.0f, 8.0f});
  const Tensor zp = Raw("m.z", DType::kU4, {2, 3}, Pack4({8, 8, 0, 1, 7, 15}));
  auto x = DequantizeToF32(q, scale, &zp);
  ASSERT_THAT(x, IsOk());
  EXPECT_THAT(*x, ElementsAreArray({-8.0f, 7.0f, 0.0f, 0.5f, 0.75f,  // row 0
                                    0.0f, 2.0f, 28.0f, 0.0f, -56.0f}));
}

TEST(DequantizeTest, SignedInt4SignExtendsBothNibbles) {
  Tensor q = Raw("s", DType::kI4, {3}, Pack4({-8, 7, -1}));
  q.quant.kind = QuantKind::kInt4GroupWise;
  q.quant.axis = 0;
  q.quant.group_size = 4;
  q.quant.scale = "s.s";
  const Tensor scale = F32("s.s", {1}, {0.5f});
  auto x = DequantizeToF32(q, scale, nullptr);
  ASSERT_THAT(x, IsOk());
  EXPECT_THAT(*x, ElementsAreArray({-4.0f, 3.5f, -0.5f}));
}

TEST(DequantizeTest, TensorKeepsNameRoleAndLayerAndDropsLayout) {
  Tensor q = PerChannel(0);
  q.role = WeightRole::kQProj;
  q.layer = 3;
  Tensor scale = F32("w.scale", {2}, {1.0f, 1.0f});
  scale.layer = 3;
  auto t = DequantizeTensor(q, scale, nullptr);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->name, "w");
  EXPECT_EQ(t->dtype, DType::kF32);
  EXPECT_EQ(t->dims, q.dims);
  EXPECT_EQ(t->role, WeightRole::kQProj);
  EXPECT_EQ(t->layer, 3);
  EXPECT_FALSE(t->quant.quantized());
  EXPECT_EQ(t->data.size(), 24u);
}

// u8 E4M3 codes [2, 5], one f16 scale per 2 columns: groups {0,1}, {2,3}, {4}.
Tensor Fp8Codes() {
  // 1.0, -2.0, 0.5, 448, 2^-9 | 0, -0.5, 1.5, 3.0, -448
  Tensor q = Raw("f", DType::kU8, {2, 5},
                 {0x38, 0xC0, 0x30, 0x7E, 0x01, 0x00, 0xB0, 0x3C, 0x44, 0xFE});
  q.quant.kind = QuantKind::kFp8E4M3GroupWise;
  q.quant.axis = 1;
  q.quant.group_size = 2;
  q.quant.scale = "f.s";
  return q;
}

TEST(DequantizeTest, Fp8E4M3GroupWiseIsCodeValueTimesItsGroupScale) {
  const Tensor q = Fp8Codes();
  const Tensor scale = F32("f.s", {2, 3}, {0.5f, 2.0f, 1.0f, 4.0f, 0.25f, 0.125f});
  ASSERT_THAT(ValidateQuantLayout(q, &scale, nullptr), IsOk());
  auto x = DequantizeToF32(q, scale, nullptr);
  ASSERT_THAT(x, IsOk());
  EXPECT_THAT(*x, ElementsAreArray({0.5f, -1.0f, 1.0f, 896.0f, 0x1p-9f,  // row 0
                                    0.0f, -2.0f, 0.375f, 0.75f, -56.0f}));
  EXPECT_EQ(QuantKindName(QuantKind::kFp8E4M3GroupWise), "fp8_e4m3_groupwise");
  QuantKind k;
  ASSERT_TRUE(QuantKindFromName("fp8_e4m3_groupwise", &k));
  EXPECT_EQ(k, QuantKind::kFp8E4M3GroupWise);
  EXPECT_EQ(QuantBits(q), 8);
}

TEST(DequantizeTest, Fp8NeedsU8CodesAndNoZeroPoint) {
  Tensor q = Fp8Codes();
  const Tensor scale = F32("f.s", {2, 3}, std::vector<float>(6, 1.0f));
  q.dtype = DType::kI8;
  EXPECT_THAT(ValidateQuantLayout(q, &scale, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor 'f'"),
                             HasSubstr("needs dtype u8 (E4M3 bytes), found i8"))));
  q = Fp8Codes();
  q.quant.zero_point = "f.z";
  const Tensor zp = Raw("f.z", DType::kU8, {2, 3}, std::vector<uint8_t>(6, 0));
  EXPECT_THAT(ValidateQuantLayout(q, &scale, &zp),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor 'f'"), HasSubstr("names zero point 'f.z'"))));
  q = Fp8Codes();
  const Tensor per_column = F32("f.s", {2, 5}, std::vector<float>(10, 1.0f));
  EXPECT_THAT(ValidateQuantLayout(q, &per_column, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'f.s' has shape [2,5], expected [2,3]")));
}

// block_rows: rows 0-2 share scale row 0, rows 3-4 scale row 1 (a short
// last block), as an FP8 checkpoint's 128 x 128 blocks, scaled down.
TEST(DequantizeTest, Fp8BlockRowsShareOneScalePerBlockOfRowsAndColumns) {
  std::vector<uint8_t> codes(5 * 3);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(0x30 + i);
  Tensor q = Raw("f", DType::kU8, {5, 3}, codes);
  q.quant.kind = QuantKind::kFp8E4M3GroupWise;
  q.quant.axis = 1;
  q.quant.group_size = 2;
  q.quant.block_rows = 3;
  q.quant.scale = "f.s";
  EXPECT_EQ(QuantParamDims(q), (std::vector<int64_t>{2, 2}));
  const std::vector<float> s = {0.5f, 2.0f, 4.0f, 0.25f};
  const Tensor scale = F32("f.s", {2, 2}, s);
  ASSERT_THAT(ValidateQuantLayout(q, &scale, nullptr), IsOk());
  auto x = DequantizeToF32(q, scale, nullptr);
  ASSERT_THAT(x, IsOk());
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c) {
      const float want = F8E4M3ToF32(codes[static_cast<size_t>(r * 3 + c)]) *
                         s[static_cast<size_t>((r / 3) * 2 + c / 2)];
      EXPECT_EQ((*x)[static_cast<size_t>(r * 3 + c)], want) << r << "," << c;
    }
  }
  // The per-row shape is the wrong one now; block_rows belongs to fp8 of
  // rank 2 grouped along axis 1 only.
  const Tensor per_row = F32("f.s", {5, 2}, std::vector<float>(10, 1.0f));
  EXPECT_THAT(ValidateQuantLayout(q, &per_row, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'f.s' has shape [5,2], expected [2,2]")));
  Tensor bad = q;
  bad.quant.block_rows = -1;
  EXPECT_THAT(ValidateQuantLayout(bad, &scale, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor 'f'"), HasSubstr("block_rows -1 is negative"))));
  bad = q;
  bad.quant.axis = 0;
  EXPECT_THAT(ValidateQuantLayout(bad, &scale, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("block_rows 3 needs an [out, in] matrix grouped along axis 1")));
  Tensor int8 = Raw("f", DType::kI8, {5, 3}, codes);
  int8.quant = q.quant;
  int8.quant.kind = QuantKind::kInt8GroupWise;
  EXPECT_THAT(ValidateQuantLayout(int8, &scale, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("only fp8_e4m3_groupwise shares a scale between rows")));
  Tensor blocks = Raw("f", DType::kU8, {2, 34}, std::vector<uint8_t>(68, 0));  // two q8_0 rows
  blocks.quant.kind = QuantKind::kGgmlBlocks;
  blocks.quant.axis = 1;
  blocks.quant.block_type = GgmlType::kQ8_0;
  blocks.quant.group_size = 32;
  blocks.quant.block_rows = 2;
  EXPECT_THAT(ValidateQuantLayout(blocks, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("only fp8_e4m3_groupwise shares a scale between rows")));
  // The layouts differ from the one-scale-per-row layout (0 and 1 are that).
  QuantLayout one = q.quant;
  one.block_rows = 1;
  EXPECT_FALSE(one == q.quant);
  QuantLayout zero = one;
  zero.block_rows = 0;
  EXPECT_TRUE(one == zero);
}

// One malformed layout per row; the message must name the tensor and the
// offending value.
struct BadLayout {
  const char* label;
  void (*mutate)(Tensor& q, Tensor& scale, Tensor& zp);
  std::vector<const char*> message;
};

class ValidateQuantLayoutTest : public ::testing::TestWithParam<BadLayout> {};

TEST_P(ValidateQuantLayoutTest, RejectsNamingTensorAndValue) {
  Tensor q = PerChannel(0);
  q.quant.zero_point = "w.zp";
  Tensor scale = F32("w.scale", {2}, {0.5f, 0.25f});
  Tensor zp = I8("w.zp", {2}, {0, 0});
  ASSERT_THAT(ValidateQuantLayout(q, &scale, &zp), IsOk());
  GetParam().mutate(q, scale, zp);
  const bool missing_scale = scale.name.empty();
  absl::Status s = ValidateQuantLayout(q, missing_scale ? nullptr : &scale, &zp);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor 'w'")));
  for (const char* m : GetParam().message) EXPECT_THAT(std::string(s.message()), HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidateQuantLayoutTest,
    ::testing::Values(
        BadLayout{"DtypeVsKind", [](Tensor& q, Tensor&, Tensor&) { q.dtype = DType::kI4; },
                  {"needs dtype i8 or u8, found i4"}},
        BadLayout{"Int4KindOnI8",
                  [](Tensor& q, Tensor&, Tensor&) {
                    q.quant.kind = QuantKind::kInt4GroupWise;
                    q.quant.group_size = 2;
                  },
                  {"int4_groupwise", "needs dtype i4 or u4, found i8"}},
        BadLayout{"AxisOutOfRange", [](Tensor& q, Tensor&, Tensor&) { q.quant.axis = 2; },
                  {"axis 2 is out of range", "[2,3]"}},
        BadLayout{"NegativeAxis", [](Tensor& q, Tensor&, Tensor&) { q.quant.axis = -1; },
                  {"axis -1"}},
        BadLayout{"GroupSizeZero",
                  [](Tensor& q, Tensor& s, Tensor& z) {
                    q.dtype = DType::kI4;
                    q.quant.kind = QuantKind::kInt4GroupWise;
                    q.quant.group_size = 0;
                    z.dtype = DType::kI4;
                    (void)s;
                  },
                  {"group_size 0"}},
        BadLayout{"ScaleShape", [](Tensor&, Tensor& s, Tensor&) { s.dims = {3}; },
                  {"scale tensor 'w.scale' has shape [3], expected [2]"}},
        BadLayout{"ScaleDtype", [](Tensor&, Tensor& s, Tensor&) { s.dtype = DType::kBF16; },
                  {"'w.scale' has dtype bf16, expected f32 or f16"}},
        BadLayout{"ScaleMissing", [](Tensor&, Tensor& s, Tensor&) { s.name.clear(); },
                  {"'w.scale', which is not in the graph"}},
        BadLayout{"ScaleQuantized",
                  [](Tensor&, Tensor& s, Tensor&) { s.quant.kind = QuantKind::kInt8PerChannel; },
                  {"'w.scale' is itself quantized"}},
        BadLayout{"ZeroPointDtype", [](Tensor&, Tensor&, Tensor& z) { z.dtype = DType::kU8; },
                  {"zero_point tensor 'w.zp' has dtype u8, expected i8"}},
        BadLayout{"ZeroPointShape", [](Tensor&, Tensor&, Tensor& z) { z.dims = {2, 1}; },
                  {"'w.zp' has shape [2,1], expected [2]"}},
        BadLayout{"ScaleLayer", [](Tensor&, Tensor& s, Tensor&) { s.layer = 4; },
                  {"'w.scale' has layer 4, expected -1"}},
        BadLayout{"Scalar", [](Tensor& q, Tensor&, Tensor&) { q.dims = {}; },
                  {"rank >= 1"}}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(DequantizeTest, RejectsPayloadOfWrongSize) {
  Tensor q = PerChannel(0);
  q.data = TensorData::Owned(std::vector<uint8_t>(5, 0));
  const Tensor scale = F32("w.scale", {2}, {1.0f, 1.0f});
  EXPECT_THAT(DequantizeToF32(q, scale, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'w'"), HasSubstr("needs 6 bytes, found 5"))));
}

TEST(QuantVerifierTest, ChecksQuantizedInitializersAgainstTheirScales) {
  Graph g;
  g.name = "main";
  g.inputs.push_back({"x", DType::kF32, Shape::FromDims({1, 3})});
  ASSERT_THAT(g.AddInitializer(PerChannel(0)), IsOk());
  ASSERT_THAT(g.AddInitializer(F32("w.scale", {2}, {1.0f, 2.0f})), IsOk());
  Node n;
  n.name = "gemm";
  n.op_type = "Gemm";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  n.attributes["transB"] = Attribute::Int(1);
  g.nodes.push_back(n);
  g.outputs.push_back({"y", DType::kF32, Shape::FromDims({1, 2})});
  EXPECT_THAT(VerifyGraph(g), IsOk());

  g.FindMutableInitializer("w")->quant.scale = "nope";
  EXPECT_THAT(VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("graph 'main' initializer tensor 'w'"),
                             HasSubstr("'nope', which is not in the graph"))));
}

TEST(QuantKindTest, NamesAreTheManifestOnes) {
  QuantKind k;
  for (QuantKind want : {QuantKind::kNone, QuantKind::kInt8PerChannel, QuantKind::kInt4GroupWise}) {
    ASSERT_TRUE(QuantKindFromName(QuantKindName(want), &k));
    EXPECT_EQ(k, want);
  }
  EXPECT_EQ(QuantKindName(QuantKind::kInt4GroupWise), "int4_groupwise");
  EXPECT_FALSE(QuantKindFromName("int2", &k));
}

}  // namespace
}  // namespace slimpack::ir
