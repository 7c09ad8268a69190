// Hand-computed integer cases for the quantization kernels (ties rounded to
// even, saturation, zero points, per-axis parameters, padding with the zero
// point); ONNX's own node tests run in onnx_node_conformance_test.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/quantize_util.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::OpTest;
using testing::RunOne;

template <typename T>
RtTensor T_(std::vector<int64_t> dims, const std::vector<T>& v) {
  return RtTensor::FromVector<T>(std::move(dims), v);
}
RtTensor Scalar(float v) { return T_<float>({}, {v}); }

// The vectorised round-and-saturate (SSE2 on x86-64) gives
// SaturateRound's value for every input: ties to even, both saturation
// ends, values past int32, infinities, NaN (the zero point), -0, for u8 and
// i8 and several zero points, whichever lane or tail an input falls in.
TEST(SaturateRoundBytesTest, MatchesTheScalarRoundingEverywhere) {
  using kernels::quantize_internal::SaturateRound;
  using kernels::quantize_internal::SaturateRoundBytes;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 128.5f, -128.5f,
                          254.5f, 255.5f, -0.0f, 1e10f, -1e10f, 3e9f, -3e9f, 1073741824.0f,
                          inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.49999997f,
                          8388609.0f, -129.4f, 126.6f};
  for (int i = 0; i < 41; ++i) v.push_back(std::ldexp(static_cast<float>(i * 37 % 23) - 11.3f, i % 5));
  for (ir::DType t : {ir::DType::kU8, ir::DType::kI8}) {
    for (int32_t zp : t == ir::DType::kU8 ? std::vector<int32_t>{0, 128, 255}
                                          : std::vector<int32_t>{-128, -3, 0, 127}) {
      // Starting further in shifts every input into another lane and
      // leaves tails of 0-15 values: blocks of 16, of 4, and the scalar end.
      for (size_t off : {0, 1, 2, 3, 5, 13}) {
        std::vector<uint8_t> got(v.size() - off);
        SaturateRoundBytes(v.data() + off, static_cast<int64_t>(got.size()), zp, t, got.data());
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i], static_cast<uint8_t>(SaturateRound(v[off + i], zp, t)))
              << v[off + i] << " zp " << zp << (t == ir::DType::kU8 ? " u8" : " i8");
        }
      }
    }
  }
}

// QuantizeLinear's AVX2 loop (int8dot::QuantizeAvx2) gives SaturateRound's
// value of each quotient x / scale: quotients that tie, saturate, overflow
// to infinity, NaN, denormal scales, every lane and tail length; checked
// where the CPU has AVX2, and the op itself against the definition on any
// CPU.
TEST(QuantizeLinearTest, EveryLaneGivesTheScalarQuotientsByte) {
  using kernels::quantize_internal::SaturateRound;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, 63.75f, 64.25f, -64.25f,
                          127.25f, 127.75f, -0.0f, 1e30f, -1e30f, 3e38f, inf, -inf,
                          std::numeric_limits<float>::quiet_NaN(), 1e-40f, -31.9f, 33.3f};
  for (int i = 0; i < 61; ++i) v.push_back(std::ldexp(static_cast<float>(i * 37 % 23) - 11.3f, i % 7 - 2));
  for (float scale : {0.5f, 0.1f, 3.0f, 1e-39f}) {
    for (ir::DType t : {ir::DType::kU8, ir::DType::kI8}) {
      const int32_t lo = t == ir::DType::kU8 ? 0 : -128, hi = t == ir::DType::kU8 ? 255 : 127;
      for (int32_t zp : t == ir::DType::kU8 ? std::vector<int32_t>{0, 128, 255}
                                            : std::vector<int32_t>{-128, -3, 127}) {
        // Starts 0-7 put every value in every lane and leave tails of
        // every length below eight past blocks of 32 and of 8 (81 values).
        for (size_t off : {0, 1, 2, 3, 4, 5, 6, 7, 40}) {
          const auto n = static_cast<int64_t>(v.size() - off);
          std::vector<uint8_t> want(n);
          for (int64_t i = 0; i < n; ++i) {
            want[i] = static_cast<uint8_t>(SaturateRound(v[off + i] / scale, zp, t));
          }
          std::vector<uint8_t> got(n + 1, 0xA5);
          if (kernels::int8dot::QuantizeAvx2(v.data() + off, n, scale, lo, hi, zp, got.data())) {
            EXPECT_EQ(got[n], 0xA5) << "wrote past the end";
            got.resize(n);
            EXPECT_EQ(got, want) << "scale " << scale << " zp " << zp;
          }
          std::vector<float> x(v.begin() + off, v.end());
          const RtTensor zpt = t == ir::DType::kU8
                                   ? T_<uint8_t>({}, {static_cast<uint8_t>(zp)})
                                   : T_<int8_t>({}, {static_cast<int8_t>(zp)});
          OpTest op("QuantizeLinear", {{"x", T_<float>({n}, x)}, {"s", Scalar(scale)}, {"z", zpt}});
          const RtTensor y = RunOne(op);
          std::vector<uint8_t> bytes(y.data<uint8_t>(), y.data<uint8_t>() + y.num_elements());
          EXPECT_EQ(bytes, want) << "QuantizeLinear, scale " << scale << " zp " << zp;
        }
      }
    }
  }
}

