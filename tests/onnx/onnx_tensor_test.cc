// TensorFromProto: typed fields decode to the same bytes as raw_data for
// every dtype; raw_data is a view, typed data is owned; typed-field errors.
#include "formats/onnx/tensor_from_proto.h"

#include <cstring>
#include <functional>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::Bytes;
using ::slimpack::onnx_format::testing::RawTensor;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

std::string AsString(const ir::TensorData& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

struct TypedCase {
  std::string name;
  int32_t onnx_type;
  ir::DType dtype;
  std::string raw;  // little-endian reference bytes for dims {3}
  std::function<void(onnx::TensorProto*)> fill_typed;
};

std::vector<TypedCase> TypedCases() {
  using TP = onnx::TensorProto;
  return {
      {"f32", TP::FLOAT, ir::DType::kF32, Bytes<float>({1.5f, -0.0f, 1e30f}),
       [](TP* t) { for (float v : {1.5f, -0.0f, 1e30f}) t->add_float_data(v); }},
      // 0x3c00 = 1.0, 0xc000 = -2.0, 0x7bff = 65504 (max half)
      {"f16", TP::FLOAT16, ir::DType::kF16,
       Bytes<uint16_t>({0x3c00, 0xc000, 0x7bff}),
       [](TP* t) { for (int v : {0x3c00, 0xc000, 0x7bff}) t->add_int32_data(v); }},
      {"bf16", TP::BFLOAT16, ir::DType::kBF16,
       Bytes<uint16_t>({0x3f80, 0xbf80, 0x7f80}),
       [](TP* t) { for (int v : {0x3f80, 0xbf80, 0x7f80}) t->add_int32_data(v); }},
      {"f64", TP::DOUBLE, ir::DType::kF64, Bytes<double>({0.25, -1e300, 3}),
       [](TP* t) { for (double v : {0.25, -1e300, 3.0}) t->add_double_data(v); }},
      {"i64", TP::INT64, ir::DType::kI64,
       Bytes<int64_t>({INT64_MIN, -1, INT64_MAX}),
       [](TP* t) { for (int64_t v : {INT64_MIN, int64_t{-1}, INT64_MAX}) t->add_int64_data(v); }},
      {"i32", TP::INT32, ir::DType::kI32, Bytes<int32_t>({INT32_MIN, 0, 7}),
       [](TP* t) { for (int32_t v : {INT32_MIN, 0, 7}) t->add_int32_data(v); }},
      {"i16", TP::INT16, ir::DType::kI16, Bytes<int16_t>({-32768, 1, 32767}),
       [](TP* t) { for (int v : {-32768, 1, 32767}) t->add_int32_data(v); }},
      {"u16", TP::UINT16, ir::DType::kU16, Bytes<uint16_t>({0, 1, 65535}),
       [](TP* t) { for (int v : {0, 1, 65535}) t->add_int32_data(v); }},
      {"i8", TP::INT8, ir::DType::kI8, Bytes<int8_t>({-128, -1, 127}),
       [](TP* t) { for (int v : {-128, -1, 127}) t->add_int32_data(v); }},
      {"u8", TP::UINT8, ir::DType::kU8, Bytes<uint8_t>({0, 128, 255}),
       [](TP* t) { for (int v : {0, 128, 255}) t->add_int32_data(v); }},
      {"bool", TP::BOOL, ir::DType::kBool, Bytes<uint8_t>({1, 0, 1}),
       [](TP* t) { for (int v : {1, 0, 1}) t->add_int32_data(v); }},
      {"u32", TP::UINT32, ir::DType::kU32,
       Bytes<uint32_t>({0, 1, 4294967295u}),
       [](TP* t) { for (uint64_t v : {0ull, 1ull, 4294967295ull}) t->add_uint64_data(v); }},
      {"u64", TP::UINT64, ir::DType::kU64,
       Bytes<uint64_t>({0, 1, UINT64_MAX}),
       [](TP* t) { for (uint64_t v : {uint64_t{0}, uint64_t{1}, UINT64_MAX}) t->add_uint64_data(v); }},
  };
}

void PrintTo(const TypedCase& c, std::ostream* os) { *os << c.name; }

class TypedFieldTest : public ::testing::TestWithParam<TypedCase> {};

TEST_P(TypedFieldTest, TypedFieldDecodesToTheRawBytes) {
  const TypedCase& c = GetParam();
  auto owner = std::make_shared<onnx::TensorProto>(
      RawTensor("t", c.onnx_type, {3}, c.raw));
  ImportContext ctx;
  ctx.model_path = "m.onnx";
  ctx.proto_owner = owner;
  auto from_raw = TensorFromProto(*owner, ctx);
  ASSERT_THAT(from_raw, IsOk());
  EXPECT_EQ(from_raw->dtype, c.dtype);
  EXPECT_TRUE(from_raw->data.is_view());
  EXPECT_EQ(from_raw->data.data(),
            reinterpret_cast<const uint8_t*>(owner->raw_data().data()));

  onnx::TensorProto typed;
  typed.set_name("t");
  typed.set_data_type(c.onnx_type);
  typed.add_dims(3);
  c.fill_typed(&typed);
  auto from_typed = TensorFromProto(typed, ctx);
  ASSERT_THAT(from_typed, IsOk());
  EXPECT_FALSE(from_typed->data.is_view());
  EXPECT_EQ(AsString(from_typed->data), c.raw);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, TypedFieldTest,
                         ::testing::ValuesIn(TypedCases()),
                         [](const auto& info) { return info.param.name; });

absl::StatusOr<ir::Tensor> Convert(const onnx::TensorProto& t) {
  ImportContext ctx;
  ctx.model_path = "m.onnx";
  return TensorFromProto(t, ctx);
}

onnx::TensorProto Typed(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

TEST(TensorFromProtoTest, RejectsOutOfRangeNarrowValues) {
  onnx::TensorProto t = Typed(onnx::TensorProto::UINT8, {2});
  t.add_int32_data(5);
  t.add_int32_data(300);
  EXPECT_THAT(Convert(t), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("value 300 at index 1")));
  onnx::TensorProto b = Typed(onnx::TensorProto::BOOL, {1});
  b.add_int32_data(2);
  EXPECT_THAT(Convert(b), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("outside [0, 1] for bool")));
}

