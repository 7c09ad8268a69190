// MakeQxQuants and MakeQkxQuants for many groups at once: group g of a
// batch lives in lane g of W-wide vectors, and every lane performs exactly
// the scalar routine's float operations in the scalar routine's order (add,
// multiply, divide and compare are correctly rounded per lane, and the
// library is built without FMA contraction), so each group's codes and
// scales are bit-identical to ggml_blocks_search.cc's. Only the number of
// groups searched per instruction changes: the trial-scale loops, most of a
// q4_K conversion and of a q4_0 one's Q6_K output matrix, are branch-free
// per lane and run 2W groups per pass. The batch code is written once over
// the width W (GCC vector extensions) and instantiated for W = 16 (AVX-512),
// 8 (AVX2) and 4 (SSE2, NEON), the widest the CPU has picked at run time.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "formats/gguf/ggml_blocks_internal.h"
#include "support/check.h"

// GCC on x86-64 also builds the searches for 8-wide (AVX2) and 16-wide
// (AVX-512) vectors, picked at run time; elsewhere (clang, which checks the
// vector ABI of the inlined helpers per target, and other CPUs) they run on
// 4-wide vectors (SSE2, NEON). The lanes' results are the same at every width.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define SLIMPACK_LANE_X86 1
#else
#define SLIMPACK_LANE_X86 0
#endif
// The two batch functions index only their own fixed-size stack arrays
// (n <= kQK, checked by the entry points) and the caller's buffers within
// the sizes the entry points document. AddressSanitizer's check on each of
// their vector accesses made the sanitizer build's K-quant conversion
// tests take twice as long as with the scalar searches, so they are left
// out of it; UBSan still covers them, and the GCC build's tests compare
// every result with the scalar search.
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define SLIMPACK_LANE_NO_ASAN __attribute__((no_sanitize("address")))
#endif
#endif
#ifndef SLIMPACK_LANE_NO_ASAN
#define SLIMPACK_LANE_NO_ASAN
#endif

