// Conv over a table of shapes (groups, depthwise, dilations, strides, pads,
// 1x1, 1-D, odd sizes, N > 1) against a naive double-precision loop, the
// direct AVX-512 kernel against the Conv op, 1- vs 3-thread bytes, and the
// fixed summation order bit for bit.
#include "runtime/kernels/conv_direct.h"

#include "runtime/kernels/conv_blocked.h"
#include "runtime/kernels/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "support/cpu_features.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using Attr = ir::Attribute;

struct Case {
  std::string name;
  std::vector<int64_t> x;       // [N, C, spatial...]
  int64_t m;                    // output channels
  int64_t group;
  std::vector<int64_t> kernel;  // spatial
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends
  bool bias;
  std::string auto_pad = "NOTSET";
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"odd_3x3_pad1", {1, 3, 9, 11}, 5, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"batch2_stride2", {2, 4, 7, 6}, 16, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false},
      {"group3_dilation2_asym_pads", {1, 6, 10, 9}, 9, 3, {3, 3}, {1, 1}, {2, 2},
       {2, 1, 0, 2}, true},
      {"depthwise_3x3", {1, 8, 12, 12}, 8, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise_x2_5x5_stride2", {1, 8, 13, 13}, 16, 8, {5, 5}, {2, 2}, {1, 1},
       {2, 2, 2, 2}, false},
      {"pointwise_batch2", {2, 16, 5, 7}, 24, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"pointwise_stride2", {1, 16, 9, 9}, 12, 1, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false},
      {"stem_7x7_stride2", {1, 3, 23, 19}, 10, 1, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}, true},
      {"rect_kernel_mixed_strides", {1, 5, 17, 20}, 7, 1, {2, 4}, {3, 2}, {2, 3},
       {1, 0, 2, 3}, true},
      {"many_tiles_and_tasks", {1, 16, 17, 23}, 72, 1, {3, 3}, {1, 1}, {1, 1},
       {1, 1, 1, 1}, true},
      {"one_d_stride2", {2, 3, 20}, 4, 1, {5}, {2}, {1}, {2, 2}, true},
      {"same_upper_stride2", {1, 4, 8, 7}, 6, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true,
       "SAME_UPPER"},
      {"pad_larger_than_kernel", {1, 2, 4, 5}, 3, 1, {2, 2}, {1, 1}, {1, 1}, {3, 2, 1, 4},
       false},
      // Read in place (stride 1, no padding): the last tiles of the image
      // come from a copy; 1x1 tiles of whole output rows are stored
      // straight into the output, the ragged last one is not.
      {"pointwise_in_place_ragged", {2, 24, 7, 11}, 40, 1, {1, 1}, {1, 1}, {1, 1},
       {0, 0, 0, 0}, true},
      {"valid_3x3_in_place", {1, 5, 10, 13}, 9, 1, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
      // The blocked kernel runs a 1 x 1 plane as one row of 437 positions,
      // cut into three column tasks whose tiles store 8 floats per channel
      // row (spare positions rewritten by the task's next tile); a partial
      // last channel block. And a 1-D row of 600 outputs cut the same way.
      {"pointwise_plane_in_column_tasks", {1, 20, 19, 23}, 24, 1, {1, 1}, {1, 1}, {1, 1},
       {0, 0, 0, 0}, true},
      {"one_d_long_row_column_tasks", {1, 4, 600}, 17, 1, {3}, {1}, {1}, {1, 1}, true},
      // Depthwise rows are channels (8 per tile, a partial last block).
      {"depthwise_valid_in_place", {1, 20, 9, 37}, 20, 20, {3, 3}, {1, 1}, {1, 1},
       {0, 0, 0, 0}, true},
      {"depthwise_37_5x5_stride2", {2, 37, 15, 15}, 37, 37, {5, 5}, {2, 2}, {1, 1},
       {2, 2, 2, 2}, true},
      // The depthwise kernel (conv_depthwise.h) on AVX2 machines: blocks of
      // 8 rows x 1 vector (a 7-wide output), 4 x 2 (14 wide), 2 x 4 and a
      // ragged 3-vector one (29 wide, with masked stores), a second column
      // block (41 wide), a 1-D case, dilation and asymmetric pads.
      {"depthwise_7x7_5x5_pad2", {1, 24, 7, 7}, 24, 24, {5, 5}, {1, 1}, {1, 1},
       {2, 2, 2, 2}, true},
      {"depthwise_14_wide_3x3", {1, 9, 14, 14}, 9, 9, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false},
      {"depthwise_29_wide_stride2", {2, 5, 57, 57}, 5, 5, {3, 3}, {2, 2}, {1, 1},
       {1, 1, 1, 1}, true},
      {"depthwise_41_wide_dilated_asym", {1, 3, 20, 41}, 3, 3, {3, 3}, {1, 1}, {2, 2},
       {1, 2, 3, 2}, true},
      {"depthwise_one_d", {1, 6, 33}, 6, 6, {5}, {1}, {1}, {2, 2}, true},
      // The channel-blocked kernel (conv_blocked.h), with AVX-512's blocks
      // of 16 and AVX2's of 8: 360 terms, in slices kept as partial sums
      // with AVX-512 (five blocks in chunks of 3 and 2; AVX2: ten in five
      // chunks of 2, unsliced), 7-wide rows in one tile; 1,008 terms in
      // slices with either width (24 channels: blocks of 16 + 8, or chunks
      // of 2 and 1 blocks of 8); two groups of 20 channels whose last block
      // is partial either way, with bias, strided wide rows in several
      // tiles; a long 1-D row.
      {"blocked_sliced_terms_7x7", {1, 40, 7, 7}, 80, 1, {3, 3}, {1, 1}, {1, 1},
       {1, 1, 1, 1}, true},
      {"blocked_long_terms_partial_block", {1, 112, 6, 9}, 24, 1, {3, 3}, {1, 1}, {1, 1},
       {1, 1, 1, 1}, true},
      {"blocked_group2_stride2_wide", {2, 8, 21, 40}, 40, 2, {3, 3}, {2, 2}, {1, 1},
       {1, 1, 1, 1}, true},
      {"blocked_one_d_long", {1, 24, 70}, 32, 1, {3}, {1}, {1}, {1, 1}, true},
  };
  return cases;
}

