// MakeQxQuants and MakeQkxQuants for many groups at once: group g of a
// batch lives in lane g of 16-wide vectors, and every lane performs exactly
// the scalar routine's float operations in the scalar routine's order (add,
// multiply, divide and compare are correctly rounded per lane, and the
// library is built without FMA contraction), so each group's codes and
// scales are bit-identical to ggml_blocks_search.cc's. Only the number of
// groups searched per instruction changes: the trial-scale loops, 84 % of a
// q4_K conversion and half of a q4_0 one (its Q6_K output matrix), are
// branch-free per lane and run 16 groups per pass. GCC builds AVX-512 and
// AVX2 clones picked at load time; elsewhere the vectors lower to whatever
// the target has (SSE2, NEON) with the same per-lane results.
#include <algorithm>
#include <cstring>

#include "formats/gguf/ggml_blocks_internal.h"
#include "support/check.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define SLIMPACK_LANE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SLIMPACK_LANE_CLONES
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

// Two 16-wide vectors per value: each sum below is a chain of dependent
// adds (their order is ggml's), and two independent chains keep the
// floating-point units busy where one would wait on each add's latency.
constexpr int kHalf = 16;
constexpr int kParts = 2;
constexpr int kLanes = kParts * kHalf;
// Element alignment only: the batch arrays below are plain stack arrays.
typedef float V16f __attribute__((vector_size(64), aligned(4)));
typedef int32_t V16i __attribute__((vector_size(64), aligned(4)));
struct Vf {
  V16f h[kParts];
  float operator[](int64_t g) const { return h[g / kHalf][g % kHalf]; }
};
struct Vi {
  V16i h[kParts];
  int32_t operator[](int64_t g) const { return h[g / kHalf][g % kHalf]; }
};

// Every helper is always inlined, so each clone gets them compiled for its
// own ISA and no vector crosses a call (whose ABI differs between clones).
#define LANE_INLINE __attribute__((always_inline)) inline

#define LANE_BINARY(R, A, B, op, ea, eb)                   \
  [[maybe_unused]] LANE_INLINE R operator op(A a, B b) {    \
    R r;                                                    \
    for (int k = 0; k < kParts; ++k) r.h[k] = ea(k) op eb(k); \
    return r;                                               \
  }
#define LANE_A(k) a.h[k]
#define LANE_B(k) b.h[k]
#define SCALAR_A(k) a
#define SCALAR_B(k) b
#define LANE_ARITH(op)                             \
  LANE_BINARY(Vf, Vf, Vf, op, LANE_A, LANE_B)      \
  LANE_BINARY(Vf, Vf, float, op, LANE_A, SCALAR_B) \
  LANE_BINARY(Vf, float, Vf, op, SCALAR_A, LANE_B)
LANE_ARITH(+)
LANE_ARITH(-)
LANE_ARITH(*)
LANE_ARITH(/)
#define LANE_COMPARE(op)                           \
  LANE_BINARY(Vi, Vf, Vf, op, LANE_A, LANE_B)      \
  LANE_BINARY(Vi, Vf, float, op, LANE_A, SCALAR_B) \
  LANE_BINARY(Vi, Vi, int32_t, op, LANE_A, SCALAR_B)
LANE_COMPARE(<)
LANE_COMPARE(>)
LANE_COMPARE(==)
LANE_COMPARE(!=)
LANE_BINARY(Vi, Vi, Vi, &, LANE_A, LANE_B)
LANE_BINARY(Vi, Vi, Vi, |, LANE_A, LANE_B)
LANE_BINARY(Vi, Vi, int32_t, &, LANE_A, SCALAR_B)
LANE_BINARY(Vi, Vi, int32_t, -, LANE_A, SCALAR_B)
LANE_INLINE Vi operator~(Vi a) {
  Vi r;
  for (int k = 0; k < kParts; ++k) r.h[k] = ~a.h[k];
  return r;
}
LANE_INLINE Vf& operator+=(Vf& a, Vf b) { return a = a + b; }

