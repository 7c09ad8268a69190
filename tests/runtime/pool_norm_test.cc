// Pooling and normalization kernels: hand-computed values and naive loops.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
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
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

// 4x4 plane 1..16.
RtTensor Plane4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return F32({1, 1, 4, 4}, v);
}

TEST(PoolTest, MaxPoolWithPadsStridesAndIndices) {
  // 2x2 windows, stride 2: maxima at the bottom-right of each window.
  OpTest t{"MaxPool", {{"x", Plane4x4()}},
           {{"kernel_shape", Attr::Ints({2, 2})}, {"strides", Attr::Ints({2, 2})}}, 2};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectFloats((*out)[0], {1, 1, 2, 2}, {6, 8, 14, 16});
  ExpectValues<int64_t>((*out)[1], {1, 1, 2, 2}, {5, 7, 13, 15});
  // 3x3 with pad 1, stride 1: every output is the max of its clipped window.
  RtTensor y = RunOne({"MaxPool", {{"x", Plane4x4()}},
                       {{"kernel_shape", Attr::Ints({3, 3})}, {"pads", Attr::Ints({1, 1, 1, 1})}}});
  std::vector<float> want;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      want.push_back(static_cast<float>(std::min(i + 1, 3) * 4 + std::min(j + 1, 3) + 1));
    }
  }
  ExpectFloats(y, {1, 1, 4, 4}, want);
}

TEST(PoolTest, MaxPoolCeilModeAndDilation) {
  // 4x4, kernel 3, stride 2: floor gives 1x1, ceil gives 2x2 (last window
  // clipped to the input).
  RtTensor floor_y = RunOne({"MaxPool", {{"x", Plane4x4()}},
                             {{"kernel_shape", Attr::Ints({3, 3})}, {"strides", Attr::Ints({2, 2})}}});
  ExpectFloats(floor_y, {1, 1, 1, 1}, {11});
  RtTensor ceil_y = RunOne({"MaxPool", {{"x", Plane4x4()}},
                            {{"kernel_shape", Attr::Ints({3, 3})}, {"strides", Attr::Ints({2, 2})},
                             {"ceil_mode", Attr::Int(1)}}});
  ExpectFloats(ceil_y, {1, 1, 2, 2}, {11, 12, 15, 16});
  // Dilation 2 with a 2x2 kernel reads (0,0),(0,2),(2,0),(2,2) offsets.
  RtTensor dil = RunOne({"MaxPool", {{"x", Plane4x4()}},
                         {{"kernel_shape", Attr::Ints({2, 2})}, {"dilations", Attr::Ints({2, 2})}}});
  ExpectFloats(dil, {1, 1, 2, 2}, {11, 12, 15, 16});
}

TEST(PoolTest, AveragePoolCountIncludePad) {
  const std::map<std::string, Attr> base = {{"kernel_shape", Attr::Ints({2, 2})},
                                            {"strides", Attr::Ints({2, 2})},
                                            {"pads", Attr::Ints({1, 1, 1, 1})}};
  // Windows: {1}, {2,3}, {4}, {5,9}, {6,7,10,11}, ...
  RtTensor excl = RunOne({"AveragePool", {{"x", Plane4x4()}}, base});
  ExpectFloats(excl, {1, 1, 3, 3}, {1, 2.5f, 4, 7, 8.5f, 10, 13, 14.5f, 16});
  auto with_pad = base;
  with_pad["count_include_pad"] = Attr::Int(1);
  RtTensor incl = RunOne({"AveragePool", {{"x", Plane4x4()}}, with_pad});
  ExpectFloats(incl, {1, 1, 3, 3},
               {0.25f, 1.25f, 1, 3.5f, 8.5f, 5, 3.25f, 7.25f, 4});
}