int64_t Count(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

struct Data {
  std::vector<float> x, w, b;
  std::vector<int64_t> w_dims;
};

Data MakeData(const Case& c) {
  Data d;
  d.w_dims = {c.m, c.x[1] / c.group};
  d.w_dims.insert(d.w_dims.end(), c.kernel.begin(), c.kernel.end());
  d.x = Random(Count(c.x), 11);
  d.w = Random(Count(d.w_dims), 12);
  if (c.bias) d.b = Random(c.m, 13);
  return d;
}

OpTest MakeOp(const Case& c, const Data& d, int threads) {
  std::vector<std::pair<std::string, RtTensor>> ins = {{"x", F32(c.x, d.x)},
                                                      {"w", F32(d.w_dims, d.w)}};
  if (c.bias) ins.push_back({"b", F32({c.m}, d.b)});
  std::map<std::string, Attr> attrs = {{"group", Attr::Int(c.group)},
                                       {"kernel_shape", Attr::Ints(c.kernel)},
                                       {"strides", Attr::Ints(c.strides)},
                                       {"dilations", Attr::Ints(c.dilations)}};
  if (c.auto_pad == "NOTSET") {
    attrs["pads"] = Attr::Ints(c.pads);
  } else {
    attrs["auto_pad"] = Attr::String(c.auto_pad);
  }
  OpTest t("Conv", std::move(ins), std::move(attrs));
  t.num_threads = threads;
  return t;
}

// Output size and begin pad per spatial axis (SAME_UPPER: the odd pad last).
void Geometry(const Case& c, std::vector<int64_t>* out, std::vector<int64_t>* pad) {
  const size_t r = c.kernel.size();
  out->assign(r, 0);
  pad->assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = c.x[2 + i];
    const int64_t span = (c.kernel[i] - 1) * c.dilations[i] + 1;
    if (c.auto_pad == "SAME_UPPER") {
      (*out)[i] = (in + c.strides[i] - 1) / c.strides[i];
      const int64_t total = std::max<int64_t>(0, ((*out)[i] - 1) * c.strides[i] + span - in);
      (*pad)[i] = total / 2;
    } else {
      (*pad)[i] = c.pads[i];
      (*out)[i] = (in + c.pads[i] + c.pads[r + i] - span) / c.strides[i] + 1;
    }
  }
}

