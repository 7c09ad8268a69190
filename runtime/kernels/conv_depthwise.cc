// See conv_depthwise.h.
#include "runtime/kernels/conv_depthwise.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/kernels/conv_depthwise_lanes.h"
#include "runtime/kernels/conv_layout.h"
#include "support/cpu_features.h"

namespace slimpack::runtime::kernels {
using conv_layout::CeilDiv;

bool DepthwiseConv2DApplies(const Conv2DShape& s) {
#if defined(__x86_64__)
  static const bool cpu =
      support::CpuAllows(support::CpuFeature::kAvx2Fma) && depthwise_lanes::Avx2Compiled();
  return cpu && s.group == s.channels && s.out_channels == s.channels;
#else
  (void)s;
  return false;
#endif
}

namespace depthwise_lanes {

Geometry MakeGeometry(const Conv2DShape& s, int64_t lanes) {
  // A band's input buffer is read kernel_h / stride_h times over: kept
  // within a good part of L2, and at least the rows one output row reads.
  constexpr int64_t kBandBytes = 64 * 1024;
  Geometry g;
  g.lanes = lanes;
  g.padded_width = (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  const int64_t extent_h = (s.kernel_h - 1) * s.dilation_h + 1;
  const int64_t row_floats = g.padded_width * lanes;
  const int64_t budget_rows =
      std::max(extent_h, kBandBytes / static_cast<int64_t>(sizeof(float)) / row_floats);
  g.band_rows = std::clamp<int64_t>((budget_rows - extent_h) / s.stride_h + 1, 1, s.out_h);
  g.band_in_rows = (g.band_rows - 1) * s.stride_h + extent_h;
  // Each part starts on a 64-byte boundary (16 floats).
  const auto round_up = [](int64_t n) { return CeilDiv(n, 16) * 16; };
  g.weights_at = 0;
  g.input_at = round_up(s.kernel_h * s.kernel_w * lanes);
  g.sums_at = g.input_at + round_up(g.band_in_rows * row_floats);
  g.scratch_floats = g.sums_at + g.band_rows * s.out_w * lanes;
  return g;
}

}  // namespace depthwise_lanes

void ForEachDepthwiseLanesTask(
    const Conv2DShape& s, DepthwiseKernel kernel, ThreadPool* pool,
    const std::function<void(int64_t n, int64_t c0, depthwise_lanes::Task& t)>& run) {
  namespace dl = depthwise_lanes;
  const int64_t lanes = kernel == DepthwiseKernel::kLanes16 ? 16 : 8;
  const dl::Geometry g = dl::MakeGeometry(s, lanes);
  const int64_t blocks = CeilDiv(s.channels, lanes), bands = CeilDiv(s.out_h, g.band_rows);
  ParallelFor(pool, s.batch * blocks * bands, [&](int64_t i) {
    thread_local std::vector<float> scratch;
    if (static_cast<int64_t>(scratch.size()) < g.scratch_floats + 16) {
      scratch.resize(g.scratch_floats + 16);
    }
    const int64_t band = i % bands, block = i / bands % blocks, n = i / (bands * blocks);
    const int64_t c0 = block * lanes;
    dl::Task t;
    t.g = &g;
    t.count = std::min(lanes, s.channels - c0);
    t.oh0 = band * g.band_rows;
    t.oh1 = std::min(s.out_h, t.oh0 + g.band_rows);
    const auto at = reinterpret_cast<uintptr_t>(scratch.data());
    t.scratch = scratch.data() + (CeilDiv(static_cast<int64_t>(at), 64) * 64 - at) / 4;
    run(n, c0, t);
  });
}

void RunDepthwiseLanes(const Conv2DShape& s, const depthwise_lanes::Task& t) {
#if defined(__x86_64__)
  if (t.g->lanes == 16) {
    depthwise_lanes::RunAvx512(s, t);
  } else {
    depthwise_lanes::RunAvx2(s, t);
  }
#else
  (void)s, (void)t;
#endif
}

DepthwiseKernel BestDepthwiseKernel() {
#if defined(__x86_64__)
  static const DepthwiseKernel k = support::CpuAllows(support::CpuFeature::kAvx512f) &&
                                           depthwise_lanes::Avx512Compiled()
                                       ? DepthwiseKernel::kLanes16
                                       : DepthwiseKernel::kLanes8;
  return k;
#else
  return DepthwiseKernel::kLanes8;  // never run: DepthwiseConv2DApplies is false
#endif
}

void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool, ConvActivation act) {
  DepthwiseConv2D(s, x, w, bias, y, pool, BestDepthwiseKernel(), act);
}

void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool, DepthwiseKernel kernel,
                     ConvActivation act) {
#if defined(__x86_64__)
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  const int64_t taps = s.kernel_h * s.kernel_w;
  ForEachDepthwiseLanesTask(s, kernel, pool,
                            [&](int64_t n, int64_t c0, depthwise_lanes::Task& t) {
                              const int64_t first = n * s.channels + c0;
                              t.x = x + first * in_plane;
                              t.w = w + c0 * taps;
                              t.bias = bias != nullptr ? bias + c0 : nullptr;
                              t.y = y + first * out_plane + t.oh0 * s.out_w;
                              t.y_stride = out_plane;
                              t.act = act;
                              RunDepthwiseLanes(s, t);
                            });
#else
  (void)s, (void)x, (void)w, (void)bias, (void)y, (void)pool, (void)kernel, (void)act;
#endif
}

}  // namespace slimpack::runtime::kernels
