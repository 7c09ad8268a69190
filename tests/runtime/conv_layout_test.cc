// The padded, stride-phase input layout the direct convolution kernels read
// (conv_layout.h): each instruction set's row copiers against the portable
// loops, over widths around every vector and tail length, strides 1-3,
// dilations and asymmetric pads, writing nothing outside the channel.
#include "runtime/kernels/conv_layout.h"

#include <cstdint>
#include <cstring>
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

// Floats past the channel's planes that must keep the sentinel.
constexpr int64_t kGuard = 40;

float Sentinel() {
  const uint32_t bits = 0x7fc12345u;  // a NaN no copy produces
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
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
         std::to_string(s.dilation_w) + " pad " + std::to_string(s.pad_top) + "," +
         std::to_string(s.pad_left);
}

// Packs `x` with `isa` into a buffer first filled with `before` (or the
// sentinel), sized for the planes plus a guard.
std::vector<float> Pack(const Conv2DShape& s, const Layout& l, const std::vector<float>& x,
                        bool zero_padding, PackIsa isa, const std::vector<float>* before) {
  std::vector<float> buf(l.channel_stride + kGuard, Sentinel());
  if (before != nullptr) buf = *before;
  kernels::conv_layout::PackChannel(s, l, x.data(), buf.data(), zero_padding, isa);
  return buf;
}

TEST(ConvLayoutTest, EveryCopierPacksThePortableBuffer) {
  const std::vector<PackIsa> isas = IsasHere();
  int shapes = 0;
  for (int64_t width : {1, 2, 7, 8, 9, 14, 15, 16, 17, 23, 31, 32, 33, 47, 57, 112}) {
    for (int64_t stride : {1, 2, 3}) {
      for (int64_t kernel : {1, 3, 5}) {
        for (int64_t dilation : {1, 2}) {
          for (int64_t pad : {0, 1, 2}) {
            Conv2DShape s;
            s.height = 5, s.width = width;
            s.kernel_h = kernel, s.kernel_w = kernel;
            s.stride_h = stride, s.stride_w = stride;
            s.dilation_h = dilation, s.dilation_w = dilation;
            // Asymmetric: the left pad differs from the top one, the right
            // one (implied by out_w) from both.
            s.pad_top = pad, s.pad_left = (pad + 1) % 3;
            const int64_t span = dilation * (kernel - 1) + 1;
            s.out_h = (s.height + 2 * pad - span) / stride + 1;
            s.out_w = (width + s.pad_left + pad - span) / stride + 1;
            if (s.height + 2 * pad < span || width + s.pad_left + pad < span) continue;
            ++shapes;
            const Layout l = kernels::conv_layout::MakeLayout(s);
            const std::vector<float> x = testing::Random(s.height * width, 7 + shapes);
            const std::vector<float> other = testing::Random(s.height * width, 9000 + shapes);
            const std::vector<float> want =
                Pack(s, l, x, true, PackIsa::kPortable, nullptr);
            const float guard = Sentinel();
            for (int64_t i = l.channel_stride; i < l.channel_stride + kGuard; ++i) {
              ASSERT_TRUE(std::memcmp(&want[i], &guard, sizeof(float)) == 0)
                  << Name(s) << ": the portable copy wrote past its planes at " << i;
            }
            // A buffer whose padding a pack of this shape zeroed, holding
            // other values: packing without zeroing must give `want` too.
            const std::vector<float> stale = Pack(s, l, other, true, PackIsa::kPortable, nullptr);
            for (PackIsa isa : isas) {
              const std::vector<float> got = Pack(s, l, x, true, isa, nullptr);
              ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
                  << Name(s) << " with copier " << static_cast<int>(isa);
              const std::vector<float> reused = Pack(s, l, x, false, isa, &stale);
              ASSERT_EQ(std::memcmp(reused.data(), want.data(), want.size() * sizeof(float)), 0)
                  << Name(s) << " without zeroing, copier " << static_cast<int>(isa);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(shapes, 400);
}

}  // namespace
}  // namespace slimpack::runtime