// The case as the direct kernel's 2-D shape (1-D as 2-D with height 1):
// also the geometry the references below iterate over.
kernels::Conv2DShape ShapeOf(const Case& c) {
  const bool one_d = c.kernel.size() == 1;
  std::vector<int64_t> out, pad;
  Geometry(c, &out, &pad);
  kernels::Conv2DShape s;
  s.batch = c.x[0];
  s.channels = c.x[1];
  s.height = one_d ? 1 : c.x[2];
  s.width = c.x.back();
  s.out_channels = c.m;
  s.group = c.group;
  s.kernel_h = one_d ? 1 : c.kernel[0];
  s.kernel_w = c.kernel.back();
  s.stride_h = one_d ? 1 : c.strides[0];
  s.stride_w = c.strides.back();
  s.dilation_h = one_d ? 1 : c.dilations[0];
  s.dilation_w = c.dilations.back();
  s.pad_top = one_d ? 0 : pad[0];
  s.pad_left = pad.back();
  s.out_h = one_d ? 1 : out[0];
  s.out_w = out.back();
  return s;
}

// Naive convolution in double, plus for every output the sum of |terms|,
// which bounds float rounding: recursive summation of K terms errs by at
// most about K * eps * sum |terms|.
void Reference(const Case& c, const Data& d, std::vector<float>* y,
               std::vector<double>* abs_sum, std::vector<int64_t>* y_dims) {
  std::vector<int64_t> out, pad;
  Geometry(c, &out, &pad);
  const kernels::Conv2DShape s = ShapeOf(c);
  const int64_t n_img = s.batch, ch = s.channels, h = s.height, w = s.width;
  const int64_t kh = s.kernel_h, kw = s.kernel_w, sh = s.stride_h, sw = s.stride_w;
  const int64_t dh = s.dilation_h, dw = s.dilation_w, ph = s.pad_top, pw = s.pad_left;
  const int64_t oh_n = s.out_h, ow_n = s.out_w;
  const int64_t cg = ch / c.group, mg = c.m / c.group;
  *y_dims = {n_img, c.m};
  y_dims->insert(y_dims->end(), out.begin(), out.end());
  y->clear();
  abs_sum->clear();
  for (int64_t n = 0; n < n_img; ++n) {
    for (int64_t m = 0; m < c.m; ++m) {
      const int64_t gi = m / mg;
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double s = c.bias ? d.b[m] : 0.0, a = c.bias ? std::fabs(d.b[m]) : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t row = oh * sh - ph + i * dh, col = ow * sw - pw + j * dw;
                if (row < 0 || row >= h || col < 0 || col >= w) continue;
                const double t =
                    static_cast<double>(d.w[((m * cg + ci) * kh + i) * kw + j]) *
                    d.x[((n * ch + gi * cg + ci) * h + row) * w + col];
                s += t;
                a += std::fabs(t);
              }
            }
          }
          y->push_back(static_cast<float>(s));
          abs_sum->push_back(a);
        }
      }
    }
  }
}

class ConvShapesTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvShapesTest, MatchesNaiveConvolution) {
  const Case& c = GetParam();
  const Data d = MakeData(c);
  std::vector<float> want;
  std::vector<double> abs_sum;
  std::vector<int64_t> dims;
  Reference(c, d, &want, &abs_sum, &dims);
  auto out = MakeOp(c, d, 1).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const RtTensor& y = (*out)[0];
  ASSERT_EQ(y.dims(), dims);
  const int64_t k = Count(c.kernel) * c.x[1] / c.group + 1;
  const double eps = std::numeric_limits<float>::epsilon();
  for (size_t i = 0; i < want.size(); ++i) {
    const double bound = 1e-7 + k * eps * abs_sum[i];
    EXPECT_NEAR(y.data<float>()[i], want[i], bound) << c.name << " element " << i;
  }
}

