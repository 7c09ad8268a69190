// See conv_depthwise.h.
#include "runtime/kernels/conv_depthwise.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/kernels/conv_layout.h"
#include "support/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace slimpack::runtime::kernels {
namespace {

using conv_layout::CeilDiv;
using conv_layout::Layout;

#if defined(__x86_64__)
#define SLP_AVX2 __attribute__((target("avx2,fma")))

// Floats read past a channel's planes by the vectors covering discarded
// columns ow >= out_w (at most 4 vectors of 8 past the last output).
constexpr int64_t kSlack = 64;

// Output rows oh0 .. oh0 + R - 1, columns ow0 .. ow0 + 8V - 1 of one channel:
// acc[r][v] = sum over terms k in order of w[k] * buf[off[k] + (oh0 + r) * wq
// + ow0 + 8v ...], each a fused multiply-add from +0, then + bias. Lanes at
// or past out_w are computed from padding (finite) and not stored.
template <int R, int V>
SLP_AVX2 void Block(const float* buf, int64_t wq, const int32_t* off, int64_t terms,
                    const float* w, float bias, bool has_bias, float* y, int64_t out_w,
                    int64_t valid_cols) {
  __m256 acc[R][V];
  #pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < terms; ++k) {
    const __m256 wv = _mm256_broadcast_ss(w + k);
    const float* bk = buf + off[k];
    #pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      #pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(bk + r * wq + 8 * v), acc[r][v]);
      }
    }
  }
  const __m256 bv = _mm256_set1_ps(bias);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  #pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m256 out = has_bias ? _mm256_add_ps(acc[r][v], bv) : acc[r][v];
      float* dst = y + r * out_w + 8 * v;
      const int64_t n = valid_cols - 8 * v;
      if (n >= 8) {
        _mm256_storeu_ps(dst, out);
      } else if (n > 0) {
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
        _mm256_maskstore_ps(dst, mask, out);
      }
    }
  }
}

using BlockFn = void (*)(const float*, int64_t, const int32_t*, int64_t, const float*, float,
                         bool, float*, int64_t, int64_t);

