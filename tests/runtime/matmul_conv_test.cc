// MatMul, Gemm, Conv and ConvTranspose against naive loops written here.
#include <cmath>
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
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

int64_t Count(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

TEST(MatMulTest, BatchedBroadcastMatchesNaive) {
  // A [2,1,3,4] x B [3,4,5] -> [2,3,3,5]; B's batch broadcasts against A's.
  const auto a = Random(2 * 3 * 4, 1), b = Random(3 * 4 * 5, 2);
  RtTensor y = RunOne({"MatMul", {{"a", F32({2, 1, 3, 4}, a)}, {"b", F32({3, 4, 5}, b)}}});
  std::vector<float> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int m = 0; m < 3; ++m) {
        for (int n = 0; n < 5; ++n) {
          double s = 0;
          for (int k = 0; k < 4; ++k) s += a[(i * 3 + m) * 4 + k] * b[(j * 4 + k) * 5 + n];
          want.push_back(static_cast<float>(s));
        }
      }
    }
  }
  ExpectFloats(y, {2, 3, 3, 5}, want);
}

TEST(MatMulTest, SharedRightMatrixAndVectors) {
  const auto a = Random(2 * 3 * 4, 3), b = Random(4 * 2, 4);
  RtTensor y = RunOne({"MatMul", {{"a", F32({2, 3, 4}, a)}, {"b", F32({4, 2}, b)}}});
  std::vector<float> want;
  for (int r = 0; r < 6; ++r) {
    for (int n = 0; n < 2; ++n) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a[r * 4 + k] * b[k * 2 + n];
      want.push_back(static_cast<float>(s));
    }
  }
  ExpectFloats(y, {2, 3, 2}, want);
  // 1-d x 2-d drops the promoted axis: [4] x [4,2] -> [2].
  RtTensor v = RunOne({"MatMul", {{"a", F32({4}, {1, 2, 3, 4})}, {"b", F32({4, 2}, b)}}});
  ExpectFloats(v, {2},
               {b[0] + 2 * b[2] + 3 * b[4] + 4 * b[6], b[1] + 2 * b[3] + 3 * b[5] + 4 * b[7]});
  // 2-d x 1-d: [2,2] x [2] -> [2]; 1-d x 1-d -> scalar.
  ExpectFloats(RunOne({"MatMul", {{"a", F32({2, 2}, {1, 2, 3, 4})}, {"b", F32({2}, {1, 1})}}}),
               {2}, {3, 7});
  ExpectFloats(RunOne({"MatMul", {{"a", F32({3}, {1, 2, 3})}, {"b", F32({3}, {4, 5, 6})}}}), {},
               {32});
}

TEST(MatMulTest, LargeProductIsTiledCorrectly) {
  // Above the tiling threshold: checks tile offsets for A, B and C.
  const int64_t m = 300, k = 70, n = 520;
  const auto a = Random(m * k, 5), b = Random(k * n, 6);
  RtTensor y = RunOne({"MatMul", {{"a", F32({m, k}, a)}, {"b", F32({k, n}, b)}}});
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      want[i * n + j] = static_cast<float>(s);
    }
  }
  ExpectFloats(y, {m, n}, want, 1e-4f, 1e-4f);
}

TEST(MatMulTest, InnerDimMismatchIsAnError) {
  auto out = OpTest{"MatMul", {{"a", F32({2, 3}, Random(6, 1))}, {"b", F32({4, 2}, Random(8, 2))}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("inner dims differ")));
}

TEST(GemmTest, TransposesAlphaBetaAndBroadcastC) {
  const auto a = Random(4 * 3, 7), b = Random(5 * 4, 8), c = Random(5, 9);
  // A stored [K=4, M=3] (transA), B stored [N=5, K=4] (transB), C [5] -> [3,5].
  RtTensor y = RunOne({"Gemm",
                       {{"a", F32({4, 3}, a)}, {"b", F32({5, 4}, b)}, {"c", F32({5}, c)}},
                       {{"transA", Attr::Int(1)}, {"transB", Attr::Int(1)},
                        {"alpha", Attr::Float(0.5f)}, {"beta", Attr::Float(2.0f)}}});
  std::vector<float> want;
  for (int m = 0; m < 3; ++m) {
    for (int n = 0; n < 5; ++n) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a[k * 3 + m] * b[n * 4 + k];
      want.push_back(static_cast<float>(0.5 * s + 2.0 * c[n]));
    }
  }
  ExpectFloats(y, {3, 5}, want);
  // No C; C of [3,1] broadcast along columns.
  RtTensor y2 = RunOne({"Gemm", {{"a", F32({1, 2}, {1, 2})}, {"b", F32({2, 2}, {1, 2, 3, 4})}}});
  ExpectFloats(y2, {1, 2}, {7, 10});
  RtTensor y3 = RunOne({"Gemm", {{"a", F32({2, 1}, {1, 2})}, {"b", F32({1, 2}, {3, 4})},
                                 {"c", F32({2, 1}, {10, 20})}}});
  ExpectFloats(y3, {2, 2}, {13, 14, 26, 28});
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x;  // N, C, spatial...
  std::vector<int64_t> w;  // M, C/group, kernel...
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