// The summation order every CPU uses (runtime/gemm.h): per output, one
// fused multiply-add per (channel, kernel row, kernel column) in that order
// from +0, then + bias. Bit for bit, whichever path the op takes here
// (direct AVX-512 or im2col + GEMM), so a convolution gives the same bytes
// on every machine. Padded taps read zero: fma(w, 0, acc) == acc.
// The fixed summation order every kernel keeps: per output, one fused
// multiply-add per (c, kh, kw) in that order from +0, then + bias.
std::vector<float> FixedOrder(const Case& c, const Data& d) {
  const kernels::Conv2DShape s = ShapeOf(c);
  const int64_t n_img = s.batch, ch = s.channels, h = s.height, w = s.width;
  const int64_t kh = s.kernel_h, kw = s.kernel_w, sh = s.stride_h, sw = s.stride_w;
  const int64_t dh = s.dilation_h, dw = s.dilation_w, ph = s.pad_top, pw = s.pad_left;
  const int64_t oh_n = s.out_h, ow_n = s.out_w;
  const int64_t cg = ch / c.group, mg = c.m / c.group;
  std::vector<float> want;
  for (int64_t n = 0; n < n_img; ++n) {
    for (int64_t m = 0; m < c.m; ++m) {
      const int64_t gi = m / mg;
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          float acc = 0.0f;
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t row = oh * sh - ph + i * dh, col = ow * sw - pw + j * dw;
                if (row < 0 || row >= h || col < 0 || col >= w) continue;
                acc = std::fma(d.w[((m * cg + ci) * kh + i) * kw + j],
                               d.x[((n * ch + gi * cg + ci) * h + row) * w + col], acc);
              }
            }
          }
          want.push_back(c.bias ? acc + d.b[m] : acc);
        }
      }
    }
  }
  return want;
}

TEST_P(ConvShapesTest, MatchesTheFixedOrderBitForBit) {
  const Case& c = GetParam();
  const Data d = MakeData(c);
  const std::vector<float> want = FixedOrder(c, d);
  for (int threads : {1, 3}) {
    auto got = MakeOp(c, d, threads).Run();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].num_elements(), static_cast<int64_t>(want.size()));
    EXPECT_EQ(std::memcmp((*got)[0].data<float>(), want.data(), want.size() * sizeof(float)),
              0)
        << c.name << " at " << threads << " threads";
  }
}

TEST_P(ConvShapesTest, ByteIdenticalAtOneAndThreeThreads) {
  const Case& c = GetParam();
  const Data d = MakeData(c);
  auto one = MakeOp(c, d, 1).Run();
  auto three = MakeOp(c, d, 3).Run();
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(three.ok()) << three.status();
  const RtTensor& a = (*one)[0];
  const RtTensor& b = (*three)[0];
  ASSERT_EQ(a.dims(), b.dims());
  EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.num_elements() * sizeof(float)),
            0)
      << c.name;
}

// On an AVX-512 or AVX2 machine the Conv op must take the direct kernel: calling it
// here gives the op's exact bytes. (Elsewhere the op's im2col path is what
// the two tests above check.)
TEST_P(ConvShapesTest, ConvOpUsesDirectKernelWhenSupported) {
  const Case& c = GetParam();
  const kernels::Conv2DShape s = ShapeOf(c);
  const bool simd = support::CpuAllows(support::CpuFeature::kAvx512f) ||
                    support::CpuAllows(support::CpuFeature::kAvx2Fma);
  EXPECT_EQ(kernels::DirectConv2DSupported(s), simd);
  if (!kernels::DirectConv2DSupported(s)) {
    GTEST_SKIP() << "the direct convolution kernel needs AVX-512F or AVX2 + FMA; this CPU "
                    "lacks both (the im2col path ran and was checked above)";
  }
  const Data d = MakeData(c);
  std::vector<float> scratch(kernels::DirectConv2DScratchFloats(s));
  std::vector<float> direct(s.batch * s.out_channels * s.out_h * s.out_w, -1.0f);
  ThreadPool pool(2);
  kernels::DirectConv2D(s, d.x.data(), d.w.data(), c.bias ? d.b.data() : nullptr,
                        direct.data(), scratch.data(), &pool);
  auto op = MakeOp(c, d, 1).Run();
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_EQ((*op)[0].num_elements(), static_cast<int64_t>(direct.size()));
  EXPECT_EQ(std::memcmp((*op)[0].data<float>(), direct.data(), direct.size() * sizeof(float)),
            0)
      << c.name;
}