TEST(PoolTest, AveragePoolSameUpperMatchesNaive) {
  const auto x = Random(2 * 3 * 5 * 6, 31);
  RtTensor y = RunOne({"AveragePool", {{"x", F32({2, 3, 5, 6}, x)}},
                       {{"kernel_shape", Attr::Ints({3, 2})}, {"strides", Attr::Ints({2, 2})},
                        {"auto_pad", Attr::String("SAME_UPPER")}}});
  // out = ceil(5/2)=3, ceil(6/2)=3; total pad h = 2*2+3-5 = 2 -> (1,1);
  // w = 2*2+2-6 = 0.
  std::vector<float> want;
  for (int p = 0; p < 6; ++p) {
    for (int oy = 0; oy < 3; ++oy) {
      for (int ox = 0; ox < 3; ++ox) {
        double s = 0;
        int n = 0;
        for (int ky = 0; ky < 3; ++ky) {
          for (int kx = 0; kx < 2; ++kx) {
            const int iy = oy * 2 - 1 + ky, ix = ox * 2 + kx;
            if (iy < 0 || iy >= 5 || ix >= 6) continue;
            s += x[(p * 5 + iy) * 6 + ix];
            ++n;
          }
        }
        want.push_back(static_cast<float>(s / n));
      }
    }
  }
  ExpectFloats(y, {2, 3, 3, 3}, want);
}