// Naive N-d (1-d or 2-d) convolution with explicit pads.
std::vector<float> NaiveConv(const ConvCase& c, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b,
                             const std::vector<int64_t>& pads, std::vector<int64_t>* out_dims) {
  const size_t r = c.x.size() - 2;
  const int64_t n = c.x[0], ch = c.x[1], m = c.w[0], cg = c.w[1];
  const int64_t mg = m / c.group;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
  while (in.size() < 2) {  // treat 1-d as [1, L]
    in.insert(in.begin(), 1);
    k.insert(k.begin(), 1);
  }
  std::vector<int64_t> s = c.strides, d = c.dilations, pb(r), pe(r);
  for (size_t i = 0; i < r; ++i) {
    pb[i] = pads[i];
    pe[i] = pads[i + r];
  }
  if (r == 1) {
    s.insert(s.begin(), 1);
    d.insert(d.begin(), 1);
    pb.insert(pb.begin(), 0);
    pe.insert(pe.begin(), 0);
  }
  const int64_t oh = (in[0] + pb[0] + pe[0] - ((k[0] - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t ow = (in[1] + pb[1] + pe[1] - ((k[1] - 1) * d[1] + 1)) / s[1] + 1;
  *out_dims = {n, m};
  if (r == 2) out_dims->push_back(oh);
  out_dims->push_back(ow);
  std::vector<float> y;
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t g = mi / mg;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = b.empty() ? 0.0 : b[mi];
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t ky = 0; ky < k[0]; ++ky) {
              for (int64_t kx = 0; kx < k[1]; ++kx) {
                const int64_t iy = oy * s[0] - pb[0] + ky * d[0];
                const int64_t ix = ox * s[1] - pb[1] + kx * d[1];
                if (iy < 0 || iy >= in[0] || ix < 0 || ix >= in[1]) continue;
                const int64_t c_in = g * cg + ci;
                acc += x[((ni * ch + c_in) * in[0] + iy) * in[1] + ix] *
                       w[((mi * cg + ci) * k[0] + ky) * k[1] + kx];
              }
            }
          }
          y.push_back(static_cast<float>(acc));
        }
      }
    }
  }
  return y;
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesNaiveConvolution) {
  ConvCase c = GetParam();
  const size_t r = c.x.size() - 2;
  if (c.strides.empty()) c.strides.assign(r, 1);
  if (c.dilations.empty()) c.dilations.assign(r, 1);
  if (c.pads.empty()) c.pads.assign(2 * r, 0);
  const auto x = Random(Count(c.x), 11), w = Random(Count(c.w), 12);
  const auto b = c.bias ? Random(c.w[0], 13) : std::vector<float>();
  // The naive reference takes explicit pads; derive SAME pads here the
  // way the spec describes, independently of the kernel.
  std::vector<int64_t> pads = c.pads;
  if (c.auto_pad != "NOTSET") {
    for (size_t i = 0; i < r; ++i) {
      const int64_t in = c.x[2 + i], out = (in + c.strides[i] - 1) / c.strides[i];
      const int64_t span = (c.w[2 + i] - 1) * c.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * c.strides[i] + span - in);
      pads[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      pads[i + r] = total - pads[i];
    }
  }
  std::vector<int64_t> out_dims;
  const auto want = NaiveConv(c, x, w, b, pads, &out_dims);
  std::map<std::string, Attr> attrs = {{"group", Attr::Int(c.group)},
                                       {"strides", Attr::Ints(c.strides)},
                                       {"dilations", Attr::Ints(c.dilations)}};
  if (c.auto_pad == "NOTSET") {
    attrs["pads"] = Attr::Ints(c.pads);
  } else {
    attrs["auto_pad"] = Attr::String(c.auto_pad);
  }
  std::vector<std::pair<std::string, RtTensor>> ins = {{"x", F32(c.x, x)}, {"w", F32(c.w, w)}};
  if (c.bias) ins.push_back({"b", F32({c.w[0]}, b)});
  for (int threads : {1, 3}) {
    OpTest t{"Conv", ins, attrs};
    t.num_threads = threads;
    ExpectFloats(RunOne(t), out_dims, want, 1e-5f, 1e-5f);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvTest,
    ::testing::Values(
        ConvCase{"plain3x3", {1, 3, 7, 6}, {4, 3, 3, 3}, 1, {}, {}, {}},
        ConvCase{"padded_strided", {2, 3, 8, 9}, {5, 3, 3, 2}, 1, {2, 3}, {1, 1}, {1, 0, 2, 1}},
        ConvCase{"dilated", {1, 2, 9, 9}, {3, 2, 3, 3}, 1, {1, 1}, {2, 3}, {2, 2, 2, 2}},
        ConvCase{"grouped", {1, 6, 5, 5}, {4, 3, 3, 3}, 2, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        ConvCase{"depthwise", {1, 4, 6, 6}, {4, 1, 3, 3}, 4, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        ConvCase{"pointwise", {2, 8, 5, 7}, {6, 8, 1, 1}, 1, {}, {}, {}, "NOTSET", false},
        ConvCase{"pointwise_strided", {1, 4, 6, 6}, {3, 4, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
        ConvCase{"same_upper", {1, 2, 7, 8}, {3, 2, 4, 3}, 1, {2, 2}, {1, 1}, {}, "SAME_UPPER"},
        ConvCase{"same_lower", {1, 2, 7, 8}, {3, 2, 4, 3}, 1, {2, 2}, {1, 1}, {}, "SAME_LOWER"},
        ConvCase{"conv1d", {2, 3, 11}, {4, 3, 3}, 1, {2}, {2}, {1, 2}},
        ConvCase{"large_tiled", {1, 16, 64, 64}, {32, 16, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

TEST(ConvTest, GroupMismatchIsAnError) {
  auto out = OpTest{"Conv", {{"x", F32({1, 4, 3, 3}, Random(36, 1))},
                             {"w", F32({2, 3, 1, 1}, Random(6, 2))}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("disagree")));
}

// Window attributes reach the kernels unchecked when a graph is built in
// memory (the importer's checks never ran): each must be an error naming
// the node and the attribute, never a division by zero or an overflow.
TEST(ConvTest, ZeroStridesDilationsAndHugePadsAreErrors) {
  constexpr int64_t k2e62 = int64_t{1} << 62;
  struct Case {
    std::string op;
    std::map<std::string, Attr> attrs;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"Conv", {{"strides", Attr::Ints({0, 0})}}, "strides[0] = 0, must be >= 1"},
      {"Conv", {{"strides", Attr::Ints({1, 0})}}, "strides[1] = 0, must be >= 1"},
      {"Conv", {{"dilations", Attr::Ints({1, 0})}}, "dilations[1] = 0, must be >= 1"},
      {"Conv", {{"pads", Attr::Ints({0, -1, 0, 0})}}, "pads[1] = -1, must be >= 0"},
      {"Conv", {{"pads", Attr::Ints({k2e62, k2e62, k2e62, k2e62})}}, "overflows int64"},
      {"Conv", {{"dilations", Attr::Ints({std::numeric_limits<int64_t>::max(), 1})}},
       "spans more than int64"},
      {"Conv", {{"strides", Attr::Ints({0, 0})}, {"auto_pad", Attr::String("SAME_UPPER")}},
       "strides[0] = 0, must be >= 1"},
      {"ConvTranspose", {{"strides", Attr::Ints({2, 0})}}, "strides[1] = 0, must be >= 1"},
      {"ConvTranspose", {{"dilations", Attr::Ints({0, 1})}}, "dilations[0] = 0, must be >= 1"},
      {"ConvTranspose", {{"strides", Attr::Ints({k2e62, 1})}}, "overflows int64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " expecting " + c.want);
    auto out = OpTest{c.op,
                      {{"x", F32({1, 1, 4, 4}, Random(16, 1))},
                       {"w", F32({1, 1, 2, 2}, Random(4, 2))}},
                      c.attrs}
                   .Run();
    EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("node 'n0' (" + c.op + "): ")));
    EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)));
  }
}

TEST(ConvTest, HugeStridesAndDilationsStayInBounds) {
  // Strides and dilations of 2^32, with pads that leave room for one
  // window: its only tap inside the input is w[1][1] * x[0][0]. The direct
  // AVX-512 kernel's layout arithmetic wrapped here (a 35-float scratch
  // buffer written 2^32 stride phases deep); it must fall back to im2col,
  // whose ceilings must not overflow either.
  constexpr int64_t k2e32 = int64_t{1} << 32;
  const auto x = Random(16, 1), w = Random(4, 2);
  RtTensor y = RunOne({"Conv",
                       {{"x", F32({1, 1, 4, 4}, x)}, {"w", F32({1, 1, 2, 2}, w)}},
                       {{"strides", Attr::Ints({k2e32, k2e32})},
                        {"dilations", Attr::Ints({k2e32, k2e32})},
                        {"pads", Attr::Ints({k2e32, k2e32, 0, 0})}}});
  ExpectFloats(y, {1, 1, 1, 1}, {w[3] * x[0]});
}

// Naive 2-d transposed convolution: scatter every input pixel.
std::vector<float> NaiveConvTranspose(const std::vector<int64_t>& xd, const std::vector<float>& x,
                                      const std::vector<int64_t>& wd, const std::vector<float>& w,
                                      int64_t group, const std::vector<int64_t>& s,
                                      const std::vector<int64_t>& d,
                                      const std::vector<int64_t>& pads,
                                      const std::vector<int64_t>& out_pad,
                                      std::vector<int64_t>* out_dims) {
  const int64_t n = xd[0], c = xd[1], ih = xd[2], iw = xd[3];
  const int64_t mg = wd[1], m = mg * group, cg = c / group, kh = wd[2], kw = wd[3];
  const int64_t oh = s[0] * (ih - 1) + out_pad[0] + (kh - 1) * d[0] + 1 - pads[0] - pads[2];
  const int64_t ow = s[1] * (iw - 1) + out_pad[1] + (kw - 1) * d[1] + 1 - pads[1] - pads[3];
  *out_dims = {n, m, oh, ow};
  std::vector<double> y(n * m * oh * ow, 0.0);
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t g = ci / cg;
      for (int64_t y0 = 0; y0 < ih; ++y0) {
        for (int64_t x0 = 0; x0 < iw; ++x0) {
          const float v = x[((ni * c + ci) * ih + y0) * iw + x0];
          for (int64_t mj = 0; mj < mg; ++mj) {
            for (int64_t ky = 0; ky < kh; ++ky) {
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t oy = y0 * s[0] - pads[0] + ky * d[0];
                const int64_t ox = x0 * s[1] - pads[1] + kx * d[1];
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                y[((ni * m + g * mg + mj) * oh + oy) * ow + ox] +=
                    v * w[((ci * mg + mj) * kh + ky) * kw + kx];
              }
            }
          }
        }
      }
    }
  }
  return std::vector<float>(y.begin(), y.end());
}

TEST(ConvTransposeTest, MatchesNaiveScatter) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
    std::vector<int64_t> strides, dilations, pads, out_pad;
  };
  const Case cases[] = {
      {{1, 2, 3, 3}, {2, 3, 3, 3}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}},
      {{2, 3, 4, 3}, {3, 2, 3, 2}, 1, {2, 3}, {1, 1}, {1, 0, 1, 1}, {1, 2}},
      {{1, 4, 3, 4}, {4, 2, 2, 3}, 2, {2, 1}, {2, 1}, {0, 1, 0, 0}, {0, 0}},
  };
  for (const Case& c : cases) {
    const auto x = Random(Count(c.x), 21), w = Random(Count(c.w), 22);
    std::vector<int64_t> out_dims;
    const auto want = NaiveConvTranspose(c.x, x, c.w, w, c.group, c.strides, c.dilations,
                                         c.pads, c.out_pad, &out_dims);
    RtTensor y = RunOne({"ConvTranspose", {{"x", F32(c.x, x)}, {"w", F32(c.w, w)}},
                         {{"group", Attr::Int(c.group)}, {"strides", Attr::Ints(c.strides)},
                          {"dilations", Attr::Ints(c.dilations)}, {"pads", Attr::Ints(c.pads)},
                          {"output_padding", Attr::Ints(c.out_pad)}}});
    ExpectFloats(y, out_dims, want, 1e-5f, 1e-5f);
  }
}

TEST(ConvTransposeTest, OutputShapeAndBias) {
  // x 1x1x3x3 of ones, w 1x2x3x3 of ones, stride 2, output_shape 7x7 (no
  // padding needed): each output counts the windows covering it, + bias.
  RtTensor y = RunOne({"ConvTranspose",
                       {{"x", F32({1, 1, 3, 3}, std::vector<float>(9, 1))},
                        {"w", F32({1, 2, 3, 3}, std::vector<float>(18, 1))},
                        {"b", F32({2}, {0, 100})}},
                       {{"strides", Attr::Ints({2, 2})}, {"output_shape", Attr::Ints({7, 7})}}});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 7, 7}));
  auto cover = [](int64_t i) { return (i % 2 == 0 && i > 0 && i < 6) ? 2.0f : 1.0f; };
  for (int64_t i = 0; i < 7; ++i) {
    for (int64_t j = 0; j < 7; ++j) {
      EXPECT_EQ(y.data<float>()[i * 7 + j], cover(i) * cover(j)) << i << "," << j;
      EXPECT_EQ(y.data<float>()[49 + i * 7 + j], 100 + cover(i) * cover(j));
    }
  }
}

}  // namespace
}  // namespace slimpack::runtime
