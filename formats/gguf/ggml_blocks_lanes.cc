// MakeQxQuants and MakeQkxQuants for many groups at once: group g of a
// batch lives in lane g of W-wide vectors, and every lane performs exactly
// the scalar routine's float operations in the scalar routine's order (add,
// multiply, divide and compare are correctly rounded per lane, and the
// library is built without FMA contraction), so each group's codes and
// scales are bit-identical to ggml_blocks_search.cc's. Only the number of
// groups searched per instruction changes: the trial-scale loops, most of a
// q4_K conversion and of a q4_0 one's Q6_K output matrix, are branch-free
// per lane and run kParts·W groups per pass. The batch code is written once over
// the width W (GCC vector extensions) and instantiated for W = 16 (AVX-512),
// 8 (AVX2) and 4 (SSE2, NEON), the widest the CPU has picked at run time.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "formats/gguf/ggml_blocks_internal.h"
#include "formats/gguf/ggml_lanes_vector.h"
#include "support/check.h"
#include "support/cpu_features.h"

// The batch functions index only their own fixed-size stack arrays
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

using namespace lanes;  // NOLINT: the vector vocabulary of this file

// make_qx_quants for up to kParts·W groups. With kFloatRound the trial codes are
// rounded in floats (RoundClampF); the search then returns false, having
// written nothing, if any lane's |iscale * x| may have reached 2^21, beyond which
// that rounding can differ from Nearest (the caller searches again
// without it). |iscale| * amax is nmax + 0.9 at most for every lane not
// zeroed below, so that does not happen; the check costs little.
template <int W, bool kFloatRound>
LANE_INLINE bool QxSearch(int n, int nmax, const float* x, const float* weights, int64_t groups,
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
  // Lanes whose group is all below kGroupMaxEps (all-zero groups, the
  // missing groups of a short batch) are zeroed at the end, whatever their
  // search did: the rounding bound leaves them out (their iscale may be
  // infinite). 1 in the other lanes, a float: a compare mask kept across
  // the search is compiled into scalar code by GCC 12 on AVX-512.
  Vf<W> live = Select(amax < kGroupMaxEps, Splat<W>(0), Splat<W>(1));
  Opaque(live);
  Vf<W> worst = Splat<W>(0);  // the largest |iscale| * amax rounded at
  auto fit = [&](Vf<W> iscale, Vf<W>* sumlx, Vf<W>* suml2) __attribute__((always_inline)) {
    Vf<W> lx = Splat<W>(0), l2 = Splat<W>(0);
    for (int i = 0; i < n; ++i) {
      Vf<W> lf;
      if constexpr (kFloatRound) {
        lf = RoundClampF(iscale * xs[i], static_cast<float>(-nmax), static_cast<float>(nmax - 1));
      } else {
        lf = ToFloat(round(iscale, i));
      }
      lx += wxs[i] * lf;
      l2 += ws[i] * lf * lf;
    }
    if constexpr (kFloatRound) {
      worst = Max(worst, NanAsInf(Select(live > 0, Abs(iscale) * amax, Splat<W>(0))));
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
  // (A NaN bound compares false: searched again too.)
  if (kFloatRound && !AllBelow(worst, kRoundExactLimit)) return false;
  const Vi<W> zero = amax < kGroupMaxEps;
  scale = Select(zero, Splat<W>(0), scale);
  for (int i = 0; i < n; ++i) codes[i] = round(best_iscale, i);
  for (int64_t g = 0; g < groups; ++g) {
    scales[g] = scale[g];
    for (int i = 0; i < n; ++i) {
      L[g * n + i] = static_cast<int8_t>(zero[g] ? 0 : codes[i][g] + nmax);
    }
  }
  return true;
}

// make_q3_quants (its rmse search, without weights) for up to kParts·W groups:
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

// make_qkx2_quants for up to kParts·W groups, with use_mad known when it is
// compiled (so the error loop does not test it per element). Null weights
// are ggml's q4_K/q5_K reference weights, computed here in each lane in
// the scalar order.
//
// With kFloatRound the trial codes are rounded in floats (RoundClampF), and
// the search returns false, having written nothing, if any lane not flat
// may have rounded an |iscale * (x - min)| of 2^21 or more (the caller
// searches again without it). |x - min| <= max(max - min, min - lowest),
// so the product of that and |iscale| bounds it: the numerator of iscale
// (about nmax) while the offset stays at or below the smallest value,
// larger only when a fitted offset rises above it in a group whose range
// above the offset nearly vanishes.
template <int W, bool kUseMad, bool kFloatRound>
LANE_INLINE bool QkxSearch(int n, int nmax, const float* x, const float* weights, int64_t groups,
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
  const Vf<W> lowest = min;  // the smallest value, before min is capped at 0
  min = Select(min > 0, Splat<W>(0), min);
  const Vi<W> flat = max == min;
  // 0 in flat lanes, 1 elsewhere, for the rounding bound: a compare mask
  // kept across the search loop is compiled into scalar code by GCC 12 on
  // AVX-512, a float is not.
  Vf<W> not_flat = Select(flat, Splat<W>(0), Splat<W>(1));
  Opaque(not_flat);
  Vf<W> worst = Splat<W>(0);
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
    auto sums = [&](Vf<W> lf, int i) __attribute__((always_inline)) {
      trial[i] = lf;
      sum_l += ws[i] * lf;
      sum_l2 += ws[i] * lf * lf;
      sum_xl += ws[i] * lf * xs[i];
    };
    if constexpr (kFloatRound) {
      for (int i = 0; i < n; ++i) {
        sums(RoundClampNonNegF(iscale * (xs[i] - min), static_cast<float>(nmax)), i);
      }
      const Vf<W> bound = Abs(iscale) * Max(max - min, min - lowest);
      worst = Max(worst, NanAsInf(Select(not_flat > 0, bound, Splat<W>(0))));
    } else {
      for (int i = 0; i < n; ++i) sums(ToFloat(round(iscale, min, i)), i);
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
  if (kFloatRound && !AllBelow(worst, kRoundExactLimit)) return false;
  for (int i = 0; i < n; ++i) codes[i] = round(best_iscale, best_offset, i);
  for (int64_t g = 0; g < groups; ++g) {
    the_mins[g] = flat[g] ? -flat_min[g] : -min[g];
    scales[g] = flat[g] ? 0.0f : scale[g];
    for (int i = 0; i < n; ++i) L[g * n + i] = static_cast<uint8_t>(flat[g] ? 0 : codes[i][g]);
  }
  return true;
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
    if (!QxSearch<W, true>(n, nmax, x, weights, groups, L, scales)) {                             \
      QxSearch<W, false>(n, nmax, x, weights, groups, L, scales);                                 \
    }                                                                                             \
  }                                                                                               \
  TARGET SLIMPACK_LANE_NO_ASAN void QkxBatch##W(                                                  \
      int n, int nmax, const float* x, const float* weights, int64_t groups, uint8_t* L,          \
      float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad) {        \
    if (use_mad) {                                                                                \
      if (!QkxSearch<W, true, true>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, rdelta, \
                                    nstep)) {                                                     \
        QkxSearch<W, true, false>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, rdelta, \
                                  nstep);                                                         \
      }                                                                                           \
    } else if (!QkxSearch<W, false, true>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, \
                                          rdelta, nstep)) {                                       \
      QkxSearch<W, false, false>(n, nmax, x, weights, groups, L, scales, the_mins, rmin, rdelta,  \
                                 nstep);                                                          \
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
  if (support::CpuAllows(support::CpuFeature::kAvx512f)) return 16;
  if (support::CpuAllows(support::CpuFeature::kAvx2)) return 8;
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

// The build of routine `name` for `width` (name##4 where only that exists).
#if SLIMPACK_LANE_X86
#define LANE_PICK(name, width) \
  ((width) == 16 ? name##16 : (width) == 8 ? name##8 : name##4)
#else
#define LANE_PICK(name, width) name##4
#endif

// Calls fn(first group, count) for consecutive batches of up to kParts * width
// of `groups` groups.
template <typename Fn>
void ForEachBatch(int64_t groups, int width, Fn fn) {
  const int64_t lanes = kParts * width;
  for (int64_t g = 0; g < groups; g += lanes) fn(g, std::min<int64_t>(lanes, groups - g));
}

}  // namespace

void MakeQxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                        int8_t* L, float* scales) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  auto* batch = LANE_PICK(QxBatch, width);
  ForEachBatch(groups, width, [&](int64_t g, int64_t count) {
    batch(n, nmax, x + g * n, weights ? weights + g * n : nullptr, count, L + g * n, scales + g);
  });
}

void MakeQkxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                         uint8_t* L, float* scales, float* the_mins, float rmin, float rdelta,
                         int nstep, bool use_mad) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  auto* batch = LANE_PICK(QkxBatch, width);
  ForEachBatch(groups, width, [&](int64_t g, int64_t count) {
    batch(n, nmax, x + g * n, weights ? weights + g * n : nullptr, count, L + g * n, scales + g,
          the_mins + g, rmin, rdelta, nstep, use_mad);
  });
}

void MakeQ3QuantsGroups(int64_t groups, int n, int nmax, const float* x, int8_t* L,
                        float* scales) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  const int width = Width();
  auto* batch = LANE_PICK(Q3Batch, width);
  ForEachBatch(groups, width, [&](int64_t g, int64_t count) {
    batch(n, nmax, x + g * n, count, L + g * n, scales + g);
  });
}

void RoundToGrids(int64_t groups, int n, const float* x, const float* d, const float* offset,
                  int lo, int hi, int bias, uint8_t* L) {
  CHECK(n > 0 && n % 16 == 0);
  LANE_PICK(RoundBatch, Width())(groups, n, x, d, offset, lo, hi, bias, L);
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