namespace slimpack::gguf::internal {
namespace {

// A batch value holds 2W lanes (2W groups) in two vectors of W floats.
// Each sum below is a chain of dependent adds (their order is ggml's), and
// two independent chains keep the floating-point units busy where one
// would wait on each add's latency; more would not fit the registers of
// AVX2 (16) in the search loops.
constexpr int kParts = 2;
constexpr float kInf = __builtin_inff();
// Element alignment only: the batch arrays below are plain stack arrays.
template <int W>
struct VecTypes {
  typedef float F __attribute__((vector_size(4 * W), aligned(4)));
  typedef int32_t I __attribute__((vector_size(4 * W), aligned(4)));
};
template <int W>
using VF = typename VecTypes<W>::F;
template <int W>
using VI = typename VecTypes<W>::I;
template <int W>
struct Vf {
  VF<W> h[kParts];
  float operator[](int64_t g) const { return h[g / W][g % W]; }
};
template <int W>
struct Vi {
  VI<W> h[kParts];
  int32_t operator[](int64_t g) const { return h[g / W][g % W]; }
};

// Every helper is always inlined, so each width's entry point gets them
// compiled for its own ISA and no vector crosses a call (whose ABI differs
// between ISAs).
#define LANE_INLINE __attribute__((always_inline)) inline
// The loops over a value's vectors must vanish (GCC's -O2 leaves a 4- or
// 8-trip loop, and the value in memory, otherwise).
#if defined(__clang__)
#define LANE_UNROLL _Pragma("clang loop unroll(full)")
#else
#define LANE_UNROLL _Pragma("GCC unroll 16")
#endif

#define LANE_BINARY(R, A, B, op, ea, eb)                                  \
  template <int W>                                                        \
  [[maybe_unused]] LANE_INLINE R operator op(A a, B b) {                  \
    R r;                                                                  \
    LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = ea(k) op eb(k); \
    return r;                                                             \
  }
#define LANE_A(k) a.h[k]
#define LANE_B(k) b.h[k]
#define SCALAR_A(k) a
#define SCALAR_B(k) b
#define LANE_ARITH(op)                                   \
  LANE_BINARY(Vf<W>, Vf<W>, Vf<W>, op, LANE_A, LANE_B)   \
  LANE_BINARY(Vf<W>, Vf<W>, float, op, LANE_A, SCALAR_B) \
  LANE_BINARY(Vf<W>, float, Vf<W>, op, SCALAR_A, LANE_B)
LANE_ARITH(+)
LANE_ARITH(-)
LANE_ARITH(*)
LANE_ARITH(/)
#define LANE_COMPARE(op)                                 \
  LANE_BINARY(Vi<W>, Vf<W>, Vf<W>, op, LANE_A, LANE_B)   \
  LANE_BINARY(Vi<W>, Vf<W>, float, op, LANE_A, SCALAR_B) \
  LANE_BINARY(Vi<W>, Vi<W>, int32_t, op, LANE_A, SCALAR_B)
LANE_COMPARE(<)
LANE_COMPARE(>)
LANE_COMPARE(==)
LANE_COMPARE(!=)
LANE_BINARY(Vi<W>, Vi<W>, Vi<W>, &, LANE_A, LANE_B)
LANE_BINARY(Vi<W>, Vi<W>, int32_t, &, LANE_A, SCALAR_B)
LANE_BINARY(Vi<W>, Vi<W>, int32_t, -, LANE_A, SCALAR_B)
template <int W>
LANE_INLINE Vf<W>& operator+=(Vf<W>& a, Vf<W> b) {
  return a = a + b;
}

template <int W>
LANE_INLINE Vf<W> Splat(float v) {
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = VF<W>{} + v;
  return r;
}
template <int W>
LANE_INLINE Vi<W> SplatI(int32_t v) {
  Vi<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = VI<W>{} + v;
  return r;
}
template <int W>
LANE_INLINE Vi<W> AsInt(Vf<W> v) {
  Vi<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = reinterpret_cast<VI<W>>(v.h[k]);
  return r;
}
template <int W>
LANE_INLINE Vf<W> AsFloat(Vi<W> v) {
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = reinterpret_cast<VF<W>>(v.h[k]);
  return r;
}
// Lane by lane mask ? a : b (masks are the all-ones / zero lanes compares give).
template <int W>
LANE_INLINE Vf<W> Select(Vi<W> mask, Vf<W> a, Vf<W> b) {
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = mask.h[k] ? a.h[k] : b.h[k];
  return r;
}
template <int W>
LANE_INLINE Vi<W> SelectI(Vi<W> mask, Vi<W> a, Vi<W> b) {
  Vi<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = mask.h[k] ? a.h[k] : b.h[k];
  return r;
}
template <int W>
LANE_INLINE Vf<W> Sqrt(Vf<W> v) {  // correctly rounded per lane, as sqrtf
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) {
    for (int j = 0; j < W; ++j) r.h[k][j] = __builtin_sqrtf(v.h[k][j]);
  }
  return r;
}
template <int W>
LANE_INLINE Vf<W> Abs(Vf<W> v) {
  return AsFloat(AsInt(v) & 0x7FFFFFFF);
}
template <int W>
LANE_INLINE Vf<W> ToFloat(Vi<W> v) {
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = __builtin_convertvector(v.h[k], VF<W>);
  return r;
}
// An optimisation barrier: the value is unchanged, but GCC can no longer
// see how it was made (used where it would fold selects into ANDed masks).
template <int W>
LANE_INLINE void Opaque(Vf<W>& v) {
#if SLIMPACK_LANE_X86
  LANE_UNROLL for (int k = 0; k < kParts; ++k) asm("" : "+v"(v.h[k]));
#else
  (void)v;
#endif
}
// NearestInt per lane (same bias trick, same integer for every input).
template <int W>
LANE_INLINE Vi<W> Nearest(Vf<W> v) {
  return (AsInt(v + 12582912.0f) & 0x007FFFFF) - 0x00400000;
}
// In ?: form, which GCC compiles to vpmaxsd/vpminsd (a mask-and-select
// form took two instructions each).
template <int W>
LANE_INLINE Vi<W> ClampI(Vi<W> v, int32_t lo, int32_t hi) {
  const VI<W> vlo = VI<W>{} + lo, vhi = VI<W>{} + hi;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) {
    v.h[k] = v.h[k] < vlo ? vlo : v.h[k];
    v.h[k] = v.h[k] > vhi ? vhi : v.h[k];
  }
  return v;
}