// The 2-D pools take a fast path; a trailing size-1 axis sends the same
// data through the N-d loop. Both must agree bit for bit (values, which of
// tied maxima wins, NaN handling, Indices) over strides, dilations, pads,
// ceil_mode and count_include_pad, with 1 and 2 threads.
TEST(PoolTest, TwoDimPathMatchesNdPathExactly) {
  const int64_t n = 2, c = 3, h = 9, w = 23;
  std::vector<float> x = Random(n * c * h * w, 77);
  for (size_t i = 0; i < x.size(); i += 7) x[i] = 0.5f;  // ties
  for (size_t i = 3; i < x.size(); i += 11) x[i] = (i / 11) % 2 ? 0.0f : -0.0f;  // +-0 ties
  x[5] = std::numeric_limits<float>::quiet_NaN();         // NaN inside
  x[h * w] = std::numeric_limits<float>::quiet_NaN();     // NaN first tap
  x[2 * h * w + 2 * w + 8] = std::numeric_limits<float>::quiet_NaN();  // inside a vector
  struct Case {
    std::vector<int64_t> k, s, d, pads;
    int64_t ceil, incl;
  };
  const std::vector<Case> cases = {
      {{3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0},
      {{3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, 1},
      {{2, 3}, {1, 2}, {2, 1}, {0, 2, 1, 0}, 1, 0},
      {{3, 2}, {3, 1}, {2, 3}, {2, 0, 2, 1}, 0, 1},
      {{4, 4}, {2, 3}, {1, 1}, {3, 3, 3, 3}, 1, 1},
      {{3, 3}, {1, 1}, {1, 2}, {1, 1, 1, 1}, 0, 0},
      {{2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 0, 0},
  };
  // MaxPool without its Indices output takes a vector path of its own
  // (four columns at a time, stride 1 or 2): checked as a third op.
  for (const std::string op : {"MaxPool", "MaxPoolValues", "AveragePool"}) {
    for (const Case& cs : cases) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(op + " k=" + std::to_string(cs.k[0]) + "x" + std::to_string(cs.k[1]) +
                     " ceil=" + std::to_string(cs.ceil) + " incl=" +
                     std::to_string(cs.incl) + " threads=" + std::to_string(threads));
        std::map<std::string, Attr> a2 = {{"kernel_shape", Attr::Ints(cs.k)},
                                          {"strides", Attr::Ints(cs.s)},
                                          {"pads", Attr::Ints(cs.pads)},
                                          {"ceil_mode", Attr::Int(cs.ceil)}};
        auto a3 = a2;
        a3["kernel_shape"] = Attr::Ints({cs.k[0], cs.k[1], 1});
        a3["strides"] = Attr::Ints({cs.s[0], cs.s[1], 1});
        a3["pads"] = Attr::Ints({cs.pads[0], cs.pads[1], 0, cs.pads[2], cs.pads[3], 0});
        a2["dilations"] = Attr::Ints(cs.d);
        a3["dilations"] = Attr::Ints({cs.d[0], cs.d[1], 1});
        if (op == "AveragePool") {
          a2["count_include_pad"] = Attr::Int(cs.incl);
          a3["count_include_pad"] = Attr::Int(cs.incl);
        }
        const int outs = op == "MaxPool" ? 2 : 1;
        const std::string kernel = op == "MaxPoolValues" ? "MaxPool" : op;
        OpTest t2{kernel, {{"x", F32({n, c, h, w}, x)}}, a2, outs};
        OpTest t3{kernel, {{"x", F32({n, c, h, w, 1}, x)}}, a3, outs};
        t2.num_threads = threads;
        auto y2 = t2.Run();
        auto y3 = t3.Run();
        ASSERT_TRUE(y2.ok()) << y2.status();
        ASSERT_TRUE(y3.ok()) << y3.status();
        const RtTensor& v2 = (*y2)[0];
        const RtTensor& v3 = (*y3)[0];
        ASSERT_EQ(v2.num_elements(), v3.num_elements());
        ASSERT_GT(v2.num_elements(), 0);
        EXPECT_EQ(0, std::memcmp(v2.data<float>(), v3.data<float>(),
                                 sizeof(float) * v2.num_elements()));
        if (outs == 2) {
          const RtTensor& i2 = (*y2)[1];
          const RtTensor& i3 = (*y3)[1];
          ASSERT_EQ(i2.num_elements(), i3.num_elements());
          for (int64_t i = 0; i < i2.num_elements(); ++i) {
            ASSERT_EQ(i2.data<int64_t>()[i], i3.data<int64_t>()[i]) << "index " << i;
          }
        }
      }
    }
  }
}

// As ConvTest.ZeroStridesDilationsAndHugePadsAreErrors: graphs built in
// memory skip the importer's checks, so the pool kernels check too.
TEST(PoolTest, ZeroStridesDilationsAndHugeKernelsAreErrors) {
  constexpr int64_t k2e62 = int64_t{1} << 62;
  struct Case {
    std::string op;
    std::map<std::string, Attr> attrs;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"MaxPool", {{"strides", Attr::Ints({1, 0})}}, "strides[1] = 0, must be >= 1"},
      {"MaxPool", {{"dilations", Attr::Ints({0, 1})}}, "dilations[0] = 0, must be >= 1"},
      {"AveragePool", {{"strides", Attr::Ints({0, 0})}}, "strides[0] = 0, must be >= 1"},
      {"AveragePool", {{"dilations", Attr::Ints({1, 0})}}, "dilations[1] = 0, must be >= 1"},
      {"AveragePool", {{"pads", Attr::Ints({0, 0, -2, 0})}}, "pads[2] = -2, must be >= 0"},
      {"MaxPool", {{"kernel_shape", Attr::Ints({0, 2})}}, "kernel_shape[0] = 0, must be >= 1"},
      {"MaxPool", {{"pads", Attr::Ints({k2e62, 0, k2e62, 0})}}, "overflows int64"},
      // Each axis fits (pads make room), the product of the two does not.
      {"MaxPool",
       {{"kernel_shape", Attr::Ints({k2e62, k2e62})},
        {"pads", Attr::Ints({k2e62, k2e62, 0, 0})}},
       "more taps than int64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " expecting " + c.want);
    std::map<std::string, Attr> attrs = c.attrs;
    attrs.emplace("kernel_shape", Attr::Ints({2, 2}));  // unless the case set it
    auto out = OpTest{c.op, {{"x", Plane4x4()}}, attrs}.Run();
    EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("node 'n0' (" + c.op + "): ")));
    EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)));
  }
}

TEST(PoolTest, GlobalPools) {
  RtTensor x = F32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -8});
  ExpectFloats(RunOne({"GlobalAveragePool", {{"x", x}}}), {1, 2, 1, 1}, {2.5f, -3.5f});
  ExpectFloats(RunOne({"GlobalMaxPool", {{"x", x}}}), {1, 2, 1, 1}, {4, -1});
}

