// QLinearConv's depthwise layers (runtime/kernels/quantized_depthwise.h:
// bytes packed as centred floats, the float depthwise kernel, requantised
// a channel at a time) against the operator's definition computed here in
// int64: every u8 / i8 pairing of x, w and y, per-channel weight zero
// points and scales, biases that wrap the int32 sum, strides, dilations,
// asymmetric pads, rectangular kernels, 1-D and batched inputs, rows
// shorter and longer than a vector, on one and two threads. On a CPU
// without AVX2 + FMA the layers take the other paths, held to the same
// definition.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/quantize_util.h"
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

template <typename X, typename W, typename Y>
void CheckDepthwise(const Case& c, std::mt19937& rng) {
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
  const RtTensor x = Bytes<X>(xdims, rng), w = Bytes<W>(wdims, rng);
  const RtTensor xz = Bytes<X>({}, rng), wz = Bytes<W>({ch}, rng), yz = Bytes<Y>({}, rng);
  std::vector<float> ws(ch);
  // Scales that leave most outputs inside the type's range (a saturated
  // output would hide a wrong sum; channel 0, whose bias wraps the sum,
  // mostly saturates): checked below.
  for (float& v : ws) v = 0.0005f + static_cast<float>(rng() % 100) * 3e-5f;
  std::vector<int32_t> bias(ch);
  for (int32_t& v : bias) v = static_cast<int32_t>(rng() % 40001) - 20000;
  bias[0] = std::numeric_limits<int32_t>::max() - 5000;  // the sum wraps
  const float xs = 0.03f, ys = 0.07f;

  // The definition: exact sums, bias added mod 2^32, then
  // clamp(rint(f32(sum) * (xs * ws[c] / ys)) + yz).
  const ir::DType yt = yz.dtype();
  std::vector<Y> want(c.batch * ch * out_plane);
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t ci = 0; ci < ch; ++ci) {
      const float mult = xs * ws[ci] / ys;
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
  EXPECT_GT(inside, static_cast<int64_t>(want.size()) / 2) << Name(c);
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
}

}  // namespace
}  // namespace slimpack::runtime
