// The body of the channels-in-lanes depthwise kernel (conv_depthwise_lanes.h),
// written once over an instruction-set policy V and instantiated by
// conv_depthwise_lanes_avx512.cc (16 lanes) and conv_depthwise_lanes_avx2.cc
// (8). Everything is in an anonymous namespace and nothing calls an inline
// function of another header (no std::min): each object keeps its own
// copies, compiled for its instruction set, and the linker cannot hand an
// AVX-512 copy to code that runs on an AVX2 CPU.
//
// V provides: kLanes; Vec; Zero(); Set(f); Load(p); Store(p, v); LoadN(p, n)
// (lanes at or past n read as zero, nothing past p + n touched); StoreN(p,
// v, n) (lanes below n stored); Bytes(p) (kLanes uint8_t or int8_t as
// floats); Fma(a, b, c) = a * b + c rounded once; Add(a, b); Sub(a, b);
// Transpose(Vec r[kLanes]) (r[i] lane j <-> r[j] lane i); Activate(v, act);
// for Requant (conv_depthwise_lanes.h): VecI; Ints(p, n) (n <= kLanes
// int32 from p, zeros after); SetInt(i); Requantize(sum, bias, mult, flo,
// fhi, zp) (the requantised int32 lanes, their bits as a Vec);
// StoreBytes(p, v, n) (the low byte of v's first n int32 lanes).
// Optionally (kByteBlock > 0, else 0): BytesTransposed(src, stride, zp,
// v[kByteBlock]) (v[p] lane l = float(src[l * stride + p]) - zp, all
// kLanes rows) and StoreBytesTransposed(v[kLanes], y, stride) (y[l *
// stride + p] = the low byte of v[p] lane l, all lanes).
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_IMPL_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_IMPL_H_

#include <cstdint>
#include <type_traits>

#include "runtime/kernels/conv_depthwise_lanes.h"