TEST(NormTest, BatchNormalizationInference) {
  RtTensor x = F32({1, 2, 1, 2}, {1, 2, 3, 4});
  RtTensor y = RunOne({"BatchNormalization",
                       {{"x", x}, {"s", F32({2}, {2, 0.5f})}, {"b", F32({2}, {1, -1})},
                        {"m", F32({2}, {1, 3})}, {"v", F32({2}, {4, 1})}},
                       {{"epsilon", Attr::Float(0)}}});
  // c0: (x-1)/2*2+1, c1: (x-3)/1*0.5-1.
  ExpectFloats(y, {1, 2, 1, 2}, {1, 2, -1, -0.5f});
  auto train = OpTest{"BatchNormalization",
                      {{"x", x}, {"s", F32({2}, {1, 1})}, {"b", F32({2}, {0, 0})},
                       {"m", F32({2}, {0, 0})}, {"v", F32({2}, {1, 1})}},
                      {{"training_mode", Attr::Int(1)}}}.Run();
  EXPECT_THAT(train, StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("training mode")));
}

TEST(NormTest, LayerNormalizationOverTrailingAxes) {
  const auto x = Random(2 * 3 * 4, 41);
  const auto scale = Random(12, 42), bias = Random(12, 43);
  OpTest t{"LayerNormalization",
           {{"x", F32({2, 3, 4}, x)}, {"s", F32({3, 4}, scale)}, {"b", F32({3, 4}, bias)}},
           {{"axis", Attr::Int(1)}, {"epsilon", Attr::Float(1e-3f)}}, 3};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> want, means, invs;
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 12; ++i) m += x[r * 12 + i];
    m /= 12;
    for (int i = 0; i < 12; ++i) v += (x[r * 12 + i] - m) * (x[r * 12 + i] - m);
    v /= 12;
    const double inv = 1 / std::sqrt(v + 1e-3);
    for (int i = 0; i < 12; ++i) {
      want.push_back(static_cast<float>((x[r * 12 + i] - m) * inv * scale[i] + bias[i]));
    }
    means.push_back(static_cast<float>(m));
    invs.push_back(static_cast<float>(inv));
  }
  ExpectFloats((*out)[0], {2, 3, 4}, want);
  ExpectFloats((*out)[1], {2, 1, 1}, means);
  ExpectFloats((*out)[2], {2, 1, 1}, invs);
  // Default axis -1 with a 1-d scale and no bias.
  RtTensor y = RunOne({"LayerNormalization", {{"x", F32({1, 2}, {1, 3})}, {"s", F32({2}, {1, 2})}},
                       {{"epsilon", Attr::Float(0)}}});
  ExpectFloats(y, {1, 2}, {-1, 2});
}

TEST(NormTest, InstanceNormalization) {
  RtTensor y = RunOne({"InstanceNormalization",
                       {{"x", F32({1, 2, 2}, {1, 3, 10, 10})},
                        {"s", F32({2}, {2, 1})}, {"b", F32({2}, {0, 5})}},
                       {{"epsilon", Attr::Float(1)}}});
  // Channel 0: mean 2, var 1 -> (x-2)/sqrt(2)*2; channel 1 is constant.
  ExpectFloats(y, {1, 2, 2}, {-std::sqrt(2.0f), std::sqrt(2.0f), 5, 5});
}

std::vector<float> SoftmaxRows(const std::vector<float>& x, int rows, int cols, bool log) {
  std::vector<float> y;
  for (int r = 0; r < rows; ++r) {
    double mx = -1e30, s = 0;
    for (int c = 0; c < cols; ++c) mx = std::max<double>(mx, x[r * cols + c]);
    for (int c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c) {
      const double e = x[r * cols + c] - mx;
      y.push_back(static_cast<float>(log ? e - std::log(s) : std::exp(e) / s));
    }
  }
  return y;
}

TEST(NormTest, SoftmaxAxisSemanticsChangeAtOpset13) {
  const auto x = Random(2 * 3 * 4, 51, -5, 5);
  for (bool log : {false, true}) {
    const std::string op = log ? "LogSoftmax" : "Softmax";
    SCOPED_TRACE(op);
    // Opset 11, axis 1: each batch row of 12 values is one distribution.
    RtTensor y11 = RunOne({op, {{"x", F32({2, 3, 4}, x)}}, {}, 1, 11});
    ExpectFloats(y11, {2, 3, 4}, SoftmaxRows(x, 2, 12, log));
    // Opset 13, default axis -1: rows of 4.
    RtTensor y13 = RunOne({op, {{"x", F32({2, 3, 4}, x)}}, {}, 1, 13});
    ExpectFloats(y13, {2, 3, 4}, SoftmaxRows(x, 6, 4, log));
    // Opset 13, axis 1: along the middle axis (stride 4).
    RtTensor mid = RunOne({op, {{"x", F32({2, 3, 4}, x)}}, {{"axis", Attr::Int(1)}}, 1, 13});
    std::vector<float> t(24), want(24);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) t[(b * 4 + j) * 3 + i] = x[(b * 3 + i) * 4 + j];
    const auto sm = SoftmaxRows(t, 8, 3, log);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) want[(b * 3 + i) * 4 + j] = sm[(b * 4 + j) * 3 + i];
    ExpectFloats(mid, {2, 3, 4}, want);
  }
  // Large inputs do not overflow.
  ExpectFloats(RunOne({"Softmax", {{"x", F32({2}, {1000, 1000})}}}), {2}, {0.5f, 0.5f});
}

