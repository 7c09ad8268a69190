// Reductions, ArgMax/ArgMin, CumSum and TopK.
#include <cmath>
#include <string>

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

// [2,3] = {{1,2,3},{4,5,6}}.
RtTensor X23() { return F32({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(ReduceTest, AxesAsAttributeOrInputAndKeepdims) {
  // Opset 13 ReduceMean: axes attribute.
  ExpectFloats(RunOne({"ReduceMean", {{"x", X23()}}, {{"axes", Attr::Ints({1})}}, 1, 13}), {2, 1},
               {2, 5});
  // Opset 18: axes input, negative axis, keepdims=0.
  ExpectFloats(RunOne({"ReduceMean", {{"x", X23()}, {"axes", I64({1}, {-2})}},
                       {{"keepdims", Attr::Int(0)}}, 1, 18}),
               {3}, {2.5f, 3.5f, 4.5f});
  // No axes: everything.
  ExpectFloats(RunOne({"ReduceSum", {{"x", X23()}}}), {1, 1}, {21});
  ExpectFloats(RunOne({"ReduceSum", {{"x", X23()}}, {{"keepdims", Attr::Int(0)}}}), {}, {21});
  // Empty axes with noop_with_empty_axes: identity.
  ExpectFloats(RunOne({"ReduceSum", {{"x", X23()}, {"axes", I64({0}, {})}},
                       {{"noop_with_empty_axes", Attr::Int(1)}}}),
               {2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectFloats(RunOne({"ReduceMax", {{"x", X23()}}, {{"axes", Attr::Ints({0})}}}), {1, 3}, {4, 5, 6});
  ExpectFloats(RunOne({"ReduceMin", {{"x", X23()}}, {{"axes", Attr::Ints({1})}}}), {2, 1}, {1, 4});
  ExpectFloats(RunOne({"ReduceProd", {{"x", X23()}}, {{"axes", Attr::Ints({1})}}}), {2, 1},
               {6, 120});
  ExpectValues<int64_t>(RunOne({"ReduceSum", {{"x", I64({2, 2}, {1, 2, 3, 4})}, {"a", I64({1}, {0})}}}),
                        {1, 2}, {4, 6});
}

TEST(ReduceTest, MiddleAxisOfRank4) {
  std::vector<float> v(2 * 3 * 2 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  RtTensor y = RunOne({"ReduceSum", {{"x", F32({2, 3, 2, 2}, v)}}, {{"axes", Attr::Ints({1, 3})}}, 1, 11});
  std::vector<float> want;
  for (int a = 0; a < 2; ++a) {
    for (int c = 0; c < 2; ++c) {
      float s = 0;
      for (int b = 0; b < 3; ++b)
        for (int d = 0; d < 2; ++d) s += v[((a * 3 + b) * 2 + c) * 2 + d];
      want.push_back(s);
    }
  }
  ExpectFloats(y, {2, 1, 2, 1}, want);
}

// Sums over trailing axes take a register fast path; every reduction adds
// in input order in double, so the bits are those of this loop, on trailing
// axes and on a leading one (the general walk) alike.
TEST(ReduceTest, SumsAddInInputOrderInDoubleOnEitherPath) {
  const int64_t a = 3, b = 5, c = 203;
  std::vector<float> v(static_cast<size_t>(a * b * c));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i))) * (i % 7 == 0 ? 3e4f : 1e-3f);
  }
  const RtTensor x = F32({a, b, c}, v);
  // out[o] over the run of `n` elements starting at o * n with stride 1
  // (trailing) or over a at fixed (b, c) (leading).
  auto expect = [&](const char* op, std::vector<int64_t> axes, bool trailing) {
    SCOPED_TRACE(std::string(op) + (trailing ? " trailing" : " leading"));
    const RtTensor y = RunOne({op, {{"x", x}}, {{"axes", Attr::Ints(axes)}}, 1, 13});
    const int64_t n = trailing ? (axes.size() == 2 ? b * c : c) : a;
    const int64_t outs = static_cast<int64_t>(v.size()) / n;
    ASSERT_EQ(y.num_elements(), outs);
    for (int64_t o = 0; o < outs; ++o) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double e = v[static_cast<size_t>(trailing ? o * n + k : k * b * c + o)];
        s = s + (std::string(op) == "ReduceSumSquare" || std::string(op) == "ReduceL2" ? e * e : e);
      }
      const std::string name(op);
      const float want = name == "ReduceMean"  ? static_cast<float>(s / static_cast<double>(n))
                         : name == "ReduceL2" ? static_cast<float>(std::sqrt(s))
                                              : static_cast<float>(s);
      ASSERT_EQ(y.data<float>()[o], want) << "output " << o;
    }
  };
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL2"}) {
    expect(op, {2}, true);
    expect(op, {1, 2}, true);
    expect(op, {0}, false);
  }
}