LANE_INLINE Vf Splat(float v) {
  Vf r;
  for (int k = 0; k < kParts; ++k) r.h[k] = V16f{} + v;
  return r;
}
LANE_INLINE Vi SplatI(int32_t v) {
  Vi r;
  for (int k = 0; k < kParts; ++k) r.h[k] = V16i{} + v;
  return r;
}
LANE_INLINE Vf AsFloat(Vi v) {
  Vf r;
  for (int k = 0; k < kParts; ++k) r.h[k] = reinterpret_cast<V16f>(v.h[k]);
  return r;
}
LANE_INLINE Vi AsInt(Vf v) {
  Vi r;
  for (int k = 0; k < kParts; ++k) r.h[k] = reinterpret_cast<V16i>(v.h[k]);
  return r;
}
LANE_INLINE Vi SelectI(Vi mask, Vi a, Vi b) { return (mask & a) | (~mask & b); }
LANE_INLINE Vf Select(Vi mask, Vf a, Vf b) { return AsFloat(SelectI(mask, AsInt(a), AsInt(b))); }
LANE_INLINE Vf Abs(Vf v) { return AsFloat(AsInt(v) & 0x7FFFFFFF); }
LANE_INLINE Vf ToFloat(Vi v) {
  Vf r;
  for (int k = 0; k < kParts; ++k) r.h[k] = __builtin_convertvector(v.h[k], V16f);
  return r;
}
// NearestInt per lane (same bias trick, same integer for every input).
LANE_INLINE Vi Nearest(Vf v) { return (AsInt(v + 12582912.0f) & 0x007FFFFF) - 0x00400000; }
LANE_INLINE Vi ClampI(Vi v, int32_t lo, int32_t hi) {
  v = SelectI(v < lo, SplatI(lo), v);
  return SelectI(v > hi, SplatI(hi), v);
}

// Lane-major copies of up to 16 groups of n values: out[i][lane] is
// element i of group `lane`; missing groups read as zero.
void Transpose(const float* x, int n, int64_t groups, Vf* out) {
  for (int i = 0; i < n; ++i) out[i] = Splat(0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int i = 0; i < n; ++i) out[i].h[g / kHalf][g % kHalf] = x[g * n + i];
  }
}

SLIMPACK_LANE_CLONES SLIMPACK_LANE_NO_ASAN
void QxBatch(int n, int nmax, const float* x, const float* weights, int64_t groups, int8_t* L,
             float* scales) {
  Vf xs[kQK], ws[kQK];
  Vi codes[kQK];
  Transpose(x, n, groups, xs);
  if (weights) {
    Transpose(weights, n, groups, ws);
  } else {
    for (int i = 0; i < n; ++i) ws[i] = xs[i] * xs[i];
  }
  Vf amax = Splat(0), max = Splat(0);
  for (int i = 0; i < n; ++i) {
    const Vf ax = Abs(xs[i]);
    const Vi larger = ax > amax;
    amax = Select(larger, ax, amax);
    max = Select(larger, xs[i], max);
  }
  // Codes rounded at iscale and their weighted sums, as MakeQxQuants' fit.
  auto round = [&](Vf iscale, int i) __attribute__((always_inline)) {
    return ClampI(Nearest(iscale * xs[i]), -nmax, nmax - 1);
  };
  auto fit = [&](Vf iscale, Vf* sumlx, Vf* suml2) __attribute__((always_inline)) {
    Vf lx = Splat(0), l2 = Splat(0);
    for (int i = 0; i < n; ++i) {
      const Vi l = round(iscale, i);
      const Vf lf = ToFloat(l);
      lx += ws[i] * xs[i] * lf;
      l2 += ws[i] * lf * lf;
    }
    *sumlx = lx;
    *suml2 = l2;
  };
  Vf sumlx, suml2;
  // Each lane keeps the trial scale that won; its codes are rounded again
  // from it at the end (the same operations, so the same codes).
  Vf best_iscale = static_cast<float>(-nmax) / max;
  fit(best_iscale, &sumlx, &suml2);
  Vf scale = Select(suml2 != 0, sumlx / suml2, Splat(0));
  Vf best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float step = nmax + 0.1f * is;  // as the scalar expression groups it
    const Vf iscale = -step / max;
    fit(iscale, &sumlx, &suml2);
    const Vi better = (suml2 > 0) & (sumlx * sumlx > best * suml2);
    best_iscale = Select(better, iscale, best_iscale);
    const Vf s = sumlx / suml2;
    scale = Select(better, s, scale);
    best = Select(better, s * sumlx, best);
  }
  const Vi zero = amax < kGroupMaxEps;
  scale = Select(zero, Splat(0), scale);
  for (int i = 0; i < n; ++i) codes[i] = round(best_iscale, i);
  for (int64_t g = 0; g < groups; ++g) {
    scales[g] = scale[g];
    for (int i = 0; i < n; ++i) {
      L[g * n + i] = static_cast<int8_t>(zero[g] ? 0 : codes[i][g] + nmax);
    }
  }
}

