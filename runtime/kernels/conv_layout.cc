// See conv_layout.h.
#include "runtime/kernels/conv_layout.h"

#include <algorithm>

#include "support/cpu_features.h"

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

// One stride phase's plane of one channel, and the part of it PackPlane
// copies: plane row r reads input row r * stride_h + p - pad_top (zeros
// outside the image); columns [lo, hi) read xc at t * sw + off, the rest
// are padding.
struct PlaneJob {
  const float* xc;
  float* plane;
  int64_t hq, wq, height, width;
  int64_t stride_h, p, pad_top;
  int64_t sw, off, lo, hi;
};

// The plane loop, with the row helpers of one instruction set inlined into
// it: rows are short (7 to 115 floats in a MobileNet), so a call per row
// and scalar tails cost more than the copying (packing was a fifth of a
// MobileNet-style run). Every helper writes exactly [dst, dst + n) and
// reads nothing past src[(n - 1) * stride]: rows may end the tensor, and
// threads pack neighbouring channels at once.
#define SLP_PACK_PLANE(ZERO, COPY)                                                   \
  for (int64_t r = 0; r < j.hq; ++r) {                                                \
    float* row = j.plane + r * j.wq;                                                  \
    const int64_t src_row = r * j.stride_h + j.p - j.pad_top;                        \
    if (src_row < 0 || src_row >= j.height) {                                         \
      ZERO(row, j.wq);                                                                \
      continue;                                                                       \
    }                                                                                 \
    ZERO(row, j.lo);                                                                  \
    COPY(j.xc + src_row * j.width + j.off + j.lo * j.sw, row + j.lo, j.hi - j.lo, j.sw); \
    ZERO(row + j.hi, j.wq - j.hi);                                                    \
  }

inline void ZeroPortable(float* dst, int64_t n) { std::fill(dst, dst + n, 0.0f); }

inline void CopyPortable(const float* src, float* dst, int64_t n, int64_t stride) {
  for (int64_t t = 0; t < n; ++t) dst[t] = src[t * stride];
}

void PackPlanePortable(const PlaneJob& j) { SLP_PACK_PLANE(ZeroPortable, CopyPortable) }

#if defined(__x86_64__)
#define SLP_AVX2 __attribute__((target("avx2")))
#define SLP_AVX512 __attribute__((target("avx512f")))

SLP_AVX2 inline __m256i TailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

SLP_AVX2 inline void ZeroAvx2(float* dst, int64_t n) {
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) _mm256_storeu_ps(dst + t, _mm256_setzero_ps());
  if (t < n) _mm256_maskstore_ps(dst + t, TailMask(n - t), _mm256_setzero_ps());
}

// The even floats of the 16 at src, [a0 a2 b0 b2 | a4 a6 b4 b6] put in
// order by 64-bit lanes; only the first `reads` floats are loaded (the
// rest read as zeros and land in odd lanes or past the stored ones).
SLP_AVX2 inline __m256 EvenOf16Avx2(const float* src, int64_t reads) {
  __m256 a, b;
  if (reads >= 16) {
    a = _mm256_loadu_ps(src);
    b = _mm256_loadu_ps(src + 8);
  } else {
    a = _mm256_maskload_ps(src, TailMask(std::min<int64_t>(8, reads)));
    b = _mm256_maskload_ps(src + 8, TailMask(reads - 8));
  }
  const __m256 e = _mm256_shuffle_ps(a, b, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
}

SLP_AVX2 inline void CopyAvx2(const float* src, float* dst, int64_t n, int64_t stride) {
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
    // A block of m outputs reads src[2t .. 2t + 2(m - 1)]: whole loads
    // while src[2t + 15] is inside the row, masked ones for the last block.
    for (; t + 8 < n; t += 8) _mm256_storeu_ps(dst + t, EvenOf16Avx2(src + 2 * t, 16));
    if (t < n) {
      const int64_t m = n - t;
      const __m256 v = EvenOf16Avx2(src + 2 * t, 2 * m - 1);
      if (m == 8) {
        _mm256_storeu_ps(dst + t, v);
      } else {
        _mm256_maskstore_ps(dst + t, TailMask(m), v);
      }
    }
    return;
  }
  CopyPortable(src, dst, n, stride);
}