TEST(ReduceTest, BadAxisIsAnError) {
  auto out = OpTest{"ReduceSum", {{"x", X23()}}, {{"axes", Attr::Ints({2})}}, 1, 11}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("axis 2 is out of range for rank 2")));
}

TEST(ArgTest, ArgMaxArgMinWithTiesAndKeepdims) {
  RtTensor x = F32({2, 4}, {1, 3, 3, 0, 5, 5, -1, -1});
  ExpectValues<int64_t>(RunOne({"ArgMax", {{"x", x}}, {{"axis", Attr::Int(1)}}}), {2, 1}, {1, 0});
  ExpectValues<int64_t>(RunOne({"ArgMax", {{"x", x}},
                                {{"axis", Attr::Int(1)}, {"select_last_index", Attr::Int(1)}}}),
                        {2, 1}, {2, 1});
  ExpectValues<int64_t>(RunOne({"ArgMin", {{"x", x}}, {{"axis", Attr::Int(-1)}, {"keepdims", Attr::Int(0)}}}),
                        {2}, {3, 2});
  ExpectValues<int64_t>(RunOne({"ArgMax", {{"x", x}}}), {1, 4}, {1, 1, 0, 0});
}

TEST(CumSumTest, ExclusiveAndReverse) {
  RtTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  RtTensor axis1 = I64({}, {1});
  ExpectFloats(RunOne({"CumSum", {{"x", x}, {"a", axis1}}}), {2, 3}, {1, 3, 6, 4, 9, 15});
  ExpectFloats(RunOne({"CumSum", {{"x", x}, {"a", axis1}}, {{"exclusive", Attr::Int(1)}}}), {2, 3},
               {0, 1, 3, 0, 4, 9});
  ExpectFloats(RunOne({"CumSum", {{"x", x}, {"a", axis1}}, {{"reverse", Attr::Int(1)}}}), {2, 3},
               {6, 5, 3, 15, 11, 6});
  ExpectFloats(RunOne({"CumSum", {{"x", x}, {"a", I64({1}, {0})}},
                       {{"reverse", Attr::Int(1)}, {"exclusive", Attr::Int(1)}}}),
               {2, 3}, {4, 5, 6, 0, 0, 0});
}

TEST(TopKTest, LargestSmallestAndTies) {
  RtTensor x = F32({2, 4}, {3, 1, 3, 2, 0, 9, 8, 9});
  auto out = OpTest{"TopK", {{"x", x}, {"k", I64({1}, {3})}}, {}, 2}.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectFloats((*out)[0], {2, 3}, {3, 3, 2, 9, 9, 8});
  ExpectValues<int64_t>((*out)[1], {2, 3}, {0, 2, 3, 1, 3, 2});  // ties: lower index first
  auto small = OpTest{"TopK", {{"x", x}, {"k", I64({1}, {2})}},
                      {{"largest", Attr::Int(0)}, {"axis", Attr::Int(0)}}, 2}.Run();
  ASSERT_TRUE(small.ok()) << small.status();
  ExpectFloats((*small)[0], {2, 4}, {0, 1, 3, 2, 3, 9, 8, 9});
  ExpectValues<int64_t>((*small)[1], {2, 4}, {1, 0, 0, 0, 0, 1, 1, 1});
  auto too_big = OpTest{"TopK", {{"x", x}, {"k", I64({1}, {5})}}, {}, 2}.Run();
  EXPECT_THAT(too_big, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("K=5")));
}

}  // namespace
}  // namespace slimpack::runtime