// Transposes a W x W block in place: m[r][c] becomes m[c][r], in log2(W)
// butterfly stages. The stage of distance h swaps, in each pair of rows
// (r, r + h) with bit h of r clear, the columns with bit h set of row r
// with the columns with bit h clear of row r + h; each new row is one
// two-input shuffle (one vpermt2ps on AVX-512).
// (On VF<W> itself, not a deduced vector type: deduction would drop the
// typedef's 4-byte alignment and let the compiler assume 16.)
template <int W, int H, std::size_t... K>
LANE_INLINE VF<W> StageLow(VF<W> a, VF<W> b, std::index_sequence<K...>) {
  return __builtin_shufflevector(a, b, ((K & H) ? W + K - H : K)...);
}
template <int W, int H, std::size_t... K>
LANE_INLINE VF<W> StageHigh(VF<W> a, VF<W> b, std::index_sequence<K...>) {
  return __builtin_shufflevector(a, b, ((K & H) ? W + K : K + H)...);
}
template <int W, int H>
LANE_INLINE void TransposeStages(VF<W>* m) {
  for (int r = 0; r < W; ++r) {
    if (r & H) continue;
    const VF<W> a = m[r], b = m[r + H];
    m[r] = StageLow<W, H>(a, b, std::make_index_sequence<W>());
    m[r + H] = StageHigh<W, H>(a, b, std::make_index_sequence<W>());
  }
  if constexpr (H > 1) TransposeStages<W, H / 2>(m);
}

// Lane-major copies of up to 2W groups of n values: out[i][lane] is
// element i of group `lane`; missing groups read as zero. In W x W blocks
// where n allows (the K types' 16 and 32), element by element otherwise.
template <int W>
LANE_INLINE void Transpose(const float* x, int n, int64_t groups, Vf<W>* out) {
  if (n < W || n % W != 0) {
    for (int i = 0; i < n; ++i) out[i] = Splat<W>(0);
    for (int64_t g = 0; g < groups; ++g) {
      for (int i = 0; i < n; ++i) out[i].h[g / W][g % W] = x[g * n + i];
    }
    return;
  }
  for (int q = 0; q < n / W; ++q) {
    VF<W> m[kParts][W];
    for (int p = 0; p < kParts; ++p) {
      const int64_t rows = std::clamp<int64_t>(groups - p * W, 0, W);
      for (int g = 0; g < W; ++g) {
        m[p][g] = VF<W>{};
        if (g < rows) std::memcpy(&m[p][g], x + (p * W + g) * n + q * W, sizeof(VF<W>));
      }
      TransposeStages<W, W / 2>(m[p]);
    }
    for (int i = 0; i < W; ++i) {
      for (int p = 0; p < kParts; ++p) out[q * W + i].h[p] = m[p][i];
    }
  }
}