TEST(QuantizeLinearTest, RoundsHalfToEvenAndSaturatesU8) {
  RtTensor y = RunOne(OpTest(
      "QuantizeLinear",
      {{"x", T_<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, 254.5f, 255.5f, 300.0f, -3.0f})},
       {"s", Scalar(1.0f)},
       {"z", T_<uint8_t>({}, {0})}}));
  ASSERT_EQ(y.dtype(), ir::DType::kU8);
  EXPECT_THAT(y.ToVector<uint8_t>(), ElementsAreArray<uint8_t>({0, 2, 2, 0, 254, 255, 255, 0}));
}

TEST(QuantizeLinearTest, I8ZeroPointAddedAfterRounding) {
  // x / 2 = 0.5, 1.5, 2.5, -2.5, 150, -150; + zp -3.
  RtTensor y = RunOne(OpTest("QuantizeLinear",
                             {{"x", T_<float>({6}, {1, 3, 5, -5, 300, -300})},
                              {"s", Scalar(2.0f)},
                              {"z", T_<int8_t>({}, {-3})}}));
  ASSERT_EQ(y.dtype(), ir::DType::kI8);
  EXPECT_THAT(y.ToVector<int8_t>(), ElementsAreArray<int8_t>({-3, -1, -1, -5, 127, -128}));
}

TEST(QuantizeLinearTest, OmittedZeroPointMeansU8Zero) {
  RtTensor y = RunOne(OpTest("QuantizeLinear",
                             {{"x", T_<float>({3}, {-1, 0.75f, 3})}, {"s", Scalar(0.5f)}}));
  ASSERT_EQ(y.dtype(), ir::DType::kU8);
  EXPECT_THAT(y.ToVector<uint8_t>(), ElementsAreArray<uint8_t>({0, 2, 6}));
}

TEST(QuantizeLinearTest, PerAxisScalesAndZeroPoints) {
  // axis 1: scales [1, 2, 4], zero points [0, 10, 20].
  RtTensor y = RunOne(OpTest("QuantizeLinear",
                             {{"x", T_<float>({2, 3}, {1, 2, 3, -1, -2, -3})},
                              {"s", T_<float>({3}, {1, 2, 4})},
                              {"z", T_<uint8_t>({3}, {0, 10, 20})}},
                             {{"axis", ir::Attribute::Int(1)}}));
  EXPECT_THAT(y.ToVector<uint8_t>(), ElementsAreArray<uint8_t>({1, 11, 21, 0, 9, 19}));
  // axis 0: one scale per row.
  RtTensor y0 = RunOne(OpTest("QuantizeLinear",
                              {{"x", T_<float>({2, 2}, {3, 5, 3, 5})},
                               {"s", T_<float>({2}, {2, 4})},
                               {"z", T_<int8_t>({2}, {0, -1})}},
                              {{"axis", ir::Attribute::Int(0)}}));
  // 1.5 -> 2, 2.5 -> 2; 0.75 -> 1 - 1, 1.25 -> 1 - 1.
  EXPECT_THAT(y0.ToVector<int8_t>(), ElementsAreArray<int8_t>({2, 2, 0, 0}));
}

TEST(QuantizeLinearTest, RejectsScaleOfWrongLength) {
  auto out = OpTest("QuantizeLinear", {{"x", T_<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                                       {"s", T_<float>({2}, {1, 2})},
                                       {"z", T_<uint8_t>({2}, {0, 0})}})
                 .Run();
  EXPECT_THAT(out.status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'s'")));
}

TEST(DequantizeLinearTest, SubtractsZeroPointThenScales) {
  RtTensor y = RunOne(OpTest("DequantizeLinear", {{"x", T_<int8_t>({3}, {-128, 0, 127})},
                                                  {"s", Scalar(0.5f)},
                                                  {"z", T_<int8_t>({}, {-1})}}));
  EXPECT_THAT(y.ToVector<float>(), ElementsAreArray<float>({-63.5f, 0.5f, 64.0f}));
  // int32 input (a bias), zero point omitted.
  RtTensor b = RunOne(OpTest("DequantizeLinear",
                             {{"x", T_<int32_t>({2}, {100000, -7})}, {"s", Scalar(0.25f)}}));
  EXPECT_THAT(b.ToVector<float>(), ElementsAreArray<float>({25000.0f, -1.75f}));
}

TEST(MatMulIntegerTest, PerColumnZeroPointsAccumulateInInt32) {
  // (A - 1) = [[0,1,2],[3,4,5]]; (B - [0,1]) = [[1,-2],[2,2],[-3,3]].
  RtTensor y = RunOne(OpTest("MatMulInteger",
                             {{"a", T_<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6})},
                              {"b", T_<int8_t>({3, 2}, {1, -1, 2, 3, -3, 4})},
                              {"az", T_<uint8_t>({}, {1})},
                              {"bz", T_<int8_t>({2}, {0, 1})}}));
  ASSERT_EQ(y.dtype(), ir::DType::kI32);
  EXPECT_THAT(y.ToVector<int32_t>(), ElementsAreArray<int32_t>({-4, 8, -4, 17}));
}

