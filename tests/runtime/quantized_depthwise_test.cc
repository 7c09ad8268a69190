// QLinearConv's depthwise layers (runtime/kernels/quantized_depthwise.h:
// bytes packed as centred floats, the float depthwise kernel, the sums
// requantised as they are unpacked) against the operator's definition computed here in
// int64: every u8 / i8 pairing of x, w and y, per-channel weight zero
// points and scales, biases that wrap the int32 sum, strides, dilations,
// asymmetric pads, rectangular kernels, 1-D and batched inputs, rows
// shorter and longer than a vector, on one and two threads; the kernel
// itself is also called directly, so a dispatch that skipped it would
// not pass unnoticed. On a CPU without AVX2 + FMA the layers take the
// other paths, held to the same definition, and so do layers whose sums
// can pass 2^24 (a 17 x 17 kernel of extreme weights).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/conv_f32.h"
#include "runtime/kernels/quantize_util.h"
#include "runtime/kernels/quantized_depthwise.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using testing::Bytes;
using testing::OpTest;
using testing::RunOne;
using testing::Value;

struct Case {
  int64_t batch, channels;
  std::vector<int64_t> in;      // spatial dims: {w} or {h, w}
  std::vector<int64_t> kernel;  // the same rank
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pads;  // begins then ends
};

std::string Name(const Case& c) {
  std::string s = std::to_string(c.batch) + "x" + std::to_string(c.channels);
  for (int64_t d : c.in) s += "x" + std::to_string(d);
  s += " k";
  for (int64_t d : c.kernel) s += std::to_string(d) + ",";
  s += " s";
  for (int64_t d : c.strides) s += std::to_string(d) + ",";
  s += " d";
  for (int64_t d : c.dilations) s += std::to_string(d) + ",";
  s += " p";
  for (int64_t d : c.pads) s += std::to_string(d) + ",";
  return s;
}

// `extreme`: every |w - wzp| = 255 and |x - xzp| up to 255, so a large
// kernel's sums pass 2^24 and the layer must leave the float kernel.
int kernel_checked = 0;  // cases the kernel itself was run on

// The kernel's description of case c, or nullopt where it has none (no AVX2
// + FMA, or not a 1-D / 2-D window).
std::optional<kernels::Conv2DShape> DepthwiseShape(const Case& c,
                                                   const std::vector<int64_t>& out) {
  const size_t r = c.in.size();
  WindowGeometry g;
  g.kernel = c.kernel;
  g.strides = c.strides;
  g.dilations = c.dilations;
  g.pads_begin.assign(c.pads.begin(), c.pads.begin() + r);
  g.pads_end.assign(c.pads.begin() + r, c.pads.end());
  g.out = out;
  std::vector<int64_t> xd = {c.batch, c.channels};
  xd.insert(xd.end(), c.in.begin(), c.in.end());
  return kernels::DirectConvShape(xd, c.channels, c.channels, g);
}