// make_qx_quants for up to 2W groups.
template <int W>
LANE_INLINE void QxSearch(int n, int nmax, const float* x, const float* weights, int64_t groups,
                          int8_t* L, float* scales) {
  Vf<W> xs[kQK], ws[kQK];
  Vi<W> codes[kQK];
  Transpose(x, n, groups, xs);
  if (weights) {
    Transpose(weights, n, groups, ws);
  } else {
    for (int i = 0; i < n; ++i) ws[i] = xs[i] * xs[i];
  }
  // w*x*l is (w*x)*l: its first product is the same at every trial scale.
  Vf<W> wxs[kQK];
  for (int i = 0; i < n; ++i) wxs[i] = ws[i] * xs[i];
  Vf<W> amax = Splat<W>(0), max = Splat<W>(0);
  for (int i = 0; i < n; ++i) {
    const Vf<W> ax = Abs(xs[i]);
    const Vi<W> larger = ax > amax;
    amax = Select(larger, ax, amax);
    max = Select(larger, xs[i], max);
  }
  // Codes rounded at iscale and their weighted sums, as MakeQxQuants' fit.
  auto round = [&](Vf<W> iscale, int i) __attribute__((always_inline)) {
    return ClampI(Nearest(iscale * xs[i]), -nmax, nmax - 1);
  };
  auto fit = [&](Vf<W> iscale, Vf<W>* sumlx, Vf<W>* suml2) __attribute__((always_inline)) {
    Vf<W> lx = Splat<W>(0), l2 = Splat<W>(0);
    for (int i = 0; i < n; ++i) {
      const Vi<W> l = round(iscale, i);
      const Vf<W> lf = ToFloat(l);
      lx += wxs[i] * lf;
      l2 += ws[i] * lf * lf;
    }
    *sumlx = lx;
    *suml2 = l2;
  };
  Vf<W> sumlx, suml2;
  // Each lane keeps the trial scale that won; its codes are rounded again
  // from it at the end (the same operations, so the same codes).
  Vf<W> best_iscale = static_cast<float>(-nmax) / max;
  fit(best_iscale, &sumlx, &suml2);
  Vf<W> scale = Select(suml2 != 0, sumlx / suml2, Splat<W>(0));
  Vf<W> best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float step = nmax + 0.1f * is;  // as the scalar expression groups it
    const Vf<W> iscale = -step / max;
    fit(iscale, &sumlx, &suml2);
    // (suml2 > 0) && sumlx^2 > best * suml2, as one compare (-inf is never
    // greater; see QkxSearch).
    const Vi<W> better = Select(suml2 > 0, sumlx * sumlx, Splat<W>(-kInf)) > best * suml2;
    best_iscale = Select(better, iscale, best_iscale);
    const Vf<W> s = sumlx / suml2;
    scale = Select(better, s, scale);
    best = Select(better, s * sumlx, best);
  }
  const Vi<W> zero = amax < kGroupMaxEps;
  scale = Select(zero, Splat<W>(0), scale);
  for (int i = 0; i < n; ++i) codes[i] = round(best_iscale, i);
  for (int64_t g = 0; g < groups; ++g) {
    scales[g] = scale[g];
    for (int i = 0; i < n; ++i) {
      L[g * n + i] = static_cast<int8_t>(zero[g] ? 0 : codes[i][g] + nmax);
    }
  }
}

// make_q3_quants (its rmse search, without weights) for up to 2W groups:
// codes at x * -nmax / max, then up to five passes of coordinate descent,
// each element moved to the code its least-squares scale asks for when
// that raises sumlx^2 / suml2. Lanes whose pass changed nothing would
// change nothing again, so all run until no lane changes.
template <int W>
LANE_INLINE void Q3Search(int n, int nmax, const float* x, int64_t groups, int8_t* L,
                          float* scales) {
  if (n <= 0) __builtin_unreachable();  // checked by MakeQ3QuantsGroups
  Vf<W> xs[kQK];
  Vi<W> codes[kQK];
  Transpose(x, n, groups, xs);
  Vf<W> amax = Splat<W>(0), max = Splat<W>(0);
  for (int i = 0; i < n; ++i) {
    const Vf<W> ax = Abs(xs[i]);
    const Vi<W> larger = ax > amax;
    amax = Select(larger, ax, amax);
    max = Select(larger, xs[i], max);
  }
  const Vf<W> iscale = static_cast<float>(-nmax) / max;
  Vf<W> sumlx = Splat<W>(0), suml2 = Splat<W>(0);
  for (int i = 0; i < n; ++i) {
    codes[i] = ClampI(Nearest(iscale * xs[i]), -nmax, nmax - 1);
    const Vf<W> w = xs[i] * xs[i], lf = ToFloat(codes[i]);
    sumlx += w * xs[i] * lf;
    suml2 += w * lf * lf;
  }
  for (int itry = 0; itry < 5; ++itry) {
    Vi<W> changed = SplatI<W>(0);
    for (int i = 0; i < n; ++i) {
      const Vf<W> w = xs[i] * xs[i], lf = ToFloat(codes[i]);
      Vf<W> slx = sumlx - w * xs[i] * lf;
      Vf<W> sl2 = suml2 - w * lf * lf;
      const Vi<W> new_l = ClampI(Nearest(xs[i] * sl2 / slx), -nmax, nmax - 1);
      const Vf<W> nf = ToFloat(new_l);
      const Vf<W> slx0 = slx;  // ggml skips the element unless this is > 0
      slx = slx + w * xs[i] * nf;
      sl2 = sl2 + w * nf * nf;
      // ggml: slx > 0 && new_l != L && sl2 > 0 && slx^2 suml2 > sumlx^2 sl2,
      // as one compare (a failed condition makes the left side -inf). Each
      // mask feeds its select at once and the codes compare as floats
      // (exact for them): GCC 12 turned masks kept for later, integer ones
      // and ANDed ones into scalar compares on AVX-512.
      Vf<W> lhs = slx * slx * suml2;
      lhs = Select(slx0 > 0, lhs, Splat<W>(-kInf));
      Opaque(lhs);  // (else GCC merges the selects into one on ANDed masks)
      lhs = Select(sl2 > 0, lhs, Splat<W>(-kInf));
      Opaque(lhs);
      lhs = Select(nf != lf, lhs, Splat<W>(-kInf));
      const Vi<W> accept = lhs > sumlx * sumlx * sl2;
      codes[i] = SelectI(accept, new_l, codes[i]);
      sumlx = Select(accept, slx, sumlx);
      suml2 = Select(accept, sl2, suml2);
      changed = SelectI(accept, SplatI<W>(1), changed);
    }
    int32_t any = 0;
    for (int64_t g = 0; g < kParts * W; ++g) any |= changed[g];
    if (!any) break;
  }
  const Vi<W> zero = amax < kGroupMaxEps;
  for (int64_t g = 0; g < groups; ++g) {
    scales[g] = zero[g] ? 0.0f : sumlx[g] / suml2[g];
    for (int i = 0; i < n; ++i) {
      L[g * n + i] = static_cast<int8_t>(zero[g] ? 0 : codes[i][g] + nmax);
    }
  }
}

