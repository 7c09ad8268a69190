// The padded, stride-phase input layout the direct convolution kernels read
// (conv_layout.h): each instruction set's row copiers against the portable
// loops, over widths around every vector and tail length, strides 1-3,
// dilations, rectangular kernels and asymmetric pads, writing nothing
// outside the channel's planes, zeroing the padding of a reused buffer,
// and reading nothing past the input (which ends at an unreadable page).
#include "runtime/kernels/conv_layout.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/cpu_features.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

using kernels::Conv2DShape;
using kernels::conv_layout::Layout;
using kernels::conv_layout::PackIsa;

// Floats before and after the channel's planes that must keep the sentinel.
constexpr int64_t kGuard = 40;

float Sentinel() {
  const uint32_t bits = 0x7fc12345u;  // a NaN no copy produces
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<PackIsa> IsasHere() {
  std::vector<PackIsa> isas;
  if (support::CpuAllows(support::CpuFeature::kAvx2)) isas.push_back(PackIsa::kAvx2);
  if (support::CpuAllows(support::CpuFeature::kAvx512f)) isas.push_back(PackIsa::kAvx512);
  return isas;
}

std::string Name(const Conv2DShape& s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width) + " k" +
         std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " s" +
         std::to_string(s.stride_h) + "," + std::to_string(s.stride_w) + " d" +
         std::to_string(s.dilation_h) + "," + std::to_string(s.dilation_w) + " pad " +
         std::to_string(s.pad_top) + "," + std::to_string(s.pad_left) + " out " +
         std::to_string(s.out_h) + "x" + std::to_string(s.out_w);
}

// Packs `x` with `isa` into buf[kGuard ..], the rest of buf as given.
std::vector<float> Pack(const Conv2DShape& s, const Layout& l, const float* x, PackIsa isa,
                        std::vector<float> buf) {
  kernels::conv_layout::PackChannel(s, l, x, buf.data() + kGuard, isa);
  return buf;
}

// Shapes around every vector and tail length (widths), strides 1-3,
// kernels 1-5, dilations and asymmetric pads; the rows' stride, kernel,
// dilation, pads and height vary apart from the columns'. *tried counts
// every combination, including those whose window does not fit.
std::vector<Conv2DShape> Shapes(int* tried) {
  std::vector<Conv2DShape> out;
  int shapes = 0;
  for (int64_t width : {1, 2, 7, 8, 9, 14, 15, 16, 17, 23, 31, 32, 33, 47, 57, 112}) {
    for (int64_t stride : {1, 2, 3}) {
      for (int64_t kernel : {1, 3, 5}) {
        for (int64_t dilation : {1, 2}) {
          for (int64_t pad : {0, 1, 2}) {
            ++shapes;
            Conv2DShape s;
            s.height = 3 + shapes % 5, s.width = width;
            s.kernel_w = kernel, s.kernel_h = 1 + (kernel + shapes) % 4;
            s.stride_w = stride, s.stride_h = 1 + (stride + shapes) % 3;
            s.dilation_w = dilation, s.dilation_h = 1 + (dilation + shapes) % 2;
            s.pad_left = pad, s.pad_top = (pad + 1) % 3;
            const int64_t pad_right = (pad + shapes) % 3, pad_bottom = shapes % 2;
            const int64_t span_w = s.dilation_w * (s.kernel_w - 1) + 1;
            const int64_t span_h = s.dilation_h * (s.kernel_h - 1) + 1;
            if (width + pad + pad_right < span_w || s.height + s.pad_top + pad_bottom < span_h) {
              continue;
            }
            s.out_w = (width + pad + pad_right - span_w) / stride + 1;
            s.out_h = (s.height + s.pad_top + pad_bottom - span_h) / s.stride_h + 1;
            out.push_back(s);
          }
        }
      }
    }
  }
  *tried = shapes;
  return out;
}

TEST(ConvLayoutTest, EveryCopierPacksThePortableBuffer) {
  const std::vector<PackIsa> isas = IsasHere();
  const float guard = Sentinel();
  int tried = 0, shapes = 0;
  for (const Conv2DShape& s : Shapes(&tried)) {
    ++shapes;
    const int64_t width = s.width;
    const Layout l = kernels::conv_layout::MakeLayout(s);
    const testing::GuardedBuffer<float> x(testing::Random(s.height * width, 7 + shapes));
    const testing::GuardedBuffer<float> other(testing::Random(s.height * width, 9000 + shapes));
    const testing::GuardedBuffer<float> ones(std::vector<float>(s.height * width, 1.0f));
    const std::vector<float> fresh(l.channel_stride + 2 * kGuard, guard);
    const std::vector<float> want = Pack(s, l, x.data(), PackIsa::kPortable, fresh);
    for (int64_t i = 0; i < kGuard; ++i) {
      const int64_t after = kGuard + l.channel_stride + i;
      ASSERT_TRUE(std::memcmp(&want[i], &guard, sizeof guard) == 0 &&
                  std::memcmp(&want[after], &guard, sizeof guard) == 0)
          << Name(s) << ": the portable copy wrote outside its planes";
    }
    // A buffer packed from other values, its padding (where a pack of
    // all-ones holds zeros) then marked: packing over it must zero the
    // padding again and copy x's values.
    const std::vector<float> ones_packed = Pack(s, l, ones.data(), PackIsa::kPortable, fresh);
    // The planes hold the input's values and +0 padding, nothing of the
    // buffer's earlier contents (the fresh buffer is all sentinels).
    for (int64_t i = kGuard; i < kGuard + l.channel_stride; ++i) {
      const float v = ones_packed[i];
      ASSERT_TRUE(v == 1.0f || (v == 0.0f && !std::signbit(v)))
          << Name(s) << ": plane float " << i - kGuard << " is " << v;
    }
    std::vector<float> stale = Pack(s, l, other.data(), PackIsa::kPortable, fresh);
    for (size_t i = 0; i < stale.size(); ++i) {
      const auto at = static_cast<int64_t>(i);
      if (ones_packed[i] == 0.0f && at >= kGuard && at < kGuard + l.channel_stride) stale[i] = 7.0f;
    }
    ASSERT_TRUE(SameBits(Pack(s, l, x.data(), PackIsa::kPortable, stale), want)) << Name(s);
    for (PackIsa isa : isas) {
      EXPECT_TRUE(SameBits(Pack(s, l, x.data(), isa, fresh), want))
          << Name(s) << " with copier " << static_cast<int>(isa);
      EXPECT_TRUE(SameBits(Pack(s, l, x.data(), isa, stale), want))
          << Name(s) << " over a stale buffer, copier " << static_cast<int>(isa);
    }
  }
  EXPECT_EQ(tried, 864);
  EXPECT_GT(shapes, 700);
}

}  // namespace
}  // namespace slimpack::runtime
