// The vectors the lane searches (ggml_blocks_lanes.cc) compute with: a
// batch value of kParts·W lanes in kParts GCC vectors of W floats or ints, their
// lane-wise arithmetic, compares and selects, ggml's NearestInt, and the
// transposes that lay groups of consecutive values out one group per lane.
// Every helper is always inlined, so each width's entry point compiles them
// for its own ISA. Included by ggml_blocks_lanes.cc (its compile
// options: -ffp-contract=off, -Wno-psabi).
#ifndef SLIMPACK_FORMATS_GGUF_GGML_LANES_VECTOR_H_
#define SLIMPACK_FORMATS_GGUF_GGML_LANES_VECTOR_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

// GCC on x86-64 also builds the searches for 8-wide (AVX2) and 16-wide
// (AVX-512) vectors, picked at run time; elsewhere (clang, which checks the
// vector ABI of the inlined helpers per target, and other CPUs) they run on
// 4-wide vectors (SSE2, NEON). The lanes' results are the same at every width.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define SLIMPACK_LANE_X86 1
#else
#define SLIMPACK_LANE_X86 0
#endif

namespace slimpack::gguf::internal::lanes {

// A batch value holds 4W lanes (4W groups) in four vectors of W floats.
// Each sum below is a chain of dependent adds (their order is ggml's), and
// independent chains keep the floating-point units busy where one would
// wait on each add's latency. Four beat two by 7-20 % at every width on
// Zen 5 (ggml_encode_bench, q4_k/q6_k/q2_k: AVX-512 208 -> 223, AVX2
// 115 -> 124 M weights/s for q4_k), although four of AVX2's sixteen
// registers no longer hold every sum; eight lost 10 %.
constexpr int kParts = 4;
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

// Nearest(v) clamped to [lo, hi], as a float, computed in floats: clamp,
// then round with the same bias addition Nearest uses. This equals
// ToFloat(ClampI(Nearest(v), lo, hi)) for every |v| < 2^21 (rounding is
// monotone and the bounds are integers), where the bias trick is exact
// with room to spare; from 2^22 - 0.5 on, Nearest reads the mantissa of a
// number whose exponent has moved and ggml's codes are not the nearest
// ones, so callers use this only where they have bounded |v| (AllBelow
// below) and fall back to Nearest elsewhere. Two instructions fewer per
// element than the integer path in the K searches.
constexpr float kRoundExactLimit = 2097152.0f;  // 2^21
template <int W>
LANE_INLINE Vf<W> RoundClampF(Vf<W> v, float lo, float hi) {
  const VF<W> vlo = VF<W>{} + lo, vhi = VF<W>{} + hi, bias = VF<W>{} + 12582912.0f;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) {
    // lo > v ? lo : v is x86's max(lo, v) to the bit (NaN and -0 alike)
    // and compiles to one vmaxps; GCC made v < lo ? lo : v a compare and
    // a masked move.
    VF<W> x = vlo > v.h[k] ? vlo : v.h[k];
    x = x > vhi ? vhi : x;
    v.h[k] = (x + bias) - bias;
  }
  return v;
}
// Each lane rounded to the nearest integer, ties to even, for lanes in
// [0, 2^22): (x + 1.5 * 2^23) - 1.5 * 2^23 in floats, which is what the
// current rounding mode does to the sum; one round instruction where the
// vector width has one (vrndscaleps, vroundps with immediate 8: nearest
// even, no precision exception), the two adds elsewhere. Inline assembly,
// because these helpers carry no target attribute of their own (they are
// compiled into the entry point of each width) and GCC refuses to inline
// an intrinsic of a wider ISA into them.
template <int W>
LANE_INLINE VF<W> RoundEven(VF<W> x, VF<W> bias) {
#if SLIMPACK_LANE_X86
  if constexpr (W == 16) {
    asm("vrndscaleps $8, %1, %0" : "=v"(x) : "v"(x));
    return x;
  } else if constexpr (W == 8) {
    asm("vroundps $8, %1, %0" : "=x"(x) : "x"(x));
    return x;
  }
#endif
  return (x + bias) - bias;
}

// RoundClampF(v, 0, hi) with the clamps done on the floats' bit patterns
// as signed integers (vpmaxsd, vpminsd): for floats >= +0 the integer
// order is the float order, and every negative float (-0 included) becomes
// +0, which rounds to the code RoundClampF gives it (0); -inf becomes 0 and
// +inf hi, as there. Only a NaN differs (one with the sign bit set becomes
// 0 where RoundClampF keeps it), and no such result is kept: a NaN comes
// from an infinite or NaN scale, which sends the batch to the integer
// search (QkxSearch's rounding bound) or belongs to a flat group, whose
// codes are replaced. Then rounded by RoundEven. On Zen 5 the float clamps
// and the bias adds competed with the search's sums for the two FP add
// pipes: ggml_encode_bench q4_k 225 -> 242 (integer clamps) -> 250 (round
// instruction) M weights/s on AVX-512, 124 -> 129 -> 135 on AVX2.
template <int W>
LANE_INLINE Vf<W> RoundClampNonNegF(Vf<W> v, float hi) {
  const VI<W> vhi = VI<W>{} + __builtin_bit_cast(int32_t, hi), zero = VI<W>{};
  const VF<W> bias = VF<W>{} + 12582912.0f;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) {
    VI<W> b = reinterpret_cast<VI<W>>(v.h[k]);
    b = b > zero ? b : zero;
    b = b < vhi ? b : vhi;
    v.h[k] = RoundEven<W>(reinterpret_cast<VF<W>>(b), bias);
  }
  return v;
}
template <int W>
LANE_INLINE Vf<W> Max(Vf<W> a, Vf<W> b) {
  Vf<W> r;
  LANE_UNROLL for (int k = 0; k < kParts; ++k) r.h[k] = a.h[k] > b.h[k] ? a.h[k] : b.h[k];
  return r;
}
// +inf in NaN lanes (so that a Max over steps keeps them: Max(a, NaN) is a).
template <int W>
LANE_INLINE Vf<W> NanAsInf(Vf<W> v) {
  return Select(v == v, v, Splat<W>(kInf));
}
// The largest of a vector's lanes, by halving (GCC 12 compiles a compare
// mask that is reduced or kept, rather than fed to a select, into scalar
// code on AVX-512; this is selects and vmaxps only).
template <int W>
LANE_INLINE float MaxLane(VF<W> v) {
  if constexpr (W <= 4) {
    float m = v[0];
    for (int j = 1; j < W; ++j) m = v[j] > m ? v[j] : m;
    return m;
  } else {
    VF<W / 2> lo, hi;
    std::memcpy(&lo, &v, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
    return MaxLane<W / 2>(lo > hi ? lo : hi);
  }
}
// True when every lane of v is below `limit` (false for a NaN lane).
template <int W>
LANE_INLINE bool AllBelow(Vf<W> v, float limit) {
  const VF<W> lim = VF<W>{} + limit, zero = VF<W>{}, one = zero + 1.0f;
  VF<W> over = v.h[0] < lim ? zero : one;
  LANE_UNROLL for (int k = 1; k < kParts; ++k) {
    const VF<W> o = v.h[k] < lim ? zero : one;
    over = o > over ? o : over;
  }
  return MaxLane<W>(over) == 0.0f;
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

// Lane-major copies of up to kParts·W groups of n values: out[i][lane] is
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

}  // namespace slimpack::gguf::internal::lanes

#endif  // SLIMPACK_FORMATS_GGUF_GGML_LANES_VECTOR_H_