// make_qkx2_quants for up to 2W groups, with use_mad known when it is
// compiled (so the error loop does not test it per element). Null weights
// are ggml's q4_K/q5_K reference weights, computed here in each lane in
// the scalar order.
template <int W, bool kUseMad>
LANE_INLINE void QkxSearch(int n, int nmax, const float* x, const float* weights, int64_t groups,
                           uint8_t* L, float* scales, float* the_mins, float rmin, float rdelta,
                           int nstep) {
  if (n <= 0) __builtin_unreachable();  // checked by MakeQkxQuantsGroups
  Vf<W> xs[kQK], ws[kQK];
  Vi<W> codes[kQK];
  Vf<W> trial[kQK];  // the trial codes, as floats (each search step's error reads them)
  Transpose(x, n, groups, xs);
  if (weights) {
    Transpose(weights, n, groups, ws);
  } else {
    // quantize_row_q4_K_ref: av_x = sqrt(sum x^2 / n), weight av_x + |x|.
    Vf<W> sum_x2 = Splat<W>(0);
    for (int i = 0; i < n; ++i) sum_x2 += xs[i] * xs[i];
    const Vf<W> av_x = Sqrt(sum_x2 / static_cast<float>(n));
    for (int i = 0; i < n; ++i) ws[i] = av_x + Abs(xs[i]);
  }
  Vf<W> min = xs[0], max = xs[0], sum_w = ws[0];
  Vf<W> sum_x = sum_w * xs[0];
  for (int i = 1; i < n; ++i) {
    min = Select(xs[i] < min, xs[i], min);
    max = Select(xs[i] > max, xs[i], max);
    sum_w += ws[i];
    sum_x += ws[i] * xs[i];
  }
  min = Select(min > 0, Splat<W>(0), min);
  const Vi<W> flat = max == min;
  const Vf<W> flat_min = min;
  const Vf<W> fmax = ToFloat(SplatI<W>(nmax));
  auto error = [&](Vf<W> s, Vf<W> offset, const Vf<W>* c) __attribute__((always_inline)) {
    Vf<W> sum = Splat<W>(0);
    for (int i = 0; i < n; ++i) {
      Vf<W> diff = s * c[i] + offset - xs[i];
      diff = kUseMad ? Abs(diff) : diff * diff;
      sum += ws[i] * diff;
    }
    return sum;
  };
  auto round = [&](Vf<W> iscale, Vf<W> offset, int i) __attribute__((always_inline)) {
    return ClampI(Nearest(iscale * (xs[i] - offset)), 0, nmax);
  };
  // Each lane keeps the iscale and offset its best codes were rounded with
  // and rounds them again at the end (the same operations, the same codes).
  Vf<W> best_iscale = fmax / (max - min), best_offset = min;
  Vf<W> scale = 1.0f / best_iscale;
  for (int i = 0; i < n; ++i) trial[i] = ToFloat(round(best_iscale, min, i));
  Vf<W> best_error = error(scale, min, trial);
  for (int is = 0; is <= nstep; ++is) {
    // ggml divides by the range to the best offset so far, not the first.
    const Vf<W> iscale = Splat<W>(rmin + rdelta * is + nmax) / (max - min);
    Vf<W> sum_l = Splat<W>(0), sum_l2 = Splat<W>(0), sum_xl = Splat<W>(0);
    for (int i = 0; i < n; ++i) {
      const Vf<W> lf = ToFloat(round(iscale, min, i));
      trial[i] = lf;
      sum_l += ws[i] * lf;
      sum_l2 += ws[i] * lf * lf;
      sum_xl += ws[i] * lf * xs[i];
    }
    const Vf<W> D = sum_w * sum_l2 - sum_l * sum_l;
    Vf<W> this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    Vf<W> this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    const Vi<W> positive = this_min > 0;
    this_min = Select(positive, Splat<W>(0), this_min);
    this_scale = Select(positive, sum_xl / sum_l2, this_scale);
    const Vf<W> this_error = error(this_scale, this_min, trial);
    // ggml: D > 0 && this_error < best_error. As one compare against an
    // error of +inf where D is not positive (never better, as before):
    // GCC 12 turns the AND of two float compares into 32 scalar ones.
    const Vi<W> better = Select(D > 0, this_error, Splat<W>(kInf)) < best_error;
    best_iscale = Select(better, iscale, best_iscale);
    best_offset = Select(better, min, best_offset);
    best_error = Select(better, this_error, best_error);
    scale = Select(better, this_scale, scale);
    min = Select(better, this_min, min);
  }
  for (int i = 0; i < n; ++i) codes[i] = round(best_iscale, best_offset, i);
  for (int64_t g = 0; g < groups; ++g) {
    the_mins[g] = flat[g] ? -flat_min[g] : -min[g];
    scales[g] = flat[g] ? 0.0f : scale[g];
    for (int i = 0; i < n; ++i) L[g * n + i] = static_cast<uint8_t>(flat[g] ? 0 : codes[i][g]);
  }
}