// The channel-blocked kernel, called with weights packed as a plan keeps
// them: the fixed order bit for bit at one and three threads, on every
// shape it supports. The shapes it refuses are named: depthwise ones and
// groups of fewer output channels than a vector has lanes.
TEST_P(ConvShapesTest, BlockedKernelMatchesTheFixedOrderBitForBit) {
  const Case& c = GetParam();
  const kernels::Conv2DShape s = ShapeOf(c);
  if (!kernels::DirectConv2DSupported(s)) {
    EXPECT_FALSE(kernels::BlockedConv2DSupported(s));
    GTEST_SKIP() << "the blocked kernel needs AVX-512F or AVX2 + FMA; this CPU lacks both";
  }
  const int64_t lanes = support::CpuAllows(support::CpuFeature::kAvx512f) ? 16 : 8;
  const bool depthwise = s.group == s.channels && s.group == s.out_channels;
  const bool expected = !depthwise && s.out_channels / s.group >= lanes;
  ASSERT_EQ(kernels::BlockedConv2DSupported(s), expected) << c.name;
  if (!expected) return;  // the refusal is what this case checks
  const Data d = MakeData(c);
  const std::vector<float> sums = FixedOrder(c, d);
  const auto packed = kernels::PackBlockedConvWeights(s, d.w.data());
  // Each activation in the store against the activation kernels' own
  // functions over the fixed order's outputs.
  for (const kernels::ConvActivation act :
       {kernels::ConvActivation::kNone, kernels::ConvActivation::kRelu,
        kernels::ConvActivation::kHardSwish}) {
    std::vector<float> want = sums;
    if (act == kernels::ConvActivation::kRelu) {
      for (float& v : want) v = v > 0.0f ? v : (v == v ? 0.0f : v);
    }
    if (act == kernels::ConvActivation::kHardSwish) {
      kernels::HardSwishArray(want.data(), want.data(), static_cast<int64_t>(want.size()));
    }
    for (int threads : {1, 3}) {
      std::vector<float> scratch(kernels::BlockedConv2DScratchFloats(s), -7.0f);
      std::vector<float> y(want.size(), -1.0f);
      ThreadPool pool(threads);
      kernels::BlockedConv2D(s, d.x.data(), *packed, c.bias ? d.b.data() : nullptr, y.data(),
                             scratch.data(), &pool, act);
      EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0)
          << c.name << " at " << threads << " threads, activation "
          << static_cast<int>(act);
    }
  }
}

// The depthwise kernel keeps each thread's packed buffer and zeroes its
// padding only when the shape's padding changes: shapes whose padding
// differs, in one buffer, one after another on one thread, then the first
// again with other values, each bit for bit the fixed order. (Without AVX2
// the im2col path runs, checked the same way.)
TEST(ConvDepthwiseBufferTest, AShapeAfterAnotherSeesItsOwnPadding) {
  const Case wide = {"pad2", {1, 24, 7, 7}, 24, 24, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true};
  const Case narrow = {"pad1", {1, 24, 7, 7}, 24, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true};
  const Case corner = {"pad_tl", {1, 8, 7, 7}, 8, 8, {3, 3}, {1, 1}, {1, 1}, {2, 2, 0, 0}, false};
  int round = 0;
  for (const Case* c : {&wide, &narrow, &corner, &wide}) {
    Data d = MakeData(*c);
    d.x = Random(Count(c->x), 100 + round++);  // the repeat packs other values
    const std::vector<float> want = FixedOrder(*c, d);
    auto got = MakeOp(*c, d, 1).Run();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].num_elements(), static_cast<int64_t>(want.size()));
    EXPECT_EQ(std::memcmp((*got)[0].data<float>(), want.data(), want.size() * sizeof(float)), 0)
        << c->name << " (round " << round << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvShapesTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace slimpack::runtime