TEST(TensorFromProtoTest, RejectsValuesInTheWrongTypedField) {
  onnx::TensorProto t = Typed(onnx::TensorProto::FLOAT, {1});
  t.add_int64_data(1);
  EXPECT_THAT(Convert(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stores values in int64_data; expected "
                                 "float_data")));
}

TEST(TensorFromProtoTest, RejectsWrongTypedValueCount) {
  onnx::TensorProto t = Typed(onnx::TensorProto::INT64, {2, 2});
  t.add_int64_data(1);
  EXPECT_THAT(Convert(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int64_data has 1 values, expected 4")));
}

TEST(TensorFromProtoTest, EmptyTensorNeedsNoData) {
  auto t = Convert(Typed(onnx::TensorProto::FLOAT, {0, 3}));
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->data.size(), 0u);
  EXPECT_THAT(Convert(Typed(onnx::TensorProto::FLOAT, {2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has no data: f32[2] needs 8 bytes")));
}

TEST(TensorFromProtoTest, PackedInt4ComesFromRawDataOnly) {
  // Five int4 values take three bytes.
  auto t = Convert(RawTensor("q", 22, {5}, std::string("\x21\x43\x05", 3)));
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->dtype, ir::DType::kI4);
  EXPECT_EQ(t->data.size(), 3u);
  onnx::TensorProto typed = Typed(22, {2});
  typed.add_int32_data(0x21);
  EXPECT_THAT(Convert(typed), StatusIs(absl::StatusCode::kUnimplemented,
                                       HasSubstr("store them in raw_data")));
}

TEST(TensorFromProtoTest, ExternalDataNeedsAResolver) {
  onnx::TensorProto t = Typed(onnx::TensorProto::FLOAT, {1});
  testing::MakeExternal(&t, {{"location", "w.data"}});
  EXPECT_THAT(Convert(t), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("external data is not allowed")));
}

}  // namespace
}  // namespace slimpack::onnx_format