// kBlocks[V - 1][R - 1]: R output rows of V vectors, at most eight
// accumulators (R * V <= 8) so the sixteen ymm registers also hold the
// broadcast weight and the loaded inputs.
constexpr BlockFn kBlocks[4][8] = {
    {Block<1, 1>, Block<2, 1>, Block<3, 1>, Block<4, 1>, Block<5, 1>, Block<6, 1>, Block<7, 1>,
     Block<8, 1>},
    {Block<1, 2>, Block<2, 2>, Block<3, 2>, Block<4, 2>, nullptr, nullptr, nullptr, nullptr},
    {Block<1, 3>, Block<2, 3>, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    {Block<1, 4>, Block<2, 4>, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

// Channels per parallel task: from the shape alone (no sum depends on it).
constexpr int64_t kChannelsPerTask = 4;
#endif

}  // namespace

bool DepthwiseConv2DApplies(const Conv2DShape& s) {
#if defined(__x86_64__)
  static const bool cpu = support::CpuAllows(support::CpuFeature::kAvx2Fma);
  return cpu && s.group == s.channels && s.out_channels == s.channels;
#else
  (void)s;
  return false;
#endif
}

#if defined(__x86_64__)
namespace {

// The kernel, each channel's input packed by pack(nc, l, buf,
// zero_padding) and its sums written to out(nc) (out_h x out_w floats),
// then handed to done(nc, sums).
template <typename Pack, typename Out, typename Done>
void RunDepthwise(const Conv2DShape& s, const float* w, const float* bias, ThreadPool* pool,
                  const Pack& pack, const Out& out, const Done& done) {
  const Layout l = conv_layout::MakeLayout(s);
  const int64_t terms = s.kernel_h * s.kernel_w;
  std::vector<int32_t> off(terms);
  for (int64_t i = 0; i < s.kernel_h; ++i) {
    for (int64_t j = 0; j < s.kernel_w; ++j) {
      off[i * s.kernel_w + j] = static_cast<int32_t>(conv_layout::TermOffset(s, l, i, j));
    }
  }
  // Column vectors per block (up to 4, the rest of a wider row in further
  // blocks) and output rows per block (eight accumulators in all).
  const int64_t vectors = std::min<int64_t>(4, CeilDiv(s.out_w, 8));
  const int64_t rows = 8 / vectors;
  const int64_t block_cols = 8 * vectors;
  const int64_t planes = s.batch * s.channels;
  ParallelFor(pool, CeilDiv(planes, kChannelsPerTask), [&](int64_t t) {
    // Each thread's buffer, and the shape whose padding it holds: the
    // kernels only read it, so after the first channel of a shape every
    // later one (of this call or the next of that shape) only copies its
    // values in. Zeroing the padding was most of a MobileNet's packing.
    thread_local std::vector<float> buf;
    thread_local std::optional<Conv2DShape> padded_for;
    if (static_cast<int64_t>(buf.size()) < l.channel_stride + kSlack) {
      buf.assign(l.channel_stride + kSlack, 0.0f);
      padded_for.reset();
    }
    std::fill(buf.begin() + l.channel_stride, buf.begin() + l.channel_stride + kSlack, 0.0f);
    bool zeroed = padded_for && conv_layout::SamePadding(*padded_for, s);
    padded_for = s;
    for (int64_t nc = t * kChannelsPerTask; nc < std::min(planes, (t + 1) * kChannelsPerTask);
         ++nc) {
      const int64_t c = nc % s.channels;
      pack(nc, l, buf.data(), !zeroed);
      zeroed = true;
      const float* wc = w + c * terms;
      const float b = bias != nullptr ? bias[c] : 0.0f;
      float* yc = out(nc);
      for (int64_t oh = 0; oh < s.out_h; oh += rows) {
        const int64_t r = std::min(rows, s.out_h - oh);
        for (int64_t ow = 0; ow < s.out_w; ow += block_cols) {
          const int64_t cols = std::min(block_cols, s.out_w - ow);
          const int64_t v = CeilDiv(cols, 8);
          kBlocks[v - 1][r - 1](buf.data() + oh * l.wq + ow, l.wq, off.data(), terms, wc, b,
                                bias != nullptr, yc + oh * s.out_w + ow, s.out_w, cols);
        }
      }
      done(nc, yc);
    }
  });
}

}  // namespace
#endif

void DepthwiseConv2D(const Conv2DShape& s, const float* x, const float* w,
                     const float* bias, float* y, ThreadPool* pool) {
#if defined(__x86_64__)
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  RunDepthwise(
      s, w, bias, pool,
      [&](int64_t nc, const Layout& l, float* buf, bool zero_padding) {
        conv_layout::PackChannel(s, l, x + nc * in_plane, buf, zero_padding);
      },
      [&](int64_t nc) { return y + nc * out_plane; }, [](int64_t, const float*) {});
#else
  (void)s, (void)x, (void)w, (void)bias, (void)y, (void)pool;
#endif
}

void DepthwiseConv2DChannels(const Conv2DShape& s, const float* w, const DepthwisePackFn& pack,
                             const DepthwiseDoneFn& done, ThreadPool* pool) {
#if defined(__x86_64__)
  const int64_t out_plane = s.out_h * s.out_w;
  RunDepthwise(
      s, w, nullptr, pool,
      [&](int64_t nc, const Layout& l, float* buf, bool zero_padding) {
        pack(nc, l, buf, zero_padding);
      },
      [&](int64_t) {
        thread_local std::vector<float> sums;
        if (static_cast<int64_t>(sums.size()) < out_plane) sums.resize(out_plane);
        return sums.data();
      },
      done);
#else
  (void)s, (void)w, (void)pack, (void)done, (void)pool;
#endif
}

}  // namespace slimpack::runtime::kernels