template <typename X, typename W, typename Y>
void CheckDepthwise(const Case& c, std::mt19937& rng, bool extreme = false) {
  const size_t r = c.in.size();
  const int64_t ch = c.channels;
  std::vector<int64_t> xdims = {c.batch, ch}, wdims = {ch, 1}, out;
  xdims.insert(xdims.end(), c.in.begin(), c.in.end());
  wdims.insert(wdims.end(), c.kernel.begin(), c.kernel.end());
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = c.dilations[d] * (c.kernel[d] - 1) + 1;
    out.push_back((c.in[d] + c.pads[d] + c.pads[r + d] - span) / c.strides[d] + 1);
    in_plane *= c.in[d];
    out_plane *= out.back();
    taps *= c.kernel[d];
  }
  // x ends at an unreadable page (the packing's row-end loads must stop
  // at the tensor's end).
  const RtTensor x = testing::GuardedBytes<X>(xdims, rng);
  RtTensor w = Bytes<W>(wdims, rng), wz = Bytes<W>({ch}, rng), xz = Bytes<X>({}, rng);
  // The output zero point within 40 of the type's middle.
  const RtTensor yz = RtTensor::FromVector<Y>(
      {}, {static_cast<Y>((std::numeric_limits<Y>::min() + std::numeric_limits<Y>::max()) / 2 +
                          static_cast<int>(rng() % 81) - 40)});
  if (extreme) {
    const int64_t nw = ch * std::accumulate(c.kernel.begin(), c.kernel.end(), int64_t{1},
                                            std::multiplies<int64_t>());
    w = RtTensor::FromVector<W>(wdims, std::vector<W>(nw, std::numeric_limits<W>::min()));
    wz = RtTensor::FromVector<W>({ch}, std::vector<W>(ch, std::numeric_limits<W>::max()));
    xz = RtTensor::FromVector<X>({}, {std::numeric_limits<X>::min()});
  }
  // The exact sums, by definition in int64.
  std::vector<int64_t> sums(c.batch * ch * out_plane);
  std::vector<int64_t> largest(ch, 1);  // per channel, of |sum|
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t ci = 0; ci < ch; ++ci) {
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t oy = r == 2 ? o / out[1] : 0, ox = r == 2 ? o % out[1] : o;
        int64_t sum = 0;
        for (int64_t k = 0; k < taps; ++k) {
          const int64_t ky = r == 2 ? k / c.kernel[1] : 0, kx = r == 2 ? k % c.kernel[1] : k;
          const int64_t iy = r == 2 ? oy * c.strides[0] - c.pads[0] + ky * c.dilations[0] : 0;
          const int64_t ix = ox * c.strides[r - 1] - c.pads[r - 1] + kx * c.dilations[r - 1];
          const int64_t h = r == 2 ? c.in[0] : 1, wd = c.in[r - 1];
          if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
          sum += (Value(x, (n * ch + ci) * in_plane + iy * wd + ix) - Value(xz, 0)) *
                 (Value(w, ci * taps + k) - Value(wz, ci));
        }
        sums[(n * ch + ci) * out_plane + o] = sum;
        largest[ci] = std::max(largest[ci], sum < 0 ? -sum : sum);
      }
    }
  }
  // Scales and biases that keep most outputs inside the type's range (a
  // saturated output would hide a wrong sum; checked below): a channel's
  // sums map to about +-60 around the zero point, its bias to +-25 %. With
  // four or more channels, channel 0's bias wraps the int32 sum instead
  // (that channel then mostly saturates).
  const float xs = 0.03f, ys = 0.07f;
  std::vector<float> ws(ch);
  std::vector<int32_t> bias(ch);
  for (int64_t ci = 0; ci < ch; ++ci) {
    const float spread = 0.5f + static_cast<float>(rng() % 100) * 0.005f;  // 0.5 .. 1
    ws[ci] = 60.0f * spread / static_cast<float>(largest[ci]) * ys / xs;
    bias[ci] = static_cast<int32_t>(static_cast<int64_t>(rng() % 51) * largest[ci] / 100 -
                                    largest[ci] / 4);
  }
  if (ch >= 4) bias[0] = std::numeric_limits<int32_t>::max() - 5000;

  // The definition: bias added mod 2^32, then
  // clamp(rint(f32(sum) * (xs * ws[c] / ys)) + yz).
  const ir::DType yt = yz.dtype();
  std::vector<Y> want(c.batch * ch * out_plane);
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t ci = 0; ci < ch; ++ci) {
      const float mult = xs * ws[ci] / ys;
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t sum = sums[(n * ch + ci) * out_plane + o];
        const auto acc = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(sum)) +
                                              static_cast<uint32_t>(bias[ci]));
        want[(n * ch + ci) * out_plane + o] = static_cast<Y>(kernels::quantize_internal::SaturateRound(
            static_cast<float>(acc) * mult, Value(yz, 0), yt));
      }
    }
  }
  int64_t inside = 0;
  for (Y v : want) {
    inside += v != std::numeric_limits<Y>::min() && v != std::numeric_limits<Y>::max();
  }
  EXPECT_GT(inside, static_cast<int64_t>(want.size()) * 2 / 3) << Name(c);
  // The depthwise kernel itself, where it runs here and the layer is
  // within its exactness bound (else the op must not use it: checked by
  // the extreme case's definition below).
  std::optional<kernels::Conv2DShape> shape = DepthwiseShape(c, out);
  if (!extreme && shape.has_value() && kernels::QuantizedDepthwiseApplies(*shape)) {
    std::vector<float> centred(ch * taps);
    std::vector<float> mult(ch);
    for (int64_t ci = 0; ci < ch; ++ci) {
      mult[ci] = xs * ws[ci] / ys;
      for (int64_t k = 0; k < taps; ++k) {
        centred[ci * taps + k] =
            static_cast<float>(Value(w, ci * taps + k)) - static_cast<float>(Value(wz, ci));
      }
    }
    // Both lane widths where the CPU has AVX-512 (else the one it has).
    std::vector<kernels::DepthwiseKernel> widths = {kernels::DepthwiseKernel::kLanes8};
    if (kernels::BestDepthwiseKernel() == kernels::DepthwiseKernel::kLanes16) {
      widths.push_back(kernels::DepthwiseKernel::kLanes16);
    }
    for (kernels::DepthwiseKernel width : widths) {
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        std::vector<Y> got(want.size());
        const kernels::QuantizedDepthwiseArgs a{
            x.raw(), x.dtype(), static_cast<int32_t>(Value(xz, 0)), centred.data(), bias.data(),
            mult.data(), static_cast<int32_t>(Value(yz, 0)), yt,
            reinterpret_cast<uint8_t*>(got.data())};
        kernels::QuantizedDepthwiseConv2D(*shape, a, &pool, width);
        EXPECT_EQ(got, want) << Name(c) << ", the kernel (" << static_cast<int>(width)
                             << ") on " << threads << " threads";
      }
    }
    ++kernel_checked;
  }
  for (int threads : {1, 2}) {
    OpTest t("QLinearConv",
             {{"x", x},
              {"xs", RtTensor::FromVector<float>({}, {xs})},
              {"xz", xz},
              {"w", w},
              {"ws", RtTensor::FromVector<float>({ch}, ws)},
              {"wz", wz},
              {"ys", RtTensor::FromVector<float>({}, {ys})},
              {"yz", yz},
              {"b", RtTensor::FromVector<int32_t>({ch}, bias)}},
             {{"group", ir::Attribute::Int(ch)},
              {"strides", ir::Attribute::Ints(c.strides)},
              {"dilations", ir::Attribute::Ints(c.dilations)},
              {"pads", ir::Attribute::Ints(c.pads)}});
    t.num_threads = threads;
    const RtTensor y = RunOne(t);
    std::vector<int64_t> ydims = {c.batch, ch};
    ydims.insert(ydims.end(), out.begin(), out.end());
    ASSERT_EQ(y.dims(), ydims) << Name(c);
    EXPECT_EQ(y.ToVector<Y>(), want) << Name(c) << ", " << threads << " threads";
  }
}

