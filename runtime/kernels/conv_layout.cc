// See conv_layout.h.
#include "runtime/kernels/conv_layout.h"

#include <algorithm>

namespace slimpack::runtime::kernels::conv_layout {

int64_t TermOffset(const Conv2DShape& s, const Layout& l, int64_t i, int64_t j) {
  const int64_t di = i * s.dilation_h, dj = j * s.dilation_w;
  const int64_t phase = (di % s.stride_h) * s.stride_w + dj % s.stride_w;
  return phase * l.phase_plane + (di / s.stride_h) * l.wq + dj / s.stride_w;
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

// Rows are short (7 to 115 floats in a MobileNet): as library calls, the
// zero fills and copies GCC makes of these loops cost more than the
// copying, so it keeps them as loops here (clang makes no such calls of
// them and has no such attribute).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
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
          if (zero_padding) {
            for (int64_t t = 0; t < l.wq; ++t) row[t] = 0.0f;
          }
          continue;
        }
        const float* src = xc + src_row * s.width + off;
        if (zero_padding) {
          for (int64_t t = 0; t < lo; ++t) row[t] = 0.0f;
        }
        if (sw == 1) {
          for (int64_t t = lo; t < hi; ++t) row[t] = src[t];
        } else if (sw == 2) {
          // A constant stride vectorises (load two, keep the even lanes); the
          // generic loop below stayed scalar and was a sixth of a
          // MobileNet-style run, whose depthwise layers halve by stride 2.
          for (int64_t t = lo; t < hi; ++t) row[t] = src[2 * t];
        } else {
          for (int64_t t = lo; t < hi; ++t) row[t] = src[t * sw];
        }
        if (zero_padding) {
          for (int64_t t = hi; t < l.wq; ++t) row[t] = 0.0f;
        }
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
