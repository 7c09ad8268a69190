// GatherND, ScatterND, ScatterElements (and Scatter), Compress, OneHot and
// EyeLike on hand-computed cases, with the index errors they report.
#include <vector>

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
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

RtTensor Bools(std::vector<int64_t> dims, const std::vector<bool>& v) {
  return RtTensor::FromVector<bool>(std::move(dims), v);
}

TEST(GatherNdTest, TuplesSlicesAndBatchDims) {
  RtTensor data = F32({2, 2}, {0, 1, 2, 3});
  // Full tuples pick elements; a shorter tuple picks rows.
  ExpectFloats(RunOne({"GatherND", {{"d", data}, {"i", I64({2, 2}, {0, 0, 1, 1})}}}), {2}, {0, 3});
  ExpectFloats(RunOne({"GatherND", {{"d", data}, {"i", I64({2, 1}, {1, -2})}}}), {2, 2},
               {2, 3, 0, 1});
  // batch_dims=1: each batch row indexes its own data row.
  RtTensor d3 = F32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  ExpectFloats(RunOne({"GatherND", {{"d", d3}, {"i", I64({2, 1}, {1, 0})}},
                       {{"batch_dims", Attr::Int(1)}}}),
               {2, 2}, {2, 3, 4, 5});
  EXPECT_THAT((OpTest{"GatherND", {{"d", data}, {"i", I64({1, 2}, {0, 2})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index 2 (indices element 1) is out of range for axis size 2")));
}

TEST(ScatterNdTest, WritesAndReductions) {
  RtTensor data = F32({4}, {1, 2, 3, 4});
  RtTensor idx = I64({2, 1}, {3, 1});
  RtTensor upd = F32({2}, {10, 20});
  ExpectFloats(RunOne({"ScatterND", {{"d", data}, {"i", idx}, {"u", upd}}, {}, 1, 16}), {4},
               {1, 20, 3, 10});
  ExpectFloats(RunOne({"ScatterND", {{"d", data}, {"i", idx}, {"u", upd}},
                       {{"reduction", Attr::String("add")}}, 1, 16}),
               {4}, {1, 22, 3, 14});
  ExpectFloats(RunOne({"ScatterND", {{"d", data}, {"i", idx}, {"u", upd}},
                       {{"reduction", Attr::String("mul")}}, 1, 16}),
               {4}, {1, 40, 3, 40});
  // Slices: a row of a matrix.
  ExpectFloats(RunOne({"ScatterND", {{"d", F32({2, 2}, {1, 2, 3, 4})}, {"i", I64({1, 1}, {1})},
                                     {"u", F32({1, 2}, {8, 9})}}}),
               {2, 2}, {1, 2, 8, 9});
  EXPECT_THAT((OpTest{"ScatterND", {{"d", data}, {"i", idx}, {"u", F32({3}, {1, 2, 3})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("updates f32[3] must be [2]")));
}

TEST(ScatterElementsTest, AxisNegativeIndicesAndDuplicates) {
  RtTensor data = F32({2, 3}, {0, 0, 0, 0, 0, 0});
  ExpectFloats(RunOne({"ScatterElements",
                       {{"d", data}, {"i", I64({1, 2}, {2, -3})}, {"u", F32({1, 2}, {5, 6})}},
                       {{"axis", Attr::Int(1)}}, 1, 16}),
               {2, 3}, {6, 0, 5, 0, 0, 0});
  // Duplicates combine in order with a reduction.
  ExpectFloats(RunOne({"ScatterElements",
                       {{"d", data}, {"i", I64({1, 2}, {1, 1})}, {"u", F32({1, 2}, {5, 6})}},
                       {{"axis", Attr::Int(1)}, {"reduction", Attr::String("add")}}, 1, 16}),
               {2, 3}, {0, 11, 0, 0, 0, 0});
  // Scatter (opsets 9-10) is the same operation, axis 0 by default.
  ExpectFloats(RunOne({"Scatter", {{"d", data}, {"i", I64({1, 3}, {1, 0, 1})},
                                   {"u", F32({1, 3}, {1, 2, 3})}}, {}, 1, 10}),
               {2, 3}, {0, 2, 0, 1, 0, 3});
  EXPECT_THAT((OpTest{"ScatterElements",
                      {{"d", data}, {"i", I64({1, 1}, {2})}, {"u", F32({1, 1}, {1})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for axis size 2")));
}

TEST(CompressTest, FlattenedAndAlongAnAxis) {
  RtTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectFloats(RunOne({"Compress", {{"x", x}, {"c", Bools({3}, {false, true, true})}},
                       {{"axis", Attr::Int(1)}}}),
               {2, 2}, {2, 3, 5, 6});
  ExpectFloats(RunOne({"Compress", {{"x", x}, {"c", Bools({2}, {false, true})}},
                       {{"axis", Attr::Int(-2)}}}),
               {1, 3}, {4, 5, 6});
  // No axis: the flattened input; a shorter condition selects a prefix.
  ExpectFloats(RunOne({"Compress", {{"x", x}, {"c", Bools({4}, {true, false, false, true})}}}),
               {2}, {1, 4});
  EXPECT_THAT((OpTest{"Compress", {{"x", x}, {"c", Bools({4}, {false, false, false, true})}},
                      {{"axis", Attr::Int(1)}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("selects entry 3")));
}

TEST(OneHotTest, AxesNegativeAndOutOfRangeIndices) {
  RtTensor values = F32({2}, {0, 5});
  ExpectFloats(RunOne({"OneHot", {{"i", I64({3}, {0, -1, 7})}, {"d", F32({}, {3})}, {"v", values}},
                       {}, 1, 11}),
               {3, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0});
  // axis 0: the depth axis comes first.
  ExpectFloats(RunOne({"OneHot", {{"i", I64({2}, {1, 0})}, {"d", I64({1}, {2})}, {"v", values}},
                       {{"axis", Attr::Int(0)}}, 1, 11}),
               {2, 2}, {0, 5, 5, 0});
  ExpectValues<int64_t>(RunOne({"OneHot", {{"i", F32({1}, {1})}, {"d", F32({}, {2})},
                                          {"v", I64({2}, {-1, 1})}}, {}, 1, 11}),
                        {1, 2}, {-1, 1});
}

TEST(EyeLikeTest, DiagonalsAndDtype) {
  ExpectFloats(RunOne({"EyeLike", {{"x", F32({2, 3}, {9, 9, 9, 9, 9, 9})}}, {}, 1, 9}), {2, 3},
               {1, 0, 0, 0, 1, 0});
  ExpectValues<int64_t>(RunOne({"EyeLike", {{"x", F32({3, 2}, {0, 0, 0, 0, 0, 0})}},
                                {{"k", Attr::Int(-1)}, {"dtype", Attr::Int(7)}}, 1, 9}),
                        {3, 2}, {0, 0, 1, 0, 0, 1});
  EXPECT_THAT((OpTest{"EyeLike", {{"x", F32({2}, {0, 0})}}, {}, 1, 9}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 2-d")));
}

}  // namespace
}  // namespace slimpack::runtime
