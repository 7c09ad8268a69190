// Every depthwise kernel this CPU allows (channels in the lanes of AVX-512
// and AVX2 vectors, conv_depthwise_lanes.h) against
// the fixed summation order, bit for bit, at one and three threads: blocks
// of channels that end part-way (lanes past the last channel), rows
// narrower than a vector (transposes that span rows), bands of output rows
// (a tall input), stride 3, dilation, padding wider than the kernel, unread
// trailing rows and columns, rectangular kernels, 1-D and batches. Inputs
// and weights end at an unreadable page, and the output is followed by
// sentinels no kernel may write.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_depthwise_lanes.h"
#include "support/cpu_features.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using kernels::Conv2DShape;
using kernels::DepthwiseKernel;
using ::slimpack::runtime::testing::GuardedBuffer;
using ::slimpack::runtime::testing::Random;

struct Case {
  std::string name;
  int64_t batch, channels, height, width;
  int64_t kh, kw, sh, sw, dh, dw, pad_top, pad_left, pad_bottom, pad_right;
  bool bias;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // MobileNet's layers, shrunk where the shape allows.
      {"mobilenet_7x7_5x5", 1, 40, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true},
      {"mobilenet_14_5x5_s2", 1, 24, 14, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, true},
      {"mobilenet_28_3x3", 1, 17, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
      // 16 channels of 120-wide rows: several bands of output rows, each
      // repacking the rows it shares with the one before.
      {"tall_bands_s2", 1, 16, 97, 120, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {"tall_bands_s1", 2, 9, 70, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // 33 channels: blocks 16 + 16 + 1, or 8 x 4 + 1; 5-wide rows put
      // three rows and part of a fourth in one transpose.
      {"narrow_rows_partial_block", 2, 33, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"one_channel", 1, 1, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"stride3_dilation2", 1, 20, 23, 31, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, false},
      {"rect_kernel_mixed", 1, 12, 19, 26, 2, 4, 1, 2, 2, 1, 1, 3, 0, 2, true},
      // Padding wider than the kernel: whole padded rows and columns.
      {"pad_wider_than_kernel", 1, 10, 4, 5, 2, 2, 1, 1, 1, 1, 3, 2, 1, 4, false},
      // Stride 2 with no end padding: the last input row and column are
      // never read (not buffered).
      {"unread_last_row_and_column", 1, 18, 8, 8, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true},
      {"valid_no_padding", 1, 8, 9, 37, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true},
      {"one_d", 3, 6, 1, 33, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2, true},
      // Left padding past every buffered column (a 1-wide input, stride 3:
      // outputs read padding only), and a stride above the kernel in one
      // axis only (columns skipped between taps).
      {"left_pad_past_buffer", 1, 19, 3, 1, 1, 1, 1, 3, 1, 1, 0, 5, 0, 0, true},
      {"stride_above_kernel_w", 1, 11, 12, 29, 3, 2, 1, 4, 1, 1, 1, 0, 1, 1, true},
  };
  return cases;
}

Conv2DShape ShapeOf(const Case& c) {
  Conv2DShape s;
  s.batch = c.batch;
  s.channels = s.out_channels = s.group = c.channels;
  s.height = c.height;
  s.width = c.width;
  s.kernel_h = c.kh;
  s.kernel_w = c.kw;
  s.stride_h = c.sh;
  s.stride_w = c.sw;
  s.dilation_h = c.dh;
  s.dilation_w = c.dw;
  s.pad_top = c.pad_top;
  s.pad_left = c.pad_left;
  s.out_h = (c.height + c.pad_top + c.pad_bottom - ((c.kh - 1) * c.dh + 1)) / c.sh + 1;
  s.out_w = (c.width + c.pad_left + c.pad_right - ((c.kw - 1) * c.dw + 1)) / c.sw + 1;
  return s;
}

// Per output: one fused multiply-add per (kernel row, kernel column) in
// that order from +0, padding taps included as w * 0 (as the kernels compute
// them: an inf weight there gives NaN), then + bias.
std::vector<float> FixedOrder(const Conv2DShape& s, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>* bias) {
  std::vector<float> y;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float* xc = x.data() + (n * s.channels + c) * s.height * s.width;
      for (int64_t oh = 0; oh < s.out_h; ++oh) {
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          float acc = 0.0f;
          for (int64_t i = 0; i < s.kernel_h; ++i) {
            for (int64_t j = 0; j < s.kernel_w; ++j) {
              const int64_t row = oh * s.stride_h - s.pad_top + i * s.dilation_h;
              const int64_t col = ow * s.stride_w - s.pad_left + j * s.dilation_w;
              const bool inside = row >= 0 && row < s.height && col >= 0 && col < s.width;
              acc = std::fma(w[(c * s.kernel_h + i) * s.kernel_w + j],
                             inside ? xc[row * s.width + col] : 0.0f, acc);
            }
          }
          y.push_back(bias != nullptr ? acc + (*bias)[c] : acc);
        }
      }
    }
  }
  return y;
}

