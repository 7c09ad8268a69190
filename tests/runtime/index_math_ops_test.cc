// The less common kernels: Round/Sign/Mod/PRelu/IsInf, the extra
// reductions, GatherElements, Trilu, DepthToSpace and SpaceToDepth.
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