// Clamp(NearestInt((x + offset) / d), lo, hi) + bias, W values at a time.
template <int W>
LANE_INLINE void RoundGroups(int64_t groups, int n, const float* x, const float* d,
                             const float* offset, int lo, int hi, int bias, uint8_t* L) {
  for (int64_t g = 0; g < groups; ++g) {
    if (d[g] == 0) continue;
    for (int i = 0; i < n; i += W) {
      VF<W> v;
      std::memcpy(&v, x + g * n + i, sizeof v);
      const VF<W> q = (v + offset[g]) / d[g];
      VI<W> c = (reinterpret_cast<VI<W>>(q + 12582912.0f) & 0x007FFFFF) - 0x00400000;
      c = c < lo ? VI<W>{} + lo : c;
      c = c > hi ? VI<W>{} + hi : c;
      c += bias;
      for (int k = 0; k < W; ++k) L[g * n + i + k] = static_cast<uint8_t>(c[k]);
    }
  }
}

// One set of entry points per vector width, each compiled for its ISA.
#define LANE_ENTRY_POINTS(W, TARGET)                                                              \
  TARGET SLIMPACK_LANE_NO_ASAN void QxBatch##W(int n, int nmax, const float* x,                   \
                                               const float* weights, int64_t groups, int8_t* L,   \
                                               float* scales) {                                   \
    QxSearch<W>(n, nmax, x, weights, groups, L, scales);                                          \
  }                                                                                               \
  TARGET SLIMPACK_LANE_NO_ASAN void QkxBatch##W(                                                  \
      int n, int nmax, const float* x, const float* weights, int64_t groups, uint8_t* L,          \
      float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad) {        \
    if (use_mad) {                                                                                \
      QkxSearch<W, true>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, rdelta, nstep);  \
    } else {                                                                                      \
      QkxSearch<W, false>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, rdelta, nstep); \
    }                                                                                             \
  }                                                                                               \
  TARGET SLIMPACK_LANE_NO_ASAN void Q3Batch##W(int n, int nmax, const float* x, int64_t groups, \
                                               int8_t* L, float* scales) {                      \
    Q3Search<W>(n, nmax, x, groups, L, scales);                                                 \
  }                                                                                             \
  TARGET SLIMPACK_LANE_NO_ASAN void RoundBatch##W(int64_t groups, int n, const float* x,          \
                                                  const float* d, const float* offset, int lo,    \
                                                  int hi, int bias, uint8_t* L) {                 \
    RoundGroups<W>(groups, n, x, d, offset, lo, hi, bias, L);                                     \
  }

