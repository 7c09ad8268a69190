// Shape and data-movement kernels: Reshape, Transpose, Concat, Split, Slice,
// Squeeze/Unsqueeze, Flatten, Gather, Shape, Expand, Tile, Pad, and the
// tensor makers Cast, Constant, ConstantOfShape, Range.
#include <cmath>
#include <limits>

#include "ir/float_convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::ExpectValues;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::IrTensor;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(ReshapeTest, ZeroCopiesAndMinusOneInfers) {
  RtTensor x = F32({2, 3, 4}, Iota(24));
  ExpectFloats(RunOne({"Reshape", {{"x", x}, {"s", I64({3}, {0, -1, 2})}}}), {2, 6, 2}, Iota(24));
  ExpectFloats(RunOne({"Reshape", {{"x", x}, {"s", I64({2}, {-1, 8})}}}), {3, 8}, Iota(24));
  // allowzero=1: a literal 0 dim (valid only for an empty input).
  ExpectFloats(RunOne({"Reshape", {{"x", F32({0, 3}, {})}, {"s", I64({2}, {3, 0})}},
                       {{"allowzero", Attr::Int(1)}}}),
               {3, 0}, {});
  EXPECT_THAT((OpTest{"Reshape", {{"x", x}, {"s", I64({2}, {5, -1})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot infer -1")));
  EXPECT_THAT((OpTest{"Reshape", {{"x", x}, {"s", I64({2}, {-1, -1})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than one -1")));
}

TEST(ReshapeTest, OutputSharesStorage) {
  RtTensor x = F32({2, 2}, {1, 2, 3, 4});
  RtTensor y = RunOne({"Reshape", {{"x", x}, {"s", I64({1}, {4})}}});
  EXPECT_EQ(y.raw(), x.raw());  // a view, no copy
}

TEST(TransposeTest, PermAndDefaultReverse) {
  RtTensor x = F32({2, 3, 4}, Iota(24));
  RtTensor y = RunOne({"Transpose", {{"x", x}}, {{"perm", Attr::Ints({1, 2, 0})}}});
  std::vector<float> want;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i) want.push_back(static_cast<float>((i * 3 + j) * 4 + k));
  ExpectFloats(y, {3, 4, 2}, want);
  ExpectValues<int64_t>(RunOne({"Transpose", {{"x", I64({2, 3}, {1, 2, 3, 4, 5, 6})}}}), {3, 2},
                        {1, 4, 2, 5, 3, 6});
  EXPECT_THAT((OpTest{"Transpose", {{"x", x}}, {{"perm", Attr::Ints({0, 0, 1})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a permutation")));
}

TEST(ConcatSplitTest, ConcatAlongMiddleAxis) {
  RtTensor a = F32({2, 1, 2}, {1, 2, 3, 4}), b = F32({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  ExpectFloats(RunOne({"Concat", {{"a", a}, {"b", b}}, {{"axis", Attr::Int(-2)}}}), {2, 3, 2},
               {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  EXPECT_THAT((OpTest{"Concat", {{"a", a}, {"b", F32({3, 1, 2}, Iota(6))}}, {{"axis", Attr::Int(1)}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match input 0")));
}

TEST(ConcatSplitTest, SplitForms) {
  RtTensor x = F32({2, 5}, Iota(10));
  // Opset 13: sizes as input.
  auto out = OpTest{"Split", {{"x", x}, {"s", I64({2}, {2, 3})}}, {{"axis", Attr::Int(1)}}, 2}.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectFloats((*out)[0], {2, 2}, {0, 1, 5, 6});
  ExpectFloats((*out)[1], {2, 3}, {2, 3, 4, 7, 8, 9});
  // Opset 11: sizes as attribute.
  auto attr = OpTest{"Split", {{"x", x}}, {{"axis", Attr::Int(1)}, {"split", Attr::Ints({4, 1})}}, 2, 11}.Run();
  ASSERT_TRUE(attr.ok()) << attr.status();
  ExpectFloats((*attr)[1], {2, 1}, {4, 9});
  // Equal split along axis 0; opset 18 num_outputs with a smaller last part.
  auto eq = OpTest{"Split", {{"x", x}}, {}, 2}.Run();
  ASSERT_TRUE(eq.ok()) << eq.status();
  ExpectFloats((*eq)[1], {1, 5}, {5, 6, 7, 8, 9});
  auto n = OpTest{"Split", {{"x", x}}, {{"axis", Attr::Int(1)}, {"num_outputs", Attr::Int(2)}}, 2, 18}.Run();
  ASSERT_TRUE(n.ok()) << n.status();
  ExpectFloats((*n)[0], {2, 3}, {0, 1, 2, 5, 6, 7});
  ExpectFloats((*n)[1], {2, 2}, {3, 4, 8, 9});
  EXPECT_THAT((OpTest{"Split", {{"x", x}}, {{"axis", Attr::Int(1)}}, 2}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not split evenly")));
}

TEST(SliceTest, NegativeIndicesStepsAndClamping) {
  RtTensor x = F32({3, 4}, Iota(12));
  // rows 0..2 step 2, columns from -1 backwards to start (step -1).
  RtTensor y = RunOne({"Slice", {{"x", x}, {"s", I64({2}, {0, -1})}, {"e", I64({2}, {3, INT64_MIN})},
                                 {"a", I64({2}, {0, 1})}, {"st", I64({2}, {2, -1})}}});
  ExpectFloats(y, {2, 4}, {3, 2, 1, 0, 11, 10, 9, 8});
  // Out-of-range ends clamp; axes omitted means 0..n-1.
  ExpectFloats(RunOne({"Slice", {{"x", x}, {"s", I64({1}, {1})}, {"e", I64({1}, {1000})}}}), {2, 4},
               {4, 5, 6, 7, 8, 9, 10, 11});
  // Empty result when start >= end.
  ExpectFloats(RunOne({"Slice", {{"x", x}, {"s", I64({1}, {2})}, {"e", I64({1}, {1})},
                                 {"a", I64({1}, {1})}}}),
               {3, 0}, {});
  // Opset 1: attributes.
  ExpectFloats(RunOne({"Slice", {{"x", x}},
                       {{"starts", Attr::Ints({1})}, {"ends", Attr::Ints({3})}, {"axes", Attr::Ints({1})}},
                       1, 1}),
               {3, 2}, {1, 2, 5, 6, 9, 10});
  EXPECT_THAT((OpTest{"Slice", {{"x", x}, {"s", I64({1}, {0})}, {"e", I64({1}, {1})},
                                {"a", I64({1}, {0})}, {"st", I64({1}, {0})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("step is 0")));
}

TEST(SqueezeTest, AttributeAndInputForms) {
  RtTensor x = F32({1, 3, 1, 2}, Iota(6));
  EXPECT_EQ(RunOne({"Squeeze", {{"x", x}}}).dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(RunOne({"Squeeze", {{"x", x}}, {{"axes", Attr::Ints({-2})}}, 1, 11}).dims(),
            (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(RunOne({"Squeeze", {{"x", x}, {"a", I64({1}, {0})}}}).dims(),
            (std::vector<int64_t>{3, 1, 2}));
  EXPECT_THAT((OpTest{"Squeeze", {{"x", x}, {"a", I64({1}, {1})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 1 of size 3")));
  EXPECT_EQ(RunOne({"Unsqueeze", {{"x", F32({3}, Iota(3))}, {"a", I64({2}, {0, -1})}}}).dims(),
            (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(RunOne({"Unsqueeze", {{"x", F32({3}, Iota(3))}}, {{"axes", Attr::Ints({1})}}, 1, 11}).dims(),
            (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(RunOne({"Unsqueeze", {{"x", F32({}, {1})}, {"a", I64({1}, {0})}}}).dims(),
            (std::vector<int64_t>{1}));
}

TEST(FlattenTest, Axes) {
  RtTensor x = F32({2, 3, 4}, Iota(24));
  EXPECT_EQ(RunOne({"Flatten", {{"x", x}}}).dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(RunOne({"Flatten", {{"x", x}}, {{"axis", Attr::Int(0)}}}).dims(),
            (std::vector<int64_t>{1, 24}));
  EXPECT_EQ(RunOne({"Flatten", {{"x", x}}, {{"axis", Attr::Int(-1)}}}).dims(),
            (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(RunOne({"Flatten", {{"x", x}}, {{"axis", Attr::Int(3)}}}).dims(),
            (std::vector<int64_t>{24, 1}));
}

TEST(GatherTest, AxesNegativeIndicesAndBounds) {
  RtTensor data = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectFloats(RunOne({"Gather", {{"d", data}, {"i", I64({2, 2}, {0, 1, -1, 0})}}}), {2, 2, 2},
               {1, 2, 3, 4, 5, 6, 1, 2});
  ExpectFloats(RunOne({"Gather", {{"d", data}, {"i", I64({}, {1})}}, {{"axis", Attr::Int(1)}}}), {3},
               {2, 4, 6});
  RtTensor i32 = RtTensor::FromVector<int32_t>({1}, {2});
  ExpectFloats(RunOne({"Gather", {{"d", data}, {"i", i32}}}), {1, 2}, {5, 6});
  EXPECT_THAT((OpTest{"Gather", {{"d", data}, {"i", I64({1}, {3})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index 3 (element 0) is out of range for axis size 3")));
}

TEST(ShapeTest, ShapeWithStartEndAndSize) {
  RtTensor x = F32({2, 3, 4}, Iota(24));
  ExpectValues<int64_t>(RunOne({"Shape", {{"x", x}}}), {3}, {2, 3, 4});
  ExpectValues<int64_t>(RunOne({"Shape", {{"x", x}}, {{"start", Attr::Int(-2)}}}), {2}, {3, 4});
  ExpectValues<int64_t>(RunOne({"Shape", {{"x", x}}, {{"start", Attr::Int(1)}, {"end", Attr::Int(99)}}}),
                        {2}, {3, 4});
  ExpectValues<int64_t>(RunOne({"Size", {{"x", x}}}), {}, {24});
}

TEST(ExpandTileTest, ExpandIsBidirectionalBroadcast) {
  ExpectFloats(RunOne({"Expand", {{"x", F32({3, 1}, {1, 2, 3})}, {"s", I64({3}, {2, 1, 2})}}}),
               {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // A shape smaller than the input keeps the input's dims.
  ExpectFloats(RunOne({"Expand", {{"x", F32({2, 2}, {1, 2, 3, 4})}, {"s", I64({1}, {1})}}}), {2, 2},
               {1, 2, 3, 4});
  ExpectFloats(RunOne({"Tile", {{"x", F32({2, 2}, {1, 2, 3, 4})}, {"r", I64({2}, {2, 3})}}}), {4, 6},
               {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST(PadTest, Modes) {
  RtTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  RtTensor pads = I64({4}, {0, 2, 1, 1});  // [begin0, begin1, end0, end1]
  ExpectFloats(RunOne({"Pad", {{"x", x}, {"p", pads}, {"v", F32({}, {9})}}}), {3, 6},
               {9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9});
  ExpectFloats(RunOne({"Pad", {{"x", x}, {"p", pads}}, {{"mode", Attr::String("edge")}}}), {3, 6},
               {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6});
  ExpectFloats(RunOne({"Pad", {{"x", x}, {"p", pads}}, {{"mode", Attr::String("reflect")}}}), {3, 6},
               {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2});
  ExpectFloats(RunOne({"Pad", {{"x", x}, {"p", pads}}, {{"mode", Attr::String("wrap")}}}), {3, 6},
               {2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1});
  // Negative pads crop; opset 2 attribute form.
  ExpectFloats(RunOne({"Pad", {{"x", x}}, {{"pads", Attr::Ints({0, -1, 0, 0})}}, 1, 2}), {2, 2},
               {2, 3, 5, 6});
  // Opset 18 axes input.
  ExpectFloats(RunOne({"Pad", {{"x", x}, {"p", I64({2}, {1, 0})}, {"", RtTensor()}, {"a", I64({1}, {-1})}}}),
               {2, 4}, {0, 1, 2, 3, 0, 4, 5, 6});
}

TEST(CastTest, ConversionsSaturateAndRound) {
  RtTensor x = F32({5}, {1.9f, -1.9f, 3e10f, NAN, 0.0f});
  ExpectValues<int64_t>(RunOne({"Cast", {{"x", x}}, {{"to", Attr::Int(7)}}}), {5},
                        {1, -1, 30000001024, 0, 0});  // 3e10f is exactly this
  ExpectValues<int32_t>(RunOne({"Cast", {{"x", x}}, {{"to", Attr::Int(6)}}}), {5},
                        {1, -1, INT32_MAX, 0, 0});
  ExpectValues<bool>(RunOne({"Cast", {{"x", x}}, {{"to", Attr::Int(9)}}}), {5},
                     {true, true, true, true, false});
  ExpectFloats(RunOne({"Cast", {{"x", I64({2}, {-3, 1 << 20})}}, {{"to", Attr::Int(1)}}}), {2},
               {-3, 1 << 20});
  // f32 -> f16 -> f32 rounds to the nearest half.
  RtTensor h = RunOne({"Cast", {{"x", F32({2}, {1.0f / 3, 65504.0f})}}, {{"to", Attr::Int(10)}}});
  ASSERT_EQ(h.dtype(), ir::DType::kF16);
  EXPECT_EQ(h.data<uint16_t>()[0], ir::F32ToF16(1.0f / 3));
  ExpectFloats(RunOne({"Cast", {{"h", h}}, {{"to", Attr::Int(1)}}}), {2},
               {ir::F16ToF32(ir::F32ToF16(1.0f / 3)), 65504.0f}, 0, 0);
  ExpectValues<uint8_t>(RunOne({"CastLike", {{"x", F32({2}, {300, -5})}, {"l", RtTensor::FromVector<uint8_t>({1}, {0})}}}),
                        {2}, {255, 0});
  EXPECT_THAT((OpTest{"Cast", {{"x", x}}, {{"to", Attr::Int(8)}}}.Run()),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("ONNX type 8")));
}

TEST(ConstantTest, ValueFormsAndConstantOfShape) {
  std::vector<uint16_t> halves = {ir::F32ToF16(1.5f), ir::F32ToF16(-2.0f)};
  ir::Tensor half_value = IrTensor<uint16_t>("c", {2}, halves);
  half_value.dtype = ir::DType::kF16;  // f16 constants become f32
  ExpectFloats(RunOne({"Constant", {}, {{"value", Attr::TensorValue(half_value)}}}), {2},
               {1.5f, -2.0f});
  ExpectFloats(RunOne({"Constant", {}, {{"value_floats", Attr::Floats({1, 2})}}}), {2}, {1, 2});
  ExpectValues<int64_t>(RunOne({"Constant", {}, {{"value_int", Attr::Int(7)}}}), {}, {7});
  EXPECT_THAT((OpTest{"Constant", {}, {{"value_string", Attr::String("x")}}}.Run()),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("value_string")));
  ExpectFloats(RunOne({"ConstantOfShape", {{"s", I64({2}, {2, 3})}}}), {2, 3}, std::vector<float>(6, 0));
  ExpectValues<int64_t>(RunOne({"ConstantOfShape", {{"s", I64({1}, {3})}},
                                {{"value", Attr::TensorValue(IrTensor<int64_t>("v", {1}, {5}))}}}),
                        {3}, {5, 5, 5});
}

TEST(RangeTest, CountsAndDtypes) {
  ExpectFloats(RunOne({"Range", {{"s", F32({}, {1})}, {"l", F32({}, {2})}, {"d", F32({}, {0.3f})}}}),
               {4}, {1, 1.3f, 1.6f, 1.9f});
  ExpectValues<int64_t>(RunOne({"Range", {{"s", I64({}, {10})}, {"l", I64({}, {4})}, {"d", I64({}, {-3})}}}),
                        {2}, {10, 7});
  ExpectValues<int64_t>(RunOne({"Range", {{"s", I64({}, {5})}, {"l", I64({}, {5})}, {"d", I64({}, {1})}}}),
                        {0}, {});
  EXPECT_THAT((OpTest{"Range", {{"s", I64({}, {0})}, {"l", I64({}, {5})}, {"d", I64({}, {0})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delta is 0")));
}

TEST(IdentityDropoutTest, PassThrough) {
  RtTensor x = F32({2}, {1, 2});
  ExpectFloats(RunOne({"Identity", {{"x", x}}}), {2}, {1, 2});
  auto d = OpTest{"Dropout", {{"x", x}, {"r", F32({}, {0.5f})}}, {}, 2}.Run();
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectFloats((*d)[0], {2}, {1, 2});
  ExpectValues<bool>((*d)[1], {2}, {true, true});
  auto train = OpTest{"Dropout", {{"x", x}, {"r", F32({}, {0.5f})},
                                  {"t", RtTensor::FromVector<bool>({}, {true})}}}.Run();
  EXPECT_THAT(train, StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("training_mode")));
}

}  // namespace
}  // namespace slimpack::runtime