SLP_AVX2 void PackPlaneAvx2(const PlaneJob& j) { SLP_PACK_PLANE(ZeroAvx2, CopyAvx2) }

SLP_AVX512 inline __mmask16 Lanes16(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << std::max<int64_t>(n, 0)) - 1);
}

SLP_AVX512 inline void Zero512(float* dst, int64_t n) {
  int64_t t = 0;
  for (; t + 16 <= n; t += 16) _mm512_storeu_ps(dst + t, _mm512_setzero_ps());
  if (t < n) _mm512_mask_storeu_ps(dst + t, Lanes16(n - t), _mm512_setzero_ps());
}

SLP_AVX512 inline void Copy512(const float* src, float* dst, int64_t n, int64_t stride) {
  int64_t t = 0;
  if (stride == 1) {
    for (; t + 16 <= n; t += 16) _mm512_storeu_ps(dst + t, _mm512_loadu_ps(src + t));
    if (t < n) {
      const __mmask16 m = Lanes16(n - t);
      _mm512_mask_storeu_ps(dst + t, m, _mm512_maskz_loadu_ps(m, src + t));
    }
    return;
  }
  if (stride == 2) {
    // The even lanes of 32 floats in one two-source permute; a block of m
    // outputs loads src[2t .. 2t + 2(m - 1)] only (masked loads do not
    // fault on the lanes they skip).
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    for (; t < n; t += 16) {
      const int64_t m = std::min<int64_t>(16, n - t), reads = 2 * m - 1;
      const __m512 a = _mm512_maskz_loadu_ps(Lanes16(reads), src + 2 * t);
      const __m512 b = _mm512_maskz_loadu_ps(Lanes16(reads - 16), src + 2 * t + 16);
      _mm512_mask_storeu_ps(dst + t, Lanes16(m), _mm512_permutex2var_ps(a, even, b));
    }
    return;
  }
  CopyPortable(src, dst, n, stride);
}

SLP_AVX512 void PackPlane512(const PlaneJob& j) { SLP_PACK_PLANE(Zero512, Copy512) }
#endif

#undef SLP_PACK_PLANE

}  // namespace

PackIsa BestPackIsa() {
#if defined(__x86_64__)
  static const PackIsa isa = support::CpuAllows(support::CpuFeature::kAvx512f) ? PackIsa::kAvx512
                             : support::CpuAllows(support::CpuFeature::kAvx2) ? PackIsa::kAvx2
                                                                              : PackIsa::kPortable;
  return isa;
#else
  return PackIsa::kPortable;
#endif
}

void PackChannel(const Conv2DShape& s, const Layout& l, const float* xc, float* dst) {
  PackChannel(s, l, xc, dst, BestPackIsa());
}

void PackChannel(const Conv2DShape& s, const Layout& l, const float* xc, float* dst,
                 PackIsa isa) {
  for (int64_t p = 0; p < s.stride_h; ++p) {
    for (int64_t q = 0; q < s.stride_w; ++q) {
      PlaneJob j;
      j.xc = xc;
      j.plane = dst + (p * s.stride_w + q) * l.phase_plane;
      j.hq = l.hq, j.wq = l.wq, j.height = s.height, j.width = s.width;
      j.stride_h = s.stride_h, j.p = p, j.pad_top = s.pad_top;
      // Column t reads input column t * stride_w + off when inside [0, width).
      j.sw = s.stride_w, j.off = q - s.pad_left;
      j.lo = std::min(l.wq, j.off >= 0 ? 0 : CeilDiv(-j.off, j.sw));
      const int64_t end = s.width - j.off <= 0 ? 0 : CeilDiv(s.width - j.off, j.sw);
      j.hi = std::max(j.lo, std::min(l.wq, end));
      switch (isa) {
#if defined(__x86_64__)
        case PackIsa::kAvx512:
          PackPlane512(j);
          break;
        case PackIsa::kAvx2:
          PackPlaneAvx2(j);
          break;
#endif
        default:
          PackPlanePortable(j);
      }
    }
  }
}

}  // namespace slimpack::runtime::kernels::conv_layout