std::vector<std::pair<std::string, DepthwiseKernel>> AllowedKernels() {
  std::vector<std::pair<std::string, DepthwiseKernel>> k;
  if (support::CpuAllows(support::CpuFeature::kAvx512f)) {
    k.push_back({"lanes16", DepthwiseKernel::kLanes16});
  }
  if (support::CpuAllows(support::CpuFeature::kAvx2Fma)) {
    k.push_back({"lanes8", DepthwiseKernel::kLanes8});
  }
  return k;
}

class DepthwiseKernelsTest : public ::testing::TestWithParam<Case> {};

TEST_P(DepthwiseKernelsTest, EveryKernelGivesTheFixedOrderBitForBit) {
  const Case& c = GetParam();
  const Conv2DShape s = ShapeOf(c);
  ASSERT_TRUE(s.out_h > 0 && s.out_w > 0) << c.name;
  const std::vector<float> x = Random(s.batch * s.channels * s.height * s.width, 21);
  const std::vector<float> w = Random(s.channels * s.kernel_h * s.kernel_w, 22);
  const std::vector<float> b = Random(s.channels, 23);
  const std::vector<float> want = FixedOrder(s, x, w, c.bias ? &b : nullptr);
  const GuardedBuffer<float> gx(x), gw(w), gb(b);
  const auto allowed = AllowedKernels();
  // Without AVX2 + FMA no kernel here runs: Conv takes im2col + GEMM
  // (conv_direct_test checks that path against the same order).
  EXPECT_EQ(kernels::DepthwiseConv2DApplies(s), !allowed.empty()) << c.name;
  constexpr int64_t kSentinels = 64;
  for (const auto& [name, kernel] : allowed) {
    for (int threads : {1, 3}) {
      std::vector<float> y(want.size() + kSentinels, -7.0f);
      ThreadPool pool(threads);
      kernels::DepthwiseConv2D(s, gx.data(), gw.data(), c.bias ? gb.data() : nullptr, y.data(),
                               &pool, kernel);
      EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0)
          << c.name << ", " << name << " kernel, " << threads << " threads";
      for (int64_t i = 0; i < kSentinels; ++i) {
        ASSERT_EQ(y[want.size() + i], -7.0f) << c.name << ", " << name << ": wrote past y";
      }
    }
  }
}

// The bands a shape is cut into cover its rows, and a band's input buffer
// stays within the budget unless one output row alone needs more.
TEST_P(DepthwiseKernelsTest, BandsCoverTheRowsWithinTheBudget) {
  const Conv2DShape s = ShapeOf(GetParam());
  for (int64_t lanes : {8, 16}) {
    const kernels::depthwise_lanes::Geometry g = kernels::depthwise_lanes::MakeGeometry(s, lanes);
    const int64_t extent_h = (s.kernel_h - 1) * s.dilation_h + 1;
    EXPECT_GE(g.band_rows, 1);
    EXPECT_LE(g.band_rows, s.out_h);
    EXPECT_EQ(g.band_in_rows, (g.band_rows - 1) * s.stride_h + extent_h);
    const int64_t band_bytes = g.band_in_rows * g.padded_width * lanes * 4;
    if (g.band_rows > 1) {
      EXPECT_LE(band_bytes, 64 * 1024) << GetParam().name;
    }
    // Room for every write: the taps' weight vectors, the band's padded
    // input rows, its sums.
    EXPECT_GE(g.input_at - g.weights_at, s.kernel_h * s.kernel_w * lanes);
    EXPECT_GE(g.sums_at - g.input_at, g.band_in_rows * g.padded_width * lanes);
    EXPECT_EQ(g.padded_width, (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1);
    EXPECT_GE(g.scratch_floats, g.sums_at + g.band_rows * s.out_w * lanes);
    EXPECT_EQ(g.input_at % 16, 0);
    EXPECT_EQ(g.sums_at % 16, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseKernelsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace slimpack::runtime