TEST(QLinearMatMulTest, RequantisesWithTiesToEvenAndSaturates) {
  // a - 7 = [2, 6, 10, -2, -6, 248] (column 0; b selects it), multiplier
  // 0.5 * 0.5 / 1 = 0.25: 0.5, 1.5, 2.5, -0.5, -1.5, 62 -> 0, 2, 2, 0, -2, 62.
  auto run = [](RtTensor yz) {
    return RunOne(OpTest("QLinearMatMul",
                         {{"a", T_<uint8_t>({6, 2}, {9, 0, 13, 0, 17, 0, 5, 0, 1, 0, 255, 0})},
                          {"as", Scalar(0.5f)},
                          {"az", T_<uint8_t>({}, {7})},
                          {"b", T_<uint8_t>({2, 1}, {1, 0})},
                          {"bs", Scalar(0.5f)},
                          {"bz", T_<uint8_t>({}, {0})},
                          {"ys", Scalar(1.0f)},
                          {"yz", std::move(yz)}}));
  };
  EXPECT_THAT(run(T_<uint8_t>({}, {100})).ToVector<uint8_t>(),
              ElementsAreArray<uint8_t>({100, 102, 102, 100, 98, 162}));
  EXPECT_THAT(run(T_<uint8_t>({}, {200})).ToVector<uint8_t>(),
              ElementsAreArray<uint8_t>({200, 202, 202, 200, 198, 255}));
  EXPECT_THAT(run(T_<int8_t>({}, {-127})).ToVector<int8_t>(),
              ElementsAreArray<int8_t>({-127, -125, -125, -127, -128, -65}));
}

TEST(ConvIntegerTest, PadsWithTheZeroPoint) {
  // x - 10 = [[0,10],[20,30]], kernel [[1,0],[0,1]], pads 1: out(i,j) =
  // x'(i-1,j-1) + x'(i,j), padding contributing 0.
  RtTensor y = RunOne(OpTest("ConvInteger",
                             {{"x", T_<uint8_t>({1, 1, 2, 2}, {10, 20, 30, 40})},
                              {"w", T_<int8_t>({1, 1, 2, 2}, {1, 0, 0, 1})},
                              {"xz", T_<uint8_t>({}, {10})}},
                             {{"pads", ir::Attribute::Ints({1, 1, 1, 1})}}));
  ASSERT_EQ(y.dtype(), ir::DType::kI32);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_THAT(y.ToVector<int32_t>(), ElementsAreArray<int32_t>({0, 10, 0, 20, 30, 10, 0, 20, 30}));
}

TEST(QLinearConvTest, PerChannelWeightsBiasAndTieRounding) {
  // x - 10 = [[0,10],[20,30]]; ch0 w [[1,0],[0,1]] acc 30 + bias 4 = 34,
  // multiplier 0.5*0.5/2 = 0.125 -> 4.25 -> 4; ch1 w all 1: acc 60 - 36 =
  // 24, multiplier 0.5*0.25/2 = 0.0625 -> 1.5 -> 2. Plus zero point 5.
  RtTensor y = RunOne(OpTest("QLinearConv",
                             {{"x", T_<uint8_t>({1, 1, 2, 2}, {10, 20, 30, 40})},
                              {"xs", Scalar(0.5f)},
                              {"xz", T_<uint8_t>({}, {10})},
                              {"w", T_<int8_t>({2, 1, 2, 2}, {1, 0, 0, 1, 1, 1, 1, 1})},
                              {"ws", T_<float>({2}, {0.5f, 0.25f})},
                              {"wz", T_<int8_t>({2}, {0, 0})},
                              {"ys", Scalar(2.0f)},
                              {"yz", T_<uint8_t>({}, {5})},
                              {"b", T_<int32_t>({2}, {4, -36})}}));
  ASSERT_EQ(y.dtype(), ir::DType::kU8);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_THAT(y.ToVector<uint8_t>(), ElementsAreArray<uint8_t>({9, 7}));
}

TEST(QLinearConvTest, RejectsFloatBias) {
  auto out = OpTest("QLinearConv", {{"x", T_<uint8_t>({1, 1, 1, 1}, {1})},
                                    {"xs", Scalar(1)},
                                    {"xz", T_<uint8_t>({}, {0})},
                                    {"w", T_<int8_t>({1, 1, 1, 1}, {1})},
                                    {"ws", Scalar(1)},
                                    {"wz", T_<int8_t>({}, {0})},
                                    {"ys", Scalar(1)},
                                    {"yz", T_<uint8_t>({}, {0})},
                                    {"b", T_<float>({1}, {1})}})
                 .Run();
  EXPECT_THAT(out.status(), StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("i32 bias")));
}

}  // namespace
}  // namespace slimpack::runtime
