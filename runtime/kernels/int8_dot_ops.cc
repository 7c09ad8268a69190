// See int8_dot_ops.h: the convolutions (the matmuls are in int8_dot_matmul.cc).
#include "runtime/kernels/int8_dot_ops.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/int8_dot_bytes.h"

namespace slimpack::runtime::kernels {
namespace {

using dot_bytes::AsSigned;
using dot_bytes::RoundUp;
using dot_bytes::U;
using ir::DType;

// dst[4 i + l] = src[l][i * stride] ^ flip for i below n, stride 1 or 2,
// with SSE2 (sixteen positions of four sources into 64 bytes; a stride-2
// block keeps the even bytes of 32 by masking and packing), as long as a
// block's loads stay before `end` (the input tensor's end: they may read
// past a row into the next one, whose bytes go to positions that are not
// stored). Returns how many positions it laid out; the byte loops after it
// finish the rest (none without SSE2). Rows of 7 to 28 positions, stride-2
// rows and row tails had all gone a byte at a time (a third of a W8A8
// ResNet's run).
int64_t InterleaveFour(const uint8_t* const src[4], int64_t n, int64_t stride, uint8_t flip,
                       const uint8_t* end, uint8_t* dst) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (stride != 1 && stride != 2) return 0;
  int64_t avail = INT64_MAX;  // bytes every source may read from its start
  for (int l = 0; l < 4; ++l) avail = std::min<int64_t>(avail, end - src[l]);
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  const __m128i low = _mm_set1_epi16(0x00FF);
  const auto load = [&](int l) {
    const uint8_t* p = src[l] + i * stride;
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (stride == 2) {
      const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
      v = _mm_packus_epi16(_mm_and_si128(v, low), _mm_and_si128(w, low));
    }
    return _mm_xor_si128(v, f);
  };
  for (; i < n && (i + 16) * stride <= avail; i += 16) {
    const __m128i a = load(0), b = load(1), c = load(2), d = load(3);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    alignas(16) uint8_t tail[64];
    auto* out = reinterpret_cast<__m128i*>(i + 16 <= n ? dst + 4 * i : tail);
    _mm_storeu_si128(out, _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    if (i + 16 > n) {
      // 4 to 60 bytes in constant-size pieces (inlined moves, not a call).
      const int64_t bytes = 4 * (n - i);
      uint8_t* to = dst + 4 * i;
      const uint8_t* from = tail;
      for (int64_t piece : {32, 16, 8, 4}) {
        if (bytes & piece) {
          if (piece == 32) std::memcpy(to, from, 32);
          if (piece == 16) std::memcpy(to, from, 16);
          if (piece == 8) std::memcpy(to, from, 8);
          if (piece == 4) std::memcpy(to, from, 4);
          to += piece;
          from += piece;
        }
      }
    }
  }
#else
  (void)src, (void)flip, (void)dst, (void)n, (void)stride, (void)end;
#endif
  return std::min(i, n);
}

}  // namespace

Im2colTable BuildIm2colTable(const std::vector<int64_t>& in, const WindowGeometry& g,
                             int64_t chunk, bool planar_ok) {
  Im2colTable t;
  const size_t r = in.size();
  for (size_t d = 0; d < r; ++d) {
    t.in_size *= in[d];
    t.out_size *= g.out[d];
    t.kprod *= g.kernel[d];
  }
  t.chunk = chunk;
  t.chunks = (t.out_size + chunk - 1) / chunk;
  // A 1x1, stride-1, unpadded window reads whole runs (LayOutColumns copies
  // a chunk's 256 positions at a time); every other 2-D one goes row-wise.
  bool runs = t.kprod == 1;
  for (size_t d = 0; d < r; ++d) {
    runs = runs && g.strides[d] == 1 && g.pads_begin[d] == 0 && g.pads_end[d] == 0;
  }
  if (planar_ok && runs) {
    t.pointwise = true;  // an offset table would be the identity, per call
    return t;
  }
  if (planar_ok && r == 2 && !runs) {
    t.planar = true;
    t.ih = in[0], t.iw = in[1], t.ow = g.out[1];
    t.kh = g.kernel[0], t.kw = g.kernel[1];
    t.sh = g.strides[0], t.sw = g.strides[1];
    t.dh = g.dilations[0], t.dw = g.dilations[1];
    t.ph = g.pads_begin[0], t.pw = g.pads_begin[1];
    return t;
  }
  // Output positions are walked as an odometer and each tap's coordinates
  // unravelled once: unravelling every (tap, position) pair with divisions
  // took longer than a 3-channel stem convolution's products.
  t.offset.resize(t.kprod * t.out_size);
  std::vector<int64_t> tap(t.kprod * r);
  for (int64_t k = 0; k < t.kprod; ++k) {
    int64_t krem = k;
    for (size_t d = r; d-- > 0;) {
      tap[k * r + d] = (krem % g.kernel[d]) * g.dilations[d] - g.pads_begin[d];
      krem /= g.kernel[d];
    }
  }
  std::vector<int64_t> oo(r, 0);  // the current output position
  for (int64_t o = 0; o < t.out_size; ++o) {
    for (int64_t k = 0; k < t.kprod; ++k) {
      int64_t pos = 0;
      for (size_t d = 0; d < r && pos >= 0; ++d) {
        const int64_t q = oo[d] * g.strides[d] + tap[k * r + d];
        pos = (q < 0 || q >= in[d]) ? -1 : pos * in[d] + q;
      }
      t.offset[k * t.out_size + o] = pos;
    }
    for (size_t d = r; d-- > 0;) {  // next output position
      if (++oo[d] < g.out[d]) break;
      oo[d] = 0;
    }
  }
  // A chunk whose positions read consecutive inputs (every tap of a 1x1
  // stride-1 convolution, most of a stride-1 one) is copied as a run
  // instead of looked up one offset at a time (the lookups had cost more
  // than the products).
  t.run.resize(t.kprod * t.chunks);
  for (int64_t k = 0; k < t.kprod; ++k) {
    for (int64_t ch = 0; ch < t.chunks; ++ch) {
      const int64_t* off = t.offset.data() + k * t.out_size + ch * chunk;
      const int64_t len = std::min(chunk, t.out_size - ch * chunk);
      bool ok = off[0] >= 0;
      for (int64_t o = 1; ok && o < len; ++o) ok = off[o] == off[0] + o;
      t.run[k * t.chunks + ch] = ok;
    }
  }
  return t;
}

std::shared_ptr<const DotConvWeights> PrepareDotConvWeights(
    const RtTensor& w, int64_t m, const quantize_internal::QParams& wzp, int64_t taps) {
  auto out = std::make_shared<DotConvWeights>();
  const bool is_signed = w.dtype() == DType::kI8;
  out->m = m;
  out->kdim = w.num_elements() / std::max<int64_t>(1, m);
  out->taps = taps;
  const int64_t cg = out->kdim / std::max<int64_t>(1, taps);
  out->lane_channels = taps > 1 ? RoundUp(cg, 4) : cg;
  // Where ONNX's k = channel * taps + tap goes: tap-major, tap * lane
  // channels + channel, for planar layouts; else k itself.
  const auto at = [&](int64_t k) {
    return taps > 1 ? (k % taps) * out->lane_channels + k / taps : k;
  };
  const int64_t slots = taps > 1 ? taps * out->lane_channels : out->kdim;
  out->kq = (slots + 3) / 4;
  const int64_t ldr = 4 * out->kq;
  out->rows.assign(m * ldr, 0);
  out->ones.assign(ldr, 0);
  for (int64_t k = 0; k < out->kdim; ++k) out->ones[at(k)] = 1;
  out->zp.resize(m);
  out->sum.resize(m);
  const auto* src = w.data<uint8_t>();
  for (int64_t mi = 0; mi < m; ++mi) {
    uint32_t sum = 0;
    for (int64_t k = 0; k < out->kdim; ++k) {
      const uint8_t b = AsSigned(src[mi * out->kdim + k], is_signed);
      out->rows[mi * ldr + at(k)] = b;
      sum += U(static_cast<int8_t>(b));
    }
    out->sum[mi] = static_cast<int32_t>(sum);
    out->zp[mi] = is_signed ? wzp.z(mi) : wzp.z(mi) - 128;
    out->any_zp = out->any_zp || out->zp[mi] != 0;
  }
  if (int8dot::WantsRowHalves()) {
    out->halves.resize(m * out->kq * 2);
    for (int64_t i = 0; i < m * out->kq; ++i) {
      int8dot::RowHalves(out->rows.data() + 4 * i, out->halves.data() + 2 * i);
    }
  }
  return out;
}

namespace {

// One task's im2col columns: for the group's `cg` channels from `x` and the
// chunk's positions, tap kk = channel * kprod + tap of position o at
// panel[(kk / 4) * pcols * 4 + o * 4 + kk % 4], as the unsigned byte
// (x ^ flip); padded taps read xz, whose difference from the zero point is
// zero. A function of its own, with everything in locals: inside the task
// lambda every byte store could alias the captured variables, and GCC
// reloaded them per element (the loop took half a MobileNet's run).
void LayOutColumns(const uint8_t* x, int64_t cg, const Im2colTable& t, int64_t chunk,
                   int64_t pcols, uint8_t flip, uint8_t xz, const uint8_t* x_end,
                   uint8_t* panel) {
  const int64_t kprod = t.kprod, out_size = t.out_size, in_size = t.in_size;
  const int64_t chunks = t.chunks, o0 = chunk * t.chunk, kdim = cg * kprod;
  const int64_t len = std::min(t.chunk, out_size - o0);
  for (int64_t q = 0; q < (kdim + 3) / 4; ++q) {
    uint8_t* quad = panel + q * pcols * 4;
    // Each of the quad's four taps: where it reads, and whether as a run.
    const uint8_t* src[4] = {};
    const int64_t* off[4] = {};
    bool run[4] = {}, present[4] = {};
    bool runs = true;
    for (int j = 0; j < 4; ++j) {
      const int64_t kk = 4 * q + j, c = kk / kprod, k = kk % kprod;
      if (kk >= kdim) {
        runs = false;
        continue;
      }
      present[j] = true;
      if (t.pointwise) {
        run[j] = true;
        src[j] = x + c * in_size + o0;
        continue;
      }
      off[j] = t.offset.data() + k * out_size + o0;
      run[j] = t.run[k * chunks + chunk] != 0;
      src[j] = x + c * in_size + (run[j] ? off[j][0] : 0);
      runs = runs && run[j];
    }
    // Four runs (a 1x1 convolution's channels) are interleaved in bulk.
    const int64_t o = runs ? InterleaveFour(src, len, 1, flip, x_end, quad) : 0;
    for (int j = 0; j < 4; ++j) {
      if (!present[j]) continue;
      uint8_t* dst = quad + j;
      if (run[j]) {
        for (int64_t i = o; i < len; ++i) dst[4 * i] = static_cast<uint8_t>(src[j][i] ^ flip);
        continue;
      }
      const int64_t* tap = off[j];
      const uint8_t* plane = src[j];
      for (int64_t i = o; i < len; ++i) {
        const int64_t at = tap[i];
        dst[4 * i] = at < 0 ? xz : static_cast<uint8_t>(plane[at] ^ flip);
      }
    }
  }
}

// LayOutColumns for a planar table, whose K runs tap-major (k = tap * cgl +
// channel, PrepareDotConvWeights with `taps`; cgl, its lane_channels, is cg
// padded to a multiple of four when there are several taps): a quad of k
// is then four channels at one tap, which read the same positions of four
// planes, so each output row's stretch inside the input is four rows
// interleaved with SSE2 (strides 1 and 2) and the stretches in the padding
// are fills; no table loads. Padding channels (cg <= channel < cgl) read
// the quad's first channel again: their weights are zero and the x' sums
// skip them. A quad that straddles two taps (a 1 x 1 window's last quad
// when cg is not a multiple of four) is laid out byte by byte.
void LayOutRows(const uint8_t* x, int64_t cg, int64_t cgl, const Im2colTable& t, int64_t chunk,
                int64_t pcols, uint8_t flip, uint8_t xz, const uint8_t* x_end, uint8_t* panel) {
  const int64_t o0 = chunk * t.chunk, len = std::min(t.chunk, t.out_size - o0);
  const int64_t ih = t.ih, iw = t.iw, ow = t.ow, sw = t.sw, kdim = cgl * t.kprod;
  // The chunk's stretches of output rows (the same for every quad), and per
  // kernel column the first and last output column reading inside the
  // input row, relative to a stretch's first column: a stretch's [lo, hi)
  // is then a clamp, not four divisions (they had cost more than the
  // copying, for every quad of every 7-wide row).
  struct Stretch {
    int64_t o, n, oy, ox0;
  };
  thread_local std::vector<Stretch> stretches;
  stretches.clear();
  for (int64_t o = 0; o < len;) {
    const int64_t pos = o0 + o, ox0 = pos % ow;
    const int64_t n = std::min(ow - ox0, len - o);
    stretches.push_back({o, n, pos / ow, ox0});
    o += n;
  }
  thread_local std::vector<int64_t> first_in, last_in;
  first_in.resize(t.kw);
  last_in.resize(t.kw);
  for (int64_t kx = 0; kx < t.kw; ++kx) {
    // Output column ox reads input column ox * sw + base, inside the row
    // for ceil(-base / sw) <= ox <= floor((iw - 1 - base) / sw).
    const int64_t base = kx * t.dw - t.pw, need = -base, room = iw - 1 - base;
    first_in[kx] = need <= 0 ? 0 : (need + sw - 1) / sw;
    last_in[kx] = room < 0 ? -1 : room / sw;
  }
  for (int64_t q = 0; q < (kdim + 3) / 4; ++q) {
    uint8_t* quad = panel + q * pcols * 4;
    const int64_t lanes = std::min<int64_t>(4, kdim - 4 * q);
    const int64_t tap = 4 * q / cgl;
    const bool together = lanes == 4 && (4 * q + 3) / cgl == tap;
    for (int64_t j = 0; j < (together ? 1 : lanes); ++j) {
      const int64_t kk = 4 * q + j, tp = kk / cgl, c = kk % cgl;
      const int64_t ky = tp / t.kw, kx = tp % t.kw, base = kx * t.dw - t.pw;
      const uint8_t* planes = x + c * t.in_size;
      for (const Stretch& st : stretches) {
        const int64_t n = st.n, ox0 = st.ox0;
        const int64_t iy = st.oy * t.sh + ky * t.dh - t.ph;
        uint8_t* d = quad + 4 * st.o;
        // Output columns [lo, hi) of this stretch read inside the row.
        int64_t lo = 0, hi = 0;
        if (iy >= 0 && iy < ih) {
          hi = std::clamp<int64_t>(last_in[kx] - ox0 + 1, 0, n);
          lo = std::clamp<int64_t>(first_in[kx] - ox0, 0, hi);
        }
        const int64_t first = (ox0 + lo) * sw + base;  // input column of output lo
        const int64_t at = hi > lo ? iy * iw + first : 0;  // (an address only when read)
        if (together) {
          if (lo > 0) std::memset(d, xz, 4 * lo);
          if (hi < n) std::memset(d + 4 * hi, xz, 4 * (n - hi));
          const uint8_t* r[4];
          for (int l = 0; l < 4; ++l) r[l] = planes + (c + l < cg ? l : 0) * t.in_size + at;
          int64_t i = lo + InterleaveFour(r, hi - lo, sw, flip, x_end, d + 4 * lo);
          for (; i < hi; ++i) {
            for (int l = 0; l < 4; ++l) {
              d[4 * i + l] = static_cast<uint8_t>(r[l][(i - lo) * sw] ^ flip);
            }
          }
          continue;
        }
        uint8_t* dj = d + j;
        for (int64_t i = 0; i < lo; ++i) dj[4 * i] = xz;
        for (int64_t i = hi; i < n; ++i) dj[4 * i] = xz;
        const uint8_t* row = planes + at;
        for (int64_t i = lo; i < hi; ++i) dj[4 * i] = static_cast<uint8_t>(row[(i - lo) * sw] ^ flip);
      }
    }
  }
}

}  // namespace

void DotConv(const RtTensor& x, int32_t xzp, const DotConvWeights& w, int64_t group,
             const Im2colTable& t, ThreadPool* pool, int32_t* acc,
             const DotConvRequant* requant) {
  const bool x_signed = x.dtype() == DType::kI8;
  const auto xz = static_cast<uint8_t>(x_signed ? xzp + 128 : xzp);
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t cg = channels / group, mg = w.m / group;
  const int64_t kdim = cg * t.kprod, ldr = 4 * w.kq;
  // Per output channel, what does not depend on the position:
  // K xzp' wzp' - xzp' sum w'.
  // With `requant`, its bias joins them (the additions commute mod 2^32).
  std::vector<int32_t> fixed(w.m);
  for (int64_t mi = 0; mi < w.m; ++mi) {
    const uint32_t bias = requant != nullptr ? U(requant->bias[mi]) : 0;
    fixed[mi] = static_cast<int32_t>(U(kdim) * U(xz) * U(w.zp[mi]) - U(xz) * U(w.sum[mi]) + bias);
  }
  const int64_t plane = t.out_size;
  const auto* xb = x.data<uint8_t>();
  const uint8_t* x_end = xb + x.num_elements();
  const uint8_t flip = x_signed ? 0x80 : 0;
  // A task lays out one chunk's columns and runs them against its output
  // channels, 64 at a time (the rows then stay in cache across the
  // chunk's column blocks). Only where the chunks are too few to keep the
  // threads busy (a late layer: few positions, many channels, one chunk)
  // are a group's row blocks split between tasks, each laying out its own
  // copy of the columns: repeating the layout for every block of 64 had
  // made it a third of a W8A8 ResNet's run. The sums are exact, so the
  // split does not change them.
  constexpr int64_t kRowBlock = 64;
  const int64_t rblocks = (mg + kRowBlock - 1) / kRowBlock;
  const int64_t base_tasks = batch * group * t.chunks;
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  const int64_t splits =
      threads <= 1 || base_tasks == 0
          ? 1
          : std::clamp<int64_t>((2 * threads + base_tasks - 1) / base_tasks, 1, rblocks);
  const int64_t blocks_per_split = (rblocks + splits - 1) / splits;
  ParallelFor(pool, base_tasks * splits, [&](int64_t task) {
    const int64_t split = task % splits, chunk = (task / splits) % t.chunks;
    const int64_t grp = (task / (splits * t.chunks)) % group;
    const int64_t n = task / (splits * t.chunks * group);
    const int64_t r_begin = split * blocks_per_split * kRowBlock;
    const int64_t r_end = std::min(mg, (split + 1) * blocks_per_split * kRowBlock);
    if (r_begin >= r_end) return;
    const int64_t o0 = chunk * t.chunk, len = std::min(t.chunk, t.out_size - o0);
    const int64_t pcols = RoundUp(len, 16);
    // The chunk's im2col columns as [k / 4][position][k % 4] bytes; padded
    // taps read xzp' (their difference is zero). Padded k are zero in the
    // weight rows, so the buffer's stale bytes there multiply by zero, and
    // the columns past `len` are never stored: the buffer is reused
    // without clearing (a layer runs many small tasks).
    thread_local std::vector<uint8_t> panel;
    panel.resize(std::max<size_t>(panel.size(), w.kq * pcols * 4));
    const uint8_t* xg = xb + (n * channels + grp * cg) * t.in_size;
    if (t.planar) {
      LayOutRows(xg, cg, w.lane_channels, t, chunk, pcols, flip, xz, x_end, panel.data());
    } else {
      LayOutColumns(xg, cg, t, chunk, pcols, flip, xz, x_end, panel.data());
    }
    thread_local std::vector<int32_t> xsum;
    if (w.any_zp) {
      xsum.resize(std::max<size_t>(xsum.size(), len));
      int8dot::Dot({1, len, w.kq, w.ones.data(), ldr, panel.data(), pcols, true, xsum.data(),
                    len});
    }
    for (int64_t r0 = r_begin; r0 < r_end; r0 += kRowBlock) {
      const int64_t rn = std::min(kRowBlock, r_end - r0);
      const int64_t mi0 = grp * mg + r0;
      int8dot::Operands o{rn, len, w.kq, w.rows.data() + mi0 * ldr, ldr, panel.data(),
                          pcols, /*signed_rows=*/true, nullptr, plane};
      if (!w.halves.empty()) o.row_halves = w.halves.data() + mi0 * w.kq * 2;
      if (requant != nullptr) {
        const int8dot::Requant q{fixed.data() + mi0,
                                 w.any_zp ? w.zp.data() + mi0 : nullptr,
                                 xsum.data(),
                                 requant->mult + mi0,
                                 requant->lo,
                                 requant->hi,
                                 requant->zp,
                                 requant->y + (n * w.m + mi0) * plane + o0,
                                 plane};
        o.requant = &q;
        int8dot::Dot(o);
        continue;
      }
      o.out = acc + (n * w.m + mi0) * plane + o0;
      int8dot::Dot(o);
      for (int64_t r = 0; r < rn; ++r) {
        int32_t* row = o.out + r * plane;
        const uint32_t f = U(fixed[mi0 + r]);
        if (w.any_zp) {
          const uint32_t z = U(w.zp[mi0 + r]);
          for (int64_t i = 0; i < len; ++i) {
            row[i] = static_cast<int32_t>(U(row[i]) + f - z * U(xsum[i]));
          }
        } else {
          for (int64_t i = 0; i < len; ++i) row[i] = static_cast<int32_t>(U(row[i]) + f);
        }
      }
    }
  });
}

}  // namespace slimpack::runtime::kernels
