// The less common kernels: Round/Sign/Mod/PRelu/IsInf, BitShift, the extra
// reductions, Hardmax, arithmetic on the narrower integer dtypes, Unique,
// GatherElements, Trilu, DepthToSpace and SpaceToDepth.
#include <cmath>
#include <limits>

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

TEST(MathOpsTest, RoundSignModPReluIsInf) {
  ExpectFloats(RunOne({"Round", {{"x", F32({5}, {0.5f, 1.5f, 2.5f, -0.5f, 2.6f})}}}), {5},
               {0, 2, 2, -0.0f, 3});
  ExpectValues<int64_t>(RunOne({"Sign", {{"x", I64({3}, {-5, 0, 7})}}}), {3}, {-1, 0, 1});
  RtTensor a = I64({4}, {7, -7, 7, -7}), b = I64({4}, {3, 3, -3, -3});
  ExpectValues<int64_t>(RunOne({"Mod", {{"a", a}, {"b", b}}}), {4}, {1, 2, -2, -1});
  ExpectValues<int64_t>(RunOne({"Mod", {{"a", a}, {"b", b}}, {{"fmod", Attr::Int(1)}}}), {4},
                        {1, -1, 1, -1});
  EXPECT_THAT((OpTest{"Mod", {{"a", a}, {"b", I64({1}, {0})}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Mod by zero")));
  // Per-channel slope [C,1,1] against [N,C,H,W].
  ExpectFloats(RunOne({"PRelu", {{"x", F32({1, 2, 1, 2}, {-1, 2, -3, 4})},
                                 {"s", F32({2, 1, 1}, {0.5f, 0.1f})}}}),
               {1, 2, 1, 2}, {-0.5f, 2, -0.3f, 4});
  const float inf = std::numeric_limits<float>::infinity();
  ExpectValues<bool>(RunOne({"IsInf", {{"x", F32({3}, {inf, -inf, 1})}}, {{"detect_negative", Attr::Int(0)}}}),
                     {3}, {true, false, false});
}

TEST(MathOpsTest, ExtraReductions) {
  RtTensor x = F32({2, 2}, {3, -4, 1, 2});
  const std::map<std::string, Attr> axis1 = {{"axes", Attr::Ints({1})}, {"keepdims", Attr::Int(0)}};
  ExpectFloats(RunOne({"ReduceL1", {{"x", x}}, axis1, 1, 13}), {2}, {7, 3});
  ExpectFloats(RunOne({"ReduceL2", {{"x", x}}, axis1, 1, 13}), {2}, {5, std::sqrt(5.0f)});
  ExpectFloats(RunOne({"ReduceSumSquare", {{"x", x}}, axis1, 1, 13}), {2}, {25, 5});
  ExpectFloats(RunOne({"ReduceLogSumExp", {{"x", x}}, axis1, 1, 13}), {2},
               {std::log(std::exp(3.0f) + std::exp(-4.0f)), std::log(std::exp(1.0f) + std::exp(2.0f))});
}

TEST(MathOpsTest, ReduceLogSumExpOnF64AndLargeValues) {
  const std::map<std::string, Attr> axis1 = {{"axes", Attr::Ints({1})}, {"keepdims", Attr::Int(0)}};
  RtTensor d = RtTensor::FromVector<double>({1, 2}, {1, 2});
  RtTensor got = RunOne({"ReduceLogSumExp", {{"x", d}}, axis1, 1, 13});
  ASSERT_EQ(got.dtype(), ir::DType::kF64);
  EXPECT_NEAR(got.data<double>()[0], std::log(std::exp(1.0) + std::exp(2.0)), 1e-12);
  // exp(1000) overflows; the maximum is taken out first.
  ExpectFloats(RunOne({"ReduceLogSumExp", {{"x", F32({1, 2}, {1000, 1000})}}, axis1, 1, 13}), {1},
               {1000 + std::log(2.0f)});
}

TEST(MathOpsTest, HardmaxPicksTheFirstMaximumPerAxisConvention) {
  RtTensor x = F32({2, 3}, {1, 3, 3, 5, 2, 1});
  ExpectFloats(RunOne({"Hardmax", {{"x", x}}, {}, 1, 13}), {2, 3}, {0, 1, 0, 1, 0, 0});
  ExpectFloats(RunOne({"Hardmax", {{"x", x}}, {{"axis", Attr::Int(0)}}, 1, 13}), {2, 3},
               {0, 1, 1, 1, 0, 0});
  // Before opset 13 the input is flattened to 2-d at `axis` (default 1).
  ExpectFloats(RunOne({"Hardmax", {{"x", x}}, {{"axis", Attr::Int(0)}}, 1, 11}), {2, 3},
               {0, 0, 0, 1, 0, 0});
}

TEST(MathOpsTest, BitShiftAndNarrowIntegerArithmetic) {
  RtTensor a = RtTensor::FromVector<uint8_t>({3}, {1, 16, 255});
  RtTensor b = RtTensor::FromVector<uint8_t>({3}, {2, 3, 8});
  ExpectValues<uint8_t>(RunOne({"BitShift", {{"a", a}, {"b", b}}, {{"direction", Attr::String("LEFT")}}}),
                        {3}, {4, 128, 0});
  ExpectValues<uint8_t>(RunOne({"BitShift", {{"a", a}, {"b", b}}, {{"direction", Attr::String("RIGHT")}}}),
                        {3}, {0, 2, 0});
  RtTensor big = RtTensor::FromVector<uint64_t>({1}, {uint64_t{1} << 63});
  RtTensor one = RtTensor::FromVector<uint64_t>({1}, {63});
  ExpectValues<uint64_t>(RunOne({"BitShift", {{"a", big}, {"b", one}}, {{"direction", Attr::String("RIGHT")}}}),
                         {1}, {1});
  EXPECT_THAT((OpTest{"BitShift", {{"a", a}, {"b", b}}, {{"direction", Attr::String("UP")}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("direction 'UP'")));
  // Max/Min and Div on unsigned and 16-bit types; u8 255 / 255 is 1.
  RtTensor u = RtTensor::FromVector<uint32_t>({2}, {4000000000u, 7});
  RtTensor v = RtTensor::FromVector<uint32_t>({2}, {1, 9});
  ExpectValues<uint32_t>(RunOne({"Max", {{"u", u}, {"v", v}}}), {2}, {4000000000u, 9});
  ExpectValues<int16_t>(RunOne({"Min", {{"a", RtTensor::FromVector<int16_t>({2}, {-300, 5})},
                                        {"b", RtTensor::FromVector<int16_t>({1}, {0})}}}),
                        {2}, {-300, 0});
  ExpectValues<uint8_t>(RunOne({"Div", {{"a", RtTensor::FromVector<uint8_t>({2}, {255, 254})},
                                        {"b", RtTensor::FromVector<uint8_t>({1}, {255})}}}),
                        {2}, {1, 0});
}

TEST(IndexOpsTest, UniqueSortedUnsortedAndAlongAnAxis) {
  RtTensor x = F32({6}, {2, 1, 1, 3, 4, 3});
  auto first = OpTest{"Unique", {{"x", x}}, {{"sorted", Attr::Int(0)}}, 4, 11}.Run();
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectFloats((*first)[0], {4}, {2, 1, 3, 4});
  ExpectValues<int64_t>((*first)[1], {4}, {0, 1, 3, 4});
  ExpectValues<int64_t>((*first)[2], {6}, {0, 1, 1, 2, 3, 2});
  ExpectValues<int64_t>((*first)[3], {4}, {1, 2, 2, 1});
  auto sorted = OpTest{"Unique", {{"x", x}}, {}, 4, 11}.Run();
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  ExpectFloats((*sorted)[0], {4}, {1, 2, 3, 4});
  ExpectValues<int64_t>((*sorted)[1], {4}, {1, 0, 3, 4});
  ExpectValues<int64_t>((*sorted)[2], {6}, {1, 0, 0, 2, 3, 2});
  ExpectValues<int64_t>((*sorted)[3], {4}, {2, 1, 2, 1});
  // Rows as the unit; NaNs are one value, sorted last.
  auto rows = OpTest{"Unique", {{"x", F32({3, 2}, {2, 3, 1, 0, 2, 3})}}, {{"axis", Attr::Int(0)}}, 4,
                     11}.Run();
  ASSERT_TRUE(rows.ok()) << rows.status();
  ExpectFloats((*rows)[0], {2, 2}, {1, 0, 2, 3});
  ExpectValues<int64_t>((*rows)[2], {3}, {1, 0, 1});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto nans = OpTest{"Unique", {{"x", F32({3}, {nan, 1, nan})}}, {}, 4, 11}.Run();
  ASSERT_TRUE(nans.ok()) << nans.status();
  ExpectFloats((*nans)[0], {2}, {1, nan});
  ExpectValues<int64_t>((*nans)[3], {2}, {1, 2});
}

TEST(IndexOpsTest, GatherElementsAndTrilu) {
  RtTensor data = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectFloats(RunOne({"GatherElements", {{"d", data}, {"i", I64({2, 2}, {2, 0, -1, 1})}},
                       {{"axis", Attr::Int(1)}}}),
               {2, 2}, {3, 1, 6, 5});
  EXPECT_THAT((OpTest{"GatherElements", {{"d", data}, {"i", I64({1, 1}, {3})}}, {{"axis", Attr::Int(1)}}}.Run()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
  RtTensor m = F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ExpectFloats(RunOne({"Trilu", {{"x", m}}}), {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  ExpectFloats(RunOne({"Trilu", {{"x", m}, {"k", I64({}, {-1})}}, {{"upper", Attr::Int(0)}}}), {3, 3},
               {0, 0, 0, 4, 0, 0, 7, 8, 0});
}

TEST(IndexOpsTest, DepthToSpaceInvertsSpaceToDepth) {
  std::vector<float> v(1 * 8 * 2 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  RtTensor x = F32({1, 8, 2, 3}, v);
  // DCR by hand: out[c, h*2+bh, w*2+bw] = x[(bh*2+bw)*2 + c, h, w].
  RtTensor d = RunOne({"DepthToSpace", {{"x", x}}, {{"blocksize", Attr::Int(2)}}});
  std::vector<float> want;
  for (int c = 0; c < 2; ++c)
    for (int oh = 0; oh < 4; ++oh)
      for (int ow = 0; ow < 6; ++ow) {
        const int bh = oh % 2, bw = ow % 2, ic = (bh * 2 + bw) * 2 + c;
        want.push_back(v[(ic * 2 + oh / 2) * 3 + ow / 2]);
      }
  ExpectFloats(d, {1, 2, 4, 6}, want);
  // SpaceToDepth undoes DCR DepthToSpace.
  ExpectFloats(RunOne({"SpaceToDepth", {{"d", d}}, {{"blocksize", Attr::Int(2)}}}), {1, 8, 2, 3}, v);
  // CRD: out[c, h*2+bh, w*2+bw] = x[c*4 + bh*2 + bw, h, w].
  RtTensor crd = RunOne({"DepthToSpace", {{"x", x}}, {{"blocksize", Attr::Int(2)}, {"mode", Attr::String("CRD")}}});
  EXPECT_EQ(crd.data<float>()[1], v[(1 * 2 + 0) * 3 + 0]);  // c0, oh0, ow1 -> ic 1
  EXPECT_EQ(crd.data<float>()[6], v[(2 * 2 + 0) * 3 + 0]);  // c0, oh1, ow0 -> ic 2
}

}  // namespace
}  // namespace slimpack::runtime
