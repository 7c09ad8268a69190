// See conv_layout.h.
#include "runtime/kernels/conv_layout.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace slimpack::runtime::kernels::conv_layout {

int64_t TermOffset(const Conv2DShape& s, const Layout& l, int64_t i, int64_t j) {
  const int64_t di = i * s.dilation_h, dj = j * s.dilation_w;
  const int64_t phase = (di % s.stride_h) * s.stride_w + dj % s.stride_w;
  return phase * l.phase_plane + (di / s.stride_h) * l.wq + dj / s.stride_w;
}

std::vector<int32_t> TermOffsets(const Conv2DShape& s, const Layout& l) {
  const int64_t cg = s.channels / s.group;
  std::vector<int32_t> off(cg * s.kernel_h * s.kernel_w);
  for (int64_t c = 0; c < cg; ++c) {
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        off[(c * s.kernel_h + i) * s.kernel_w + j] =
            static_cast<int32_t>(c * l.channel_stride + TermOffset(s, l, i, j));
      }
    }
  }
  return off;
}

Layout MakeLayout(const Conv2DShape& s) {
  Layout l;
  // Only rows/columns some output reads are kept (SAME padding may leave
  // the last input rows unread).
  const int64_t hp = (s.out_h - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  const int64_t wp = (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  l.hq = CeilDiv(hp, s.stride_h);
  l.wq = CeilDiv(wp, s.stride_w);
  l.phase_plane = l.hq * l.wq;
  l.channel_stride = s.stride_h * s.stride_w * l.phase_plane;
  l.positions = s.out_h * l.wq;
  l.padded_positions = CeilDiv(l.positions, kNr) * kNr;
  for (int64_t i = 0; i < s.kernel_h; ++i) {
    for (int64_t j = 0; j < s.kernel_w; ++j) {
      l.max_term_offset = std::max(l.max_term_offset, TermOffset(s, l, i, j));
    }
  }
  return l;
}

int64_t BufferFloats(const Conv2DShape& s, const Layout& l) {
  return std::max(s.channels * l.channel_stride,
                  (s.channels - 1) * l.channel_stride + l.max_term_offset +
                      l.padded_positions);
}

bool InPlace(const Conv2DShape& s, const Layout& l) {
  return s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 &&
         l.hq == s.height && l.wq == s.width;
}

namespace {

#if defined(__x86_64__)
#define SLP_AVX2 __attribute__((target("avx2")))

// Rows are short (7 to 115 floats in a MobileNet): as loops they cost more
// in control than in copying (PackChannel was a fifth of a MobileNet-style
// run), so each is a few 8-float vectors with a masked tail. Only the
// direct kernels call PackChannel, and they run on AVX2 or AVX-512 CPUs.
SLP_AVX2 inline __m256i TailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

SLP_AVX2 void ZeroRow(float* dst, int64_t n) {
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) _mm256_storeu_ps(dst + t, _mm256_setzero_ps());
  if (t < n) _mm256_maskstore_ps(dst + t, TailMask(n - t), _mm256_setzero_ps());
}

// dst[t] = src[t * stride] for t < n; src[(n - 1) * stride] is the last
// float read (the row may end the tensor).
SLP_AVX2 void CopyRow(const float* src, float* dst, int64_t n, int64_t stride) {
  int64_t t = 0;
  if (stride == 1) {
    for (; t + 8 <= n; t += 8) _mm256_storeu_ps(dst + t, _mm256_loadu_ps(src + t));
    if (t < n) {
      const __m256i m = TailMask(n - t);
      _mm256_maskstore_ps(dst + t, m, _mm256_maskload_ps(src + t, m));
    }
    return;
  }
  if (stride == 2) {
    // Sixteen floats in, the even ones out: [a0 a2 b0 b2 | a4 a6 b4 b6]
    // put in order by 64-bit lanes. The last float a block reads is
    // src[2t + 15]: blocks stop where that would pass src[2(n - 1)].
    for (; t + 8 <= n && 2 * t + 15 <= 2 * (n - 1); t += 8) {
      const __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(src + 2 * t),
                                         _mm256_loadu_ps(src + 2 * t + 8), 0x88);
      _mm256_storeu_ps(dst + t,
                       _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
    }
  }
  for (; t < n; ++t) dst[t] = src[t * stride];
}
#else
void ZeroRow(float* dst, int64_t n) { std::fill(dst, dst + n, 0.0f); }
void CopyRow(const float* src, float* dst, int64_t n, int64_t stride) {
  for (int64_t t = 0; t < n; ++t) dst[t] = src[t * stride];
}
#endif

}  // namespace

void PackChannel(const Conv2DShape& s, const Layout& l, const float* xc, float* dst,
                 bool zero_padding) {
  for (int64_t p = 0; p < s.stride_h; ++p) {
    for (int64_t q = 0; q < s.stride_w; ++q) {
      float* plane = dst + (p * s.stride_w + q) * l.phase_plane;
      // Column t reads input column t * stride_w + off when inside [0, width).
      const int64_t off = q - s.pad_left, sw = s.stride_w;
      const int64_t lo = std::min(l.wq, off >= 0 ? 0 : CeilDiv(-off, sw));
      const int64_t end = s.width - off <= 0 ? 0 : CeilDiv(s.width - off, sw);
      const int64_t hi = std::max(lo, std::min(l.wq, end));
      for (int64_t r = 0; r < l.hq; ++r) {
        float* row = plane + r * l.wq;
        const int64_t src_row = r * s.stride_h + p - s.pad_top;
        if (src_row < 0 || src_row >= s.height) {
          if (zero_padding) ZeroRow(row, l.wq);
          continue;
        }
        if (zero_padding) ZeroRow(row, lo);
        CopyRow(xc + src_row * s.width + off + lo * sw, row + lo, hi - lo, sw);
        if (zero_padding) ZeroRow(row + hi, l.wq - hi);
      }
    }
  }
}

bool SamePadding(const Conv2DShape& a, const Conv2DShape& b) {
  // The padding PackChannel writes depends on these alone (MakeLayout's
  // sizes follow from them too).
  return a.height == b.height && a.width == b.width && a.kernel_h == b.kernel_h &&
         a.kernel_w == b.kernel_w && a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w &&
         a.pad_top == b.pad_top && a.pad_left == b.pad_left && a.out_h == b.out_h &&
         a.out_w == b.out_w;
}

}  // namespace slimpack::runtime::kernels::conv_layout