// Last-axis Softmax runs a vectorised exp over blocks of 256: rows longer
// than a block, entries far below the max (exp underflows to 0), -inf
// (masked attention) and a wide range of values against a double
// reference; 1 and 2 threads give the same bytes.
TEST(NormTest, SoftmaxLongRowsMatchDoubleReference) {
  const int rows = 3, cols = 600;
  std::vector<float> x = Random(rows * cols, 53, -30, 30);
  x[7] = -std::numeric_limits<float>::infinity();
  x[cols + 300] = -1e30f;
  x[2 * cols + 599] = 60.0f;
  std::vector<RtTensor> outs;
  for (int threads : {1, 2}) {
    OpTest t{"Softmax", {{"x", F32({rows, cols}, x)}}};
    t.num_threads = threads;
    auto y = t.Run();
    ASSERT_TRUE(y.ok()) << y.status();
    outs.push_back((*y)[0]);
  }
  const auto want = SoftmaxRows(x, rows, cols, false);
  ExpectFloats(outs[0], {rows, cols}, want, 1e-9f, 1e-6f);
  EXPECT_EQ(outs[0].data<float>()[7], 0.0f);
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += outs[0].data<float>()[r * cols + c];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
  EXPECT_EQ(0, std::memcmp(outs[0].data<float>(), outs[1].data<float>(),
                           sizeof(float) * rows * cols));
}

// Last-axis Softmax runs four rows per task with their sums side by side
// when there are at least 16 rows per thread: each row must have the bits
// of that row run alone (53 rows: grouped at 1 and 3 threads, thirteen
// fours and a one; one row per task at 4 threads; 300 columns so the exps
// go in two blocks), with a causal mask's -inf entries, and be within 1e-6
// of a double-precision softmax.
TEST(NormTest, SoftmaxRowsInGroupsEqualEachRowAlone) {
  constexpr int64_t kRows = 53, kCols = 300;
  std::vector<float> x = Random(kRows * kCols, 21, -8.0f, 8.0f);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = (37 * r) % kCols + 1; c < kCols; ++c) x[r * kCols + c] = -INFINITY;
  }
  for (int threads : {1, 3, 4}) {
    OpTest all("Softmax", {{"x", F32({kRows, kCols}, x)}});
    all.num_threads = threads;
    const RtTensor y = RunOne(all);
    ASSERT_EQ(y.num_elements(), kRows * kCols);
    for (int64_t r = 0; r < kRows; ++r) {
      const std::vector<float> row(x.begin() + r * kCols, x.begin() + (r + 1) * kCols);
      const RtTensor alone = RunOne(OpTest("Softmax", {{"x", F32({1, kCols}, row)}}));
      ASSERT_EQ(std::memcmp(y.data<float>() + r * kCols, alone.data<float>(), kCols * 4), 0)
          << "row " << r << ", " << threads << " threads";
      double mx = -INFINITY, sum = 0;
      for (float v : row) mx = std::max<double>(mx, v);
      for (float v : row) sum += std::exp(static_cast<double>(v) - mx);
      for (int64_t c = 0; c < kCols; ++c) {
        const double want = std::exp(static_cast<double>(row[c]) - mx) / sum;
        EXPECT_NEAR(y.data<float>()[r * kCols + c], want, 1e-6) << r << "," << c;
      }
    }
  }
}

}  // namespace
}  // namespace slimpack::runtime