TEST(QuantizedDepthwiseTest, QLinearConvEqualsTheDefinition) {
  std::mt19937 rng(21);
  // 3x3, stride 1, padded: rows of 13 (a vector and a tail), two images.
  CheckDepthwise<uint8_t, int8_t, uint8_t>({2, 8, {11, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                                           rng);
  // Stride 2 with the pads a TF "SAME" export has (end only).
  CheckDepthwise<int8_t, uint8_t, int8_t>({1, 16, {14, 9}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}},
                                          rng);
  // 5x5 dilated by 2, stride 2 down the rows only.
  CheckDepthwise<uint8_t, uint8_t, int8_t>({1, 5, {17, 20}, {5, 5}, {2, 1}, {2, 2}, {4, 4, 4, 4}},
                                           rng);
  // Wide rows (several vectors per row), rectangular kernel, asymmetric pads.
  CheckDepthwise<int8_t, int8_t, uint8_t>({1, 6, {9, 57}, {3, 5}, {1, 1}, {1, 1}, {1, 2, 0, 1}},
                                          rng);
  // Stride 2 over 112 columns, as a MobileNet's second block.
  CheckDepthwise<uint8_t, int8_t, uint8_t>(
      {1, 4, {112, 112}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}}, rng);
  // Unpadded 7x7 planes, stride 3 (the portable copier's stride).
  CheckDepthwise<uint8_t, int8_t, int8_t>({1, 9, {7, 7}, {3, 3}, {3, 3}, {1, 1}, {0, 0, 0, 0}},
                                          rng);
  // 1-D, batched.
  CheckDepthwise<int8_t, int8_t, int8_t>({3, 6, {37}, {3}, {1}, {1}, {1, 1}}, rng);
  // 17 x 17 taps of |w - wzp| = 255 against |x - xzp| up to 255: sums past
  // 2^24, where floats are no longer exact (another path must run).
  CheckDepthwise<uint8_t, int8_t, uint8_t>(
      {1, 3, {20, 20}, {17, 17}, {1, 1}, {1, 1}, {8, 8, 8, 8}}, rng, true);
  CheckDepthwise<int8_t, uint8_t, int8_t>(
      {1, 2, {18, 18}, {17, 17}, {1, 1}, {1, 1}, {8, 8, 8, 8}}, rng, true);
  if (kernels::QuantizedDepthwiseApplies(kernels::Conv2DShape{})) {
    EXPECT_EQ(kernel_checked, 7);
  }
}

}  // namespace
}  // namespace slimpack::runtime