SLIMPACK_LANE_CLONES SLIMPACK_LANE_NO_ASAN
void QkxBatch(int n, int nmax, const float* x, const float* weights, int64_t groups, uint8_t* L,
              float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad) {
  Vf xs[kQK], ws[kQK];
  Vi codes[kQK], trial[kQK];
  Transpose(x, n, groups, xs);
  Transpose(weights, n, groups, ws);
  Vf min = xs[0], max = xs[0], sum_w = ws[0];
  Vf sum_x = sum_w * xs[0];
  for (int i = 1; i < n; ++i) {
    min = Select(xs[i] < min, xs[i], min);
    max = Select(xs[i] > max, xs[i], max);
    sum_w += ws[i];
    sum_x += ws[i] * xs[i];
  }
  min = Select(min > 0, Splat(0), min);
  const Vi flat = max == min;
  const Vf flat_min = min;
  const Vf fmax = ToFloat(SplatI(nmax));
  auto error = [&](Vf s, Vf offset, const Vi* c) __attribute__((always_inline)) {
    Vf sum = Splat(0);
    for (int i = 0; i < n; ++i) {
      Vf diff = s * ToFloat(c[i]) + offset - xs[i];
      diff = use_mad ? Abs(diff) : diff * diff;
      sum += ws[i] * diff;
    }
    return sum;
  };
  auto round = [&](Vf iscale, Vf offset, int i) __attribute__((always_inline)) {
    return ClampI(Nearest(iscale * (xs[i] - offset)), 0, nmax);
  };
  // Each lane keeps the iscale and offset its best codes were rounded with
  // and rounds them again at the end (the same operations, the same codes).
  Vf best_iscale = fmax / (max - min), best_offset = min;
  Vf scale = 1.0f / best_iscale;
  for (int i = 0; i < n; ++i) trial[i] = round(best_iscale, min, i);
  Vf best_error = error(scale, min, trial);
  for (int is = 0; is <= nstep; ++is) {
    // ggml divides by the range to the best offset so far, not the first.
    const Vf iscale = Splat(rmin + rdelta * is + nmax) / (max - min);
    Vf sum_l = Splat(0), sum_l2 = Splat(0), sum_xl = Splat(0);
    for (int i = 0; i < n; ++i) {
      const Vi l = round(iscale, min, i);
      trial[i] = l;
      const Vf lf = ToFloat(l);
      sum_l += ws[i] * lf;
      sum_l2 += ws[i] * lf * lf;
      sum_xl += ws[i] * lf * xs[i];
    }
    const Vf D = sum_w * sum_l2 - sum_l * sum_l;
    const Vi valid = D > 0;
    Vf this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    Vf this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    const Vi positive = this_min > 0;
    this_min = Select(positive, Splat(0), this_min);
    this_scale = Select(positive, sum_xl / sum_l2, this_scale);
    const Vf this_error = error(this_scale, this_min, trial);
    const Vi better = valid & (this_error < best_error);
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

}  // namespace

void MakeQxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                        int8_t* L, float* scales) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  for (int64_t g = 0; g < groups; g += kLanes) {
    const int64_t count = std::min<int64_t>(kLanes, groups - g);
    QxBatch(n, nmax, x + g * n, weights ? weights + g * n : nullptr, count, L + g * n,
            scales + g);
  }
}

void MakeQkxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                         uint8_t* L, float* scales, float* the_mins, float rmin, float rdelta,
                         int nstep, bool use_mad) {
  CHECK(n > 0 && n <= static_cast<int>(kQK));
  for (int64_t g = 0; g < groups; g += kLanes) {
    const int64_t count = std::min<int64_t>(kLanes, groups - g);
    QkxBatch(n, nmax, x + g * n, weights + g * n, count, L + g * n, scales + g, the_mins + g,
             rmin, rdelta, nstep, use_mad);
  }
}

}  // namespace slimpack::gguf::internal