LANE_ENTRY_POINTS(4, )
#if SLIMPACK_LANE_X86
LANE_ENTRY_POINTS(8, __attribute__((target("avx2"))))
LANE_ENTRY_POINTS(16, __attribute__((target("avx512f"))))
#endif

int BestLaneWidth() {
#if SLIMPACK_LANE_X86
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2")) return 8;
#endif
  return 4;
}

std::atomic<int> lane_width{0};

// The width in use; the first call settles it (a SetLaneWidth made
// meanwhile wins). Each entry point reads it once per call.
int Width() {
  int w = lane_width.load(std::memory_order_relaxed);
  if (w == 0) {
    int expected = 0;
    w = BestLaneWidth();
    if (!lane_width.compare_exchange_strong(expected, w, std::memory_order_relaxed)) w = expected;
  }
  return w;
}

}  // namespace

void MakeQxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                        int8_t* L, float* scales) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  const int64_t lanes = kParts * width;
  for (int64_t g = 0; g < groups; g += lanes) {
    const int64_t count = std::min<int64_t>(lanes, groups - g);
    const float* w = weights ? weights + g * n : nullptr;
    switch (width) {
#if SLIMPACK_LANE_X86
      case 16:
        QxBatch16(n, nmax, x + g * n, w, count, L + g * n, scales + g);
        break;
      case 8:
        QxBatch8(n, nmax, x + g * n, w, count, L + g * n, scales + g);
        break;
#endif
      default:
        QxBatch4(n, nmax, x + g * n, w, count, L + g * n, scales + g);
        break;
    }
  }
}

void MakeQkxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                         uint8_t* L, float* scales, float* the_mins, float rmin, float rdelta,
                         int nstep, bool use_mad) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  const int64_t lanes = kParts * width;
  auto* batch = QkxBatch4;
#if SLIMPACK_LANE_X86
  if (width == 16) batch = QkxBatch16;
  if (width == 8) batch = QkxBatch8;
#endif
  for (int64_t g = 0; g < groups; g += lanes) {
    const int64_t count = std::min<int64_t>(lanes, groups - g);
    const float* w = weights ? weights + g * n : nullptr;
    batch(n, nmax, x + g * n, w, count, L + g * n, scales + g, the_mins + g, rmin, rdelta, nstep,
          use_mad);
  }
}

void MakeQ3QuantsGroups(int64_t groups, int n, int nmax, const float* x, int8_t* L,
                        float* scales) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  const int64_t lanes = kParts * width;
  auto* batch = Q3Batch4;
#if SLIMPACK_LANE_X86
  if (width == 16) batch = Q3Batch16;
  if (width == 8) batch = Q3Batch8;
#endif
  for (int64_t g = 0; g < groups; g += lanes) {
    const int64_t count = std::min<int64_t>(lanes, groups - g);
    batch(n, nmax, x + g * n, count, L + g * n, scales + g);
  }
}

void RoundToGrids(int64_t groups, int n, const float* x, const float* d, const float* offset,
                  int lo, int hi, int bias, uint8_t* L) {
  CHECK(n > 0 && n % 16 == 0);
  switch (Width()) {
#if SLIMPACK_LANE_X86
    case 16:
      return RoundBatch16(groups, n, x, d, offset, lo, hi, bias, L);
    case 8:
      return RoundBatch8(groups, n, x, d, offset, lo, hi, bias, L);
#endif
    default:
      return RoundBatch4(groups, n, x, d, offset, lo, hi, bias, L);
  }
}

int SetLaneWidth(int width) {
  const int best = BestLaneWidth();
  lane_width.store(width == 0 || width > best ? best
                   : width < 8                ? 4
                   : width < 16               ? 8
                                              : 16,
                   std::memory_order_relaxed);
  return Width();
}

}  // namespace slimpack::gguf::internal
