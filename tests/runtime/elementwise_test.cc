// Element-wise kernels: numpy broadcasting against a naive index loop,
// integer semantics, comparisons, Where, unary functions and Clip forms.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/portable_math.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::ExpectValues;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

// Naive broadcast: element at out index (i0,i1,i2) reads each operand at the
// index with size-1 axes pinned to 0 (operands right-aligned to rank 3).
float At3(const std::vector<float>& v, std::vector<int64_t> dims, int64_t i0,
          int64_t i1, int64_t i2) {
  while (dims.size() < 3) dims.insert(dims.begin(), 1);
  const int64_t a = dims[0] == 1 ? 0 : i0, b = dims[1] == 1 ? 0 : i1,
                c = dims[2] == 1 ? 0 : i2;
  return v[(a * dims[1] + b) * dims[2] + c];
}

struct BroadcastCase {
  std::vector<int64_t> a, b, out;
};

class BroadcastTest : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(BroadcastTest, ArithmeticMatchesNaiveLoop) {
  const BroadcastCase& c = GetParam();
  auto count = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return static_cast<size_t>(n);
  };
  const auto va = Random(count(c.a), 1), vb = Random(count(c.b), 2, 0.5f, 2.0f);
  for (const std::string op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    RtTensor y = RunOne({op, {{"a", F32(c.a, va)}, {"b", F32(c.b, vb)}}});
    std::vector<float> want;
    std::vector<int64_t> out3 = c.out;
    while (out3.size() < 3) out3.insert(out3.begin(), 1);
    for (int64_t i = 0; i < out3[0]; ++i) {
      for (int64_t j = 0; j < out3[1]; ++j) {
        for (int64_t k = 0; k < out3[2]; ++k) {
          const float x = At3(va, c.a, i, j, k), z = At3(vb, c.b, i, j, k);
          want.push_back(op == "Add" ? x + z : op == "Sub" ? x - z : op == "Mul" ? x * z
                         : op == "Div" ? x / z : op == "Max" ? std::max(x, z) : std::min(x, z));
        }
      }
    }
    SCOPED_TRACE(op);
    ExpectFloats(y, c.out, want, 0, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BroadcastTest,
    ::testing::Values(BroadcastCase{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                      BroadcastCase{{2, 3, 4}, {4}, {2, 3, 4}},
                      BroadcastCase{{2, 3, 4}, {}, {2, 3, 4}},
                      BroadcastCase{{}, {2, 3}, {2, 3}},
                      BroadcastCase{{2, 1, 4}, {3, 1}, {2, 3, 4}},
                      BroadcastCase{{1, 3, 1}, {2, 1, 5}, {2, 3, 5}},
                      BroadcastCase{{3, 1}, {1, 4}, {3, 4}},
                      BroadcastCase{{2, 0, 3}, {3}, {2, 0, 3}},
                      // Axis merging in the broadcast loop: trailing axes
                      // both operands walk contiguously merge, broadcast
                      // axes merge with broadcast neighbours only.
                      BroadcastCase{{2, 3, 4}, {3, 4}, {2, 3, 4}},
                      BroadcastCase{{2, 3, 4}, {1, 3, 4}, {2, 3, 4}},
                      BroadcastCase{{1, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                      BroadcastCase{{2, 3, 4}, {3, 1}, {2, 3, 4}},
                      BroadcastCase{{2, 3, 4}, {2, 1, 1}, {2, 3, 4}},
                      BroadcastCase{{2, 1, 4}, {2, 3, 4}, {2, 3, 4}},
                      BroadcastCase{{2, 1, 4}, {2, 1, 1}, {2, 1, 4}},
                      BroadcastCase{{2, 3, 1}, {1, 1, 5}, {2, 3, 5}},
                      BroadcastCase{{5, 1, 37}, {5, 6, 37}, {5, 6, 37}},
                      // One operand full, the other one value per row (a
                      // norm's statistic) or one vector for every row (its
                      // weight, a bias), on either side: the row loops.
                      BroadcastCase{{2, 3, 37}, {2, 3, 1}, {2, 3, 37}},
                      BroadcastCase{{2, 3, 1}, {2, 3, 37}, {2, 3, 37}},
                      BroadcastCase{{37}, {2, 3, 37}, {2, 3, 37}},
                      BroadcastCase{{1, 1, 37}, {2, 3, 37}, {2, 3, 37}},
                      BroadcastCase{{2, 3, 37}, {3, 37}, {2, 3, 37}},
                      BroadcastCase{{2, 3, 37}, {1, 3, 1}, {2, 3, 37}}));

TEST(ElementwiseTest, IncompatibleShapesNameTheAxis) {
  auto out = OpTest{"Add", {{"a", F32({2, 3}, Random(6, 1))}, {"b", F32({4}, Random(4, 2))}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("axis 1 has sizes 3 and 4")));
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'n0' (Add)")));
}

TEST(ElementwiseTest, MixedDtypesAreRejected) {
  auto out = OpTest{"Add", {{"a", F32({1}, {1})}, {"b", I64({1}, {1})}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtypes differ")));
}

TEST(ElementwiseTest, IntegerArithmeticTruncatesAndWraps) {
  RtTensor a = I64({4}, {7, -7, INT64_MAX, INT64_MIN});
  RtTensor b = I64({4}, {2, 2, 1, -1});
  ExpectValues<int64_t>(RunOne({"Div", {{"a", a}, {"b", b}}}), {4}, {3, -3, INT64_MAX, INT64_MIN});
  ExpectValues<int64_t>(RunOne({"Add", {{"a", a}, {"b", b}}}), {4},
                        {9, -5, INT64_MIN, INT64_MAX});  // wraps, no UB
  ExpectValues<int64_t>(RunOne({"Mul", {{"a", I64({2}, {3, -4})}, {"b", I64({}, {5})}}}), {2},
                        {15, -20});
}

TEST(ElementwiseTest, IntegerDivisionByZeroIsAnError) {
  auto out = OpTest{"Div", {{"a", I64({2}, {1, 2})}, {"b", I64({2}, {1, 0})}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("integer division by zero (divisor element 1)")));
}

TEST(ElementwiseTest, PowWithFloatAndIntegerExponents) {
  RtTensor x = F32({3}, {2.0f, -3.0f, 4.0f});
  ExpectFloats(RunOne({"Pow", {{"x", x}, {"y", F32({}, {2.0f})}}}), {3}, {4, 9, 16});
  ExpectFloats(RunOne({"Pow", {{"x", x}, {"y", I64({3}, {3, 2, 0})}}}), {3}, {8, 9, 1});
  ExpectFloats(RunOne({"Pow", {{"x", x}, {"y", F32({}, {0.5f})}}}), {3},
               {std::sqrt(2.0f), NAN, 2.0f});
  ExpectValues<int64_t>(RunOne({"Pow", {{"x", I64({2}, {3, -2})}, {"y", I64({2}, {3, 3})}}}), {2},
                        {27, -8});
  // Unsigned exponents on a float base; a float exponent on an integer base
  // keeps the base's type (truncated, as numpy's astype).
  ExpectFloats(RunOne({"Pow", {{"x", x}, {"y", RtTensor::FromVector<uint64_t>({1}, {3})}}}), {3},
               {8, -27, 64});
  ExpectValues<int64_t>(RunOne({"Pow", {{"x", I64({3}, {4, 9, 2})}, {"y", F32({}, {0.5f})}}}),
                        {3}, {2, 3, 1});
}

TEST(ElementwiseTest, VariadicMaxMinSumMean) {
  RtTensor a = F32({2}, {1, 5}), b = F32({2, 1}, {3, -1}), c = F32({}, {2});
  ExpectFloats(RunOne({"Max", {{"a", a}, {"b", b}, {"c", c}}}), {2, 2}, {3, 5, 2, 5});
  ExpectFloats(RunOne({"Min", {{"a", a}, {"b", b}, {"c", c}}}), {2, 2}, {1, 2, -1, -1});
  ExpectFloats(RunOne({"Sum", {{"a", a}, {"b", b}, {"c", c}}}), {2, 2}, {6, 10, 2, 6});
  ExpectFloats(RunOne({"Mean", {{"a", a}, {"b", b}}}), {2, 2}, {2, 4, 0, 2});
  ExpectFloats(RunOne({"Max", {{"a", a}}}), {2}, {1, 5});
}

TEST(ElementwiseTest, ComparisonsProduceBool) {
  RtTensor a = F32({3}, {1, 2, 3}), b = F32({}, {2});
  ExpectValues<bool>(RunOne({"Equal", {{"a", a}, {"b", b}}}), {3}, {false, true, false});
  ExpectValues<bool>(RunOne({"Less", {{"a", a}, {"b", b}}}), {3}, {true, false, false});
  ExpectValues<bool>(RunOne({"Greater", {{"a", a}, {"b", b}}}), {3}, {false, false, true});
  ExpectValues<bool>(RunOne({"LessOrEqual", {{"a", a}, {"b", b}}}), {3}, {true, true, false});
  ExpectValues<bool>(RunOne({"GreaterOrEqual", {{"a", a}, {"b", b}}}), {3}, {false, true, true});
  ExpectValues<bool>(RunOne({"Equal", {{"a", I64({2, 1}, {4, 5})}, {"b", I64({2}, {5, 4})}}}),
                     {2, 2}, {false, true, true, false});
}

TEST(ElementwiseTest, LogicOps) {
  RtTensor p = RtTensor::FromVector<bool>({4}, {true, true, false, false});
  RtTensor q = RtTensor::FromVector<bool>({4}, {true, false, true, false});
  ExpectValues<bool>(RunOne({"And", {{"p", p}, {"q", q}}}), {4}, {true, false, false, false});
  ExpectValues<bool>(RunOne({"Or", {{"p", p}, {"q", q}}}), {4}, {true, true, true, false});
  ExpectValues<bool>(RunOne({"Xor", {{"p", p}, {"q", q}}}), {4}, {false, true, true, false});
  ExpectValues<bool>(RunOne({"Not", {{"p", p}}}), {4}, {false, false, true, true});
}

TEST(ElementwiseTest, WhereBroadcastsAllThreeOperands) {
  RtTensor cond = RtTensor::FromVector<bool>({2, 1}, {true, false});
  RtTensor x = F32({3}, {1, 2, 3});
  RtTensor y = F32({}, {-1});
  ExpectFloats(RunOne({"Where", {{"c", cond}, {"x", x}, {"y", y}}}), {2, 3},
               {1, 2, 3, -1, -1, -1});
  ExpectValues<int64_t>(
      RunOne({"Where", {{"c", cond}, {"x", I64({1}, {7})}, {"y", I64({2, 2}, {1, 2, 3, 4})}}}),
      {2, 2}, {7, 7, 3, 4});
}

TEST(ElementwiseTest, UnaryFunctionsMatchStd) {
  const std::vector<float> v = {-2.5f, -0.5f, 0.0f, 0.25f, 1.5f, 3.0f};
  RtTensor x = F32({6}, v);
  struct Case {
    const char* op;
    float (*fn)(float);
  };
  const Case cases[] = {
      {"Exp", [](float a) { return std::exp(a); }},
      {"Tanh", [](float a) { return std::tanh(a); }},
      {"Erf", [](float a) { return std::erf(a); }},
      {"Neg", [](float a) { return -a; }},
      {"Abs", [](float a) { return std::fabs(a); }},
      {"Reciprocal", [](float a) { return 1.0f / a; }},
      {"Relu", [](float a) { return a > 0 ? a : 0.0f; }},
      {"Floor", [](float a) { return std::floor(a); }},
      {"Ceil", [](float a) { return std::ceil(a); }},
      {"Sin", [](float a) { return std::sin(a); }},
      {"Cos", [](float a) { return std::cos(a); }},
      {"Sigmoid", [](float a) { return static_cast<float>(1.0 / (1.0 + std::exp(-double{a}))); }},
      {"Softplus", [](float a) { return static_cast<float>(std::log1p(std::exp(double{a}))); }},
      {"HardSwish", [](float a) { return a * std::min(1.0f, std::max(0.0f, a / 6 + 0.5f)); }},
      {"Gelu", [](float a) {
         return static_cast<float>(0.5 * a * (1 + std::erf(a / std::sqrt(2.0))));
       }},
  };
  for (const Case& c : cases) {
    std::vector<float> want;
    for (float a : v) want.push_back(c.fn(a));
    SCOPED_TRACE(c.op);
    ExpectFloats(RunOne({c.op, {{"x", x}}}), {6}, want, 1e-6f, 1e-6f);
  }
  std::vector<float> pos = {0.25f, 1.0f, 9.0f};
  ExpectFloats(RunOne({"Sqrt", {{"x", F32({3}, pos)}}}), {3}, {0.5f, 1.0f, 3.0f});
  ExpectFloats(RunOne({"Log", {{"x", F32({3}, pos)}}}), {3},
               {std::log(0.25f), 0.0f, std::log(9.0f)});
  ExpectValues<int64_t>(RunOne({"Neg", {{"x", I64({2}, {3, -4})}}}), {2}, {-3, 4});
  ExpectValues<int64_t>(RunOne({"Abs", {{"x", I64({2}, {3, -4})}}}), {2}, {3, 4});
}

// HardSwish and HardSigmoid run a wide vector loop (16 lanes with AVX-512,
// 8 with AVX2), a 4-lane SSE loop and a scalar tail: every element,
// whichever computes it (the values are rotated through every position of
// a 47-long input, and lengths 1..20 run too), has the bits of the scalar
// definition (std::min/std::max, which map NaN to 0 before the product),
// including NaN, infinities, signed zeros and the clamp boundaries.
TEST(ElementwiseTest, HardSwishAndHardSigmoidGiveTheScalarBitsEverywhere) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {nan, inf, -inf, 0.0f, -0.0f, -3.0f, 3.0f, -2.5f, 2.5f, 1e-30f,
                          -1e30f, 1e30f, 2.9999998f, -2.9999998f};
  for (float r : Random(29, 3)) v.push_back(r * 8.0f);  // 43 values: a ragged tail
  const float alpha = 0.3f, beta = 0.45f;
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  for (float r : Random(4, 7)) v.push_back(r * 8.0f);  // 47: 32 + 8 + 4 + 3 with AVX-512
  std::vector<std::vector<float>> inputs;
  for (size_t shift = 0; shift < v.size(); ++shift) {
    std::vector<float> x = v;
    std::rotate(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(shift), x.end());
    inputs.push_back(std::move(x));
  }
  for (size_t n = 1; n <= 20; ++n) {
    inputs.emplace_back(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  }
  for (const std::vector<float>& x : inputs) {
    const size_t n = x.size();
    auto swish = RunOne({"HardSwish", {{"x", F32({static_cast<int64_t>(n)}, x)}}});
    auto sigmoid = OpTest{"HardSigmoid",
                          {{"x", F32({static_cast<int64_t>(n)}, x)}},
                          {{"alpha", ir::Attribute::Float(alpha)},
                           {"beta", ir::Attribute::Float(beta)}}}
                       .Run();
    ASSERT_TRUE(sigmoid.ok()) << sigmoid.status();
    const std::vector<float> ys = swish.ToVector<float>(), yg = (*sigmoid)[0].ToVector<float>();
    ASSERT_EQ(ys.size(), n);
    ASSERT_EQ(yg.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const float a = x[i];
      const float want_s = a * std::min(1.0f, std::max(0.0f, a / 6.0f + 0.5f));
      const float want_g = std::min(1.0f, std::max(0.0f, alpha * a + beta));
      EXPECT_EQ(bits(ys[i]), bits(want_s)) << "HardSwish(" << a << ") at " << i << " of " << n;
      EXPECT_EQ(bits(yg[i]), bits(want_g)) << "HardSigmoid(" << a << ") at " << i << " of " << n;
    }
  }
}

// Erf is a branch-free rational approximation (vectorisable), not libm's
// erff: it must stay within a few f32 ulp of std::erf over the whole line,
// be odd, saturate at +-1 and keep NaN.
TEST(ElementwiseTest, ErfMatchesStdOverTheRealLine) {
  std::vector<float> v;
  for (int i = -1200; i <= 1200; ++i) v.push_back(static_cast<float>(i) / 200.0f);
  // Near zero the kernel switches to the linear term (below 2^-20): check
  // both sides of the switch relatively, subnormal inputs included.
  for (float t : {1e-40f, 1e-30f, 1e-12f, 9.0e-7f, 1.0e-6f, 3e-6f, 1e-4f}) {
    v.push_back(t);
    v.push_back(-t);
  }
  v.push_back(30.0f);
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n = static_cast<int64_t>(v.size());
  RtTensor y = RunOne({"Erf", {{"x", F32({n}, v)}}});
  ASSERT_EQ(y.num_elements(), n);
  double worst = 0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float got = y.data<float>()[i];
    const double want = std::erf(static_cast<double>(v[i]));
    worst = std::max(worst, std::fabs(got - want));
    EXPECT_LE(std::fabs(got), 1.0f) << "x=" << v[i];
    // (Relative only for normal results: a subnormal has fewer bits.)
    if (std::fabs(v[i]) < 1e-3f && std::fabs(v[i]) >= std::numeric_limits<float>::min()) {
      EXPECT_NEAR(got / want, 1.0, 1e-6) << "x=" << v[i];
    }
  }
  EXPECT_LE(worst, 5e-7);
  EXPECT_TRUE(std::isnan(y.data<float>()[n - 1]));
  // Odd: erf(-x) == -erf(x) exactly (the clamp and polynomials are odd).
  for (int64_t i = 0; i <= 1200; ++i) {
    ASSERT_EQ(y.data<float>()[i], -y.data<float>()[2400 - i]) << "x=" << v[i];
  }
  EXPECT_EQ(y.data<float>()[n - 3], 1.0f);
  EXPECT_EQ(y.data<float>()[n - 2], -1.0f);
}

TEST(ElementwiseTest, ActivationsWithAttributes) {
  RtTensor x = F32({4}, {-2, -0.5f, 0.5f, 4});
  ExpectFloats(RunOne({"LeakyRelu", {{"x", x}}}), {4}, {-0.02f, -0.005f, 0.5f, 4});
  ExpectFloats(RunOne({"LeakyRelu", {{"x", x}}, {{"alpha", ir::Attribute::Float(0.5f)}}}), {4},
               {-1, -0.25f, 0.5f, 4});
  ExpectFloats(RunOne({"HardSigmoid", {{"x", x}}}), {4}, {0.1f, 0.4f, 0.6f, 1.0f});
  ExpectFloats(RunOne({"HardSigmoid", {{"x", x}},
                       {{"alpha", ir::Attribute::Float(0.5f)}, {"beta", ir::Attribute::Float(0.25f)}}}),
               {4}, {0.0f, 0.0f, 0.5f, 1.0f});
  ExpectFloats(RunOne({"Elu", {{"x", x}}}), {4}, {std::expm1(-2.0f), std::expm1(-0.5f), 0.5f, 4});
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
  std::vector<float> want;
  for (float a : {-2.0f, -0.5f, 0.5f, 4.0f}) {
    want.push_back(0.5f * a * (1 + std::tanh(k * (a + 0.044715f * a * a * a))));
  }
  ExpectFloats(RunOne({"Gelu", {{"x", x}}, {{"approximate", ir::Attribute::String("tanh")}}}),
               {4}, want, 1e-6f, 1e-6f);
  EXPECT_THAT((OpTest{"Gelu", {{"x", x}}, {{"approximate", ir::Attribute::String("erf")}}}.Run()),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("supported: none, tanh")));
}

// Sigmoid and Exp take their exps four at a time (pmath::ExpArray); every
// element still has the bits of the scalar formulas, specials included, at
// a length that leaves a partial block and a partial lane group.
TEST(ElementwiseTest, SigmoidAndExpHaveTheScalarFormulasBits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, std::nanf(""), 708.5f, -708.5f, 88.0f, -88.0f,
                          1e-39f, -1e-39f, 3e38f, -3e38f};
  for (int i = 0; v.size() < 1031; ++i) v.push_back(-30.0f + 0.0587f * static_cast<float>(i));
  const RtTensor x = F32({static_cast<int64_t>(v.size())}, v);
  const std::vector<float> sig = RunOne({"Sigmoid", {{"x", x}}}).ToVector<float>();
  const std::vector<float> ex = RunOne({"Exp", {{"x", x}}}).ToVector<float>();
  ASSERT_EQ(sig.size(), v.size());
  ASSERT_EQ(ex.size(), v.size());
  auto same = [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; };
  for (size_t i = 0; i < v.size(); ++i) {
    const float a = v[i];
    float want;
    if (a >= 0) {
      want = 1.0f / (1.0f + pmath::Exp(-a));
    } else {
      const float e = pmath::Exp(a);
      want = e / (1.0f + e);
    }
    if (std::isnan(a)) {
      EXPECT_TRUE(std::isnan(sig[i]));
      EXPECT_TRUE(std::isnan(ex[i]));
      continue;
    }
    EXPECT_TRUE(same(sig[i], want)) << "Sigmoid(" << a << ") = " << sig[i] << ", want " << want;
    EXPECT_TRUE(same(ex[i], pmath::Exp(a))) << "Exp(" << a << ") = " << ex[i];
  }
}

TEST(ElementwiseTest, ClipAttributeAndInputForms) {
  RtTensor x = F32({5}, {-3, -1, 0, 1, 3});
  // Opset 6: attributes.
  ExpectFloats(RunOne({"Clip", {{"x", x}},
                       {{"min", ir::Attribute::Float(-1.5f)}, {"max", ir::Attribute::Float(2)}},
                       1, 6}),
               {5}, {-1.5f, -1, 0, 1, 2});
  // Opset 13: inputs, each optional.
  ExpectFloats(RunOne({"Clip", {{"x", x}, {"lo", F32({}, {-0.5f})}, {"hi", F32({}, {0.5f})}}}), {5},
               {-0.5f, -0.5f, 0, 0.5f, 0.5f});
  ExpectFloats(RunOne({"Clip", {{"x", x}, {"", RtTensor()}, {"hi", F32({}, {0})}}}), {5},
               {-3, -1, 0, 0, 0});
  ExpectFloats(RunOne({"Clip", {{"x", x}}}), {5}, {-3, -1, 0, 1, 3});
  ExpectValues<int64_t>(RunOne({"Clip", {{"x", I64({3}, {-9, 4, 9})}, {"lo", I64({}, {0})}, {"hi", I64({}, {5})}}}),
                        {3}, {0, 4, 5});
}

TEST(ElementwiseTest, UnsupportedDtypeListsSupported) {
  auto out = OpTest{"Exp", {{"x", I64({1}, {1})}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kUnimplemented,
                            HasSubstr("Exp does not support dtype i64; supported: f32")));
}

}  // namespace
}  // namespace slimpack::runtime