namespace slimpack::runtime::kernels::depthwise_lanes {
namespace {

inline int64_t Lesser(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t Greater(int64_t a, int64_t b) { return a > b ? a : b; }

// Output pixels per register block: P accumulators, the tap's weights and
// one input vector fit the sixteen ymm registers (AVX-512 has more, but a
// 7- or 14-wide row fills 7 or 2 x 7 anyway).
constexpr int kMaxPixels = 8;

template <class V>
void ZeroPixels(float* dst, int64_t pixels) {
  for (int64_t p = 0; p < pixels; ++p) V::Store(dst + p * V::kLanes, V::Zero());
}

// n <= kLanes values from p (floats, or bytes as float(x) - zp: exact)
// in the first n lanes; the others are not used. Nothing past p + n is read.
template <class V, typename T>
typename V::Vec LoadRow(const T* p, int64_t n, typename V::Vec zp) {
  if constexpr (std::is_same_v<T, float>) {
    return n == V::kLanes ? V::Load(p) : V::LoadN(p, n);
  } else {
    if (n == V::kLanes) return V::Sub(V::Bytes(p), zp);
    T tail[V::kLanes] = {};
    for (int64_t i = 0; i < n; ++i) tail[i] = p[i];
    return V::Sub(V::Bytes(tail), zp);
  }
}

// Positions [f, f + n) (n <= kLanes) of the first `count` rows of
// `src` (row l at src + l * stride) as n vectors, v[p] lane l = row l's
// position f + p; lanes at or past count are zero.
template <class V, typename T>
void TransposeIn(const T* src, int64_t stride, int64_t count, int64_t f, int64_t n,
                 typename V::Vec zp, typename V::Vec v[V::kLanes]) {
  for (int64_t l = 0; l < V::kLanes; ++l) {
    v[l] = l < count ? LoadRow<V>(src + l * stride + f, n, zp) : V::Zero();
  }
  V::Transpose(v);
}

// The block's weights as one vector per tap (lanes at or past t.count
// zero), transposed a vector of taps at a time.
template <class V>
void PackWeights(int64_t taps, const Task& t, float* weights) {
  typename V::Vec v[V::kLanes];
  for (int64_t k = 0; k < taps; k += V::kLanes) {
    const int64_t n = Lesser(V::kLanes, taps - k);
    TransposeIn<V>(t.w, taps, t.count, k, n, V::Zero(), v);
    for (int64_t p = 0; p < n; ++p) V::Store(weights + (k + p) * V::kLanes, v[p]);
  }
}

// The band's input rows ih0 .. ih0 + in_rows - 1 as pixel vectors of the
// block's channels: buffer pixel (r, jp) holds input (ih0 + r, jp -
// pad_left), zero outside the image and in lanes at or past t.count. The
// image rows are transposed a vector of flattened positions at a time (a
// row may be narrower than a vector) and each pixel stored where its
// padded row puts it.
template <class V, typename T>
void PackBand(const Conv2DShape& s, const Task& t, int64_t ih0, int64_t in_rows, float* band) {
  constexpr int L = V::kLanes;
  const int64_t wp = t.g->padded_width;
  const int64_t lo = Lesser(wp, s.pad_left), hi = Lesser(wp, s.pad_left + s.width);
  for (int64_t r = 0; r < in_rows; ++r) {
    float* row = band + r * wp * L;
    const int64_t ih = ih0 + r;
    if (ih < 0 || ih >= s.height) {
      ZeroPixels<V>(row, wp);
      continue;
    }
    ZeroPixels<V>(row, lo);
    ZeroPixels<V>(row + hi * L, wp - hi);
  }
  const int64_t r0 = Greater(ih0, 0), r1 = Lesser(ih0 + in_rows, s.height);
  if (r0 >= r1) return;
  const int64_t plane = s.height * s.width, end = r1 * s.width;
  const T* x = static_cast<const T*>(t.x);
  const typename V::Vec zp = V::Set(t.zero_point);
  int64_t ih = r0, col = 0;
  // Pixel vectors v[0 .. n) of the next n flattened positions into their
  // padded rows.
  auto put = [&](const typename V::Vec* v, int64_t n) {
    for (int64_t p = 0; p < n; ++p) {
      const int64_t jp = s.pad_left + col;
      if (jp < wp) V::Store(band + ((ih - ih0) * wp + jp) * L, v[p]);
      if (++col == s.width) col = 0, ++ih;
    }
  };
  int64_t f = r0 * s.width;
  if constexpr (!std::is_same_v<T, float> && V::kByteBlock > 0) {
    // A full block of channels: the bytes transposed before they are
    // widened (V::BytesTransposed), fewer shuffles than widening each
    // channel's row and transposing floats.
    if (t.count == L) {
      typename V::Vec v[V::kByteBlock];
      for (; f + V::kByteBlock <= end; f += V::kByteBlock) {
        V::BytesTransposed(x + f, plane, zp, v);
        put(v, V::kByteBlock);
      }
    }
  }
  typename V::Vec v[L];
  for (; f < end; f += L) {
    const int64_t n = Lesser(L, end - f);
    TransposeIn<V>(x, plane, t.count, f, n, zp, v);
    put(v, n);
  }
}

// P output pixels of one row: out[p] = sum over taps (i, j), in that order,
// of w(i, j) * in[i * row_step + j * tap_step + p * pixel_step], each a
// fused multiply-add from +0, then + bias.
template <class V, int P>
void Pixels(const float* in, int64_t row_step, int64_t tap_step, int64_t pixel_step,
            const float* weights, int64_t kh, int64_t kw, const float* bias, float* out) {
  constexpr int L = V::kLanes;
  typename V::Vec acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = V::Zero();
  for (int64_t i = 0; i < kh; ++i) {
    const float* row = in + i * row_step;
    const float* wi = weights + i * kw * L;
    for (int64_t j = 0; j < kw; ++j) {
      const typename V::Vec wv = V::Load(wi + j * L);
      const float* q = row + j * tap_step;
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[p] = V::Fma(wv, V::Load(q + p * pixel_step), acc[p]);
    }
  }
  if (bias != nullptr) {
    const typename V::Vec b = V::Load(bias);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[p] = V::Add(acc[p], b);
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) V::Store(out + p * L, acc[p]);
}

template <class V>
using PixelsFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t,
                          int64_t, const float*, float*);

template <class V>
constexpr PixelsFn<V> kPixels[kMaxPixels] = {Pixels<V, 1>, Pixels<V, 2>, Pixels<V, 3>,
                                             Pixels<V, 4>, Pixels<V, 5>, Pixels<V, 6>,
                                             Pixels<V, 7>, Pixels<V, 8>};

// The band's sums (rows x out_w pixel vectors, flattened as the planes'
// rows oh0 .. oh1 - 1 are) transposed into the block's outputs (channel l's
// rows at t.y + l * t.y_stride).
template <class V>
void UnpackRequantized(const Conv2DShape& s, const Task& t, const float* sums) {
  constexpr int L = V::kLanes;
  const Requant& r = *t.requant;
  const int64_t total = (t.oh1 - t.oh0) * s.out_w;
  const typename V::VecI bias = V::Ints(r.bias, t.count), zp = V::SetInt(r.zp);
  const typename V::Vec mult = LoadRow<V>(r.mult, t.count, V::Zero());
  const typename V::Vec flo = V::Set(static_cast<float>(r.lo - r.zp));
  const typename V::Vec fhi = V::Set(static_cast<float>(r.hi - r.zp));
  typename V::Vec v[L];
  for (int64_t f = 0; f < total; f += L) {
    const int64_t n = Lesser(L, total - f);
    for (int64_t p = 0; p < L; ++p) {
      v[p] = p < n ? V::Requantize(V::Load(sums + (f + p) * L), bias, mult, flo, fhi, zp)
                   : V::Zero();
    }
    if constexpr (V::kByteBlock > 0) {
      if (n == L && t.count == L) {  // bytes transposed after narrowing
        V::StoreBytesTransposed(v, r.y + f, r.y_stride);
        continue;
      }
    }
    V::Transpose(v);  // moves the int32 lanes' bits
    for (int64_t l = 0; l < t.count; ++l) V::StoreBytes(r.y + l * r.y_stride + f, v[l], n);
  }
}

template <class V>
void UnpackSums(const Conv2DShape& s, const Task& t, const float* sums) {
  constexpr int L = V::kLanes;
  if (t.requant != nullptr) {
    UnpackRequantized<V>(s, t, sums);
    return;
  }
  const int64_t total = (t.oh1 - t.oh0) * s.out_w;
  typename V::Vec v[L];
  for (int64_t f = 0; f < total; f += L) {
    const int64_t n = Lesser(L, total - f);
    for (int64_t p = 0; p < L; ++p) {
      v[p] = p < n ? V::Activate(V::Load(sums + (f + p) * L), t.act) : V::Zero();
    }
    V::Transpose(v);
    for (int64_t l = 0; l < t.count; ++l) {
      if (n == L) {
        V::Store(t.y + l * t.y_stride + f, v[l]);
      } else {
        V::StoreN(t.y + l * t.y_stride + f, v[l], n);
      }
    }
  }
}

template <class V>
void Run(const Conv2DShape& s, const Task& t) {
  constexpr int L = V::kLanes;
  const Geometry& g = *t.g;
  const int64_t kh = s.kernel_h, kw = s.kernel_w, taps = kh * kw;
  float* weights = t.scratch + g.weights_at;
  float* band = t.scratch + g.input_at;
  float* sums = t.scratch + g.sums_at;
  PackWeights<V>(taps, t, weights);
  // Through LoadRow, not a loop of conditional reads: GCC turns those into
  // masked loads, which qemu's TCG faults on past a page (cross-CPU tests).
  alignas(64) float bias[L];
  V::Store(bias, t.bias != nullptr ? LoadRow<V>(t.bias, t.count, V::Zero()) : V::Zero());
  const int64_t rows = t.oh1 - t.oh0;
  const int64_t in_rows = (rows - 1) * s.stride_h + (kh - 1) * s.dilation_h + 1;
  const int64_t ih0 = t.oh0 * s.stride_h - s.pad_top;
  switch (t.input) {
    case Input::kF32:
      PackBand<V, float>(s, t, ih0, in_rows, band);
      break;
    case Input::kU8:
      PackBand<V, uint8_t>(s, t, ih0, in_rows, band);
      break;
    case Input::kI8:
      PackBand<V, int8_t>(s, t, ih0, in_rows, band);
      break;
  }
  const int64_t wp = g.padded_width;
  const int64_t row_step = s.dilation_h * wp * L, tap_step = s.dilation_w * L;
  const int64_t pixel_step = s.stride_w * L;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = band + r * s.stride_h * wp * L;
    float* out = sums + r * s.out_w * L;
    for (int64_t ow = 0; ow < s.out_w; ow += kMaxPixels) {
      const int64_t p = Lesser(kMaxPixels, s.out_w - ow);
      kPixels<V>[p - 1](in + ow * pixel_step, row_step, tap_step, pixel_step, weights, kh, kw,
                        t.bias != nullptr ? bias : nullptr, out + ow * L);
    }
  }
  UnpackSums<V>(s, t, sums);
}

}  // namespace
}  // namespace slimpack::runtime::kernels::depthwise_lanes

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_IMPL_H_
