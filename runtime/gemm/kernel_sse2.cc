// The x86-64 baseline micro-kernel (CPUs without FMA, e.g. Nehalem): 4 rows
// x 8 columns, with each fused multiply-add computed exactly in SSE2.
//
// fma(a, b, c) for floats: a*b is exact in double (24 + 24 bits < 53); the
// double sum s = p + c rounds once, and TwoSum gives its exact error e.
// Rounding s to odd (if e != 0, truncate toward zero and set the last bit)
// keeps enough information that the final rounding to float is the same as
// rounding the exact a*b + c once (Boldo & Melquiond: 53 >= 24 + 2). This
// is several times slower than a hardware FMA, and several times faster
// than glibc's fmaf, which reaches the same bits through fenv calls.
#include "runtime/gemm/micro_kernel.h"

#if defined(__x86_64__)
#include <emmintrin.h>

namespace slimpack::runtime::gemm {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 8;

// Two lanes of fma(a, b, c), a/b/c floats widened to double, rounded to odd.
inline __m128d FmaRoundToOdd(__m128d a, __m128d b, __m128d c) {
  const __m128d p = _mm_mul_pd(a, b);
  const __m128d s = _mm_add_pd(p, c);
  const __m128d bv = _mm_sub_pd(s, p);
  const __m128d e = _mm_add_pd(_mm_sub_pd(p, _mm_sub_pd(s, bv)), _mm_sub_pd(c, bv));
  const __m128i sb = _mm_castpd_si128(s);
  // 1 where e and s differ in sign: the exact value is nearer zero than s,
  // so truncation steps s one ulp toward zero.
  const __m128i toward_zero = _mm_srli_epi64(_mm_xor_si128(sb, _mm_castpd_si128(e)), 63);
  const __m128i odd = _mm_or_si128(_mm_sub_epi64(sb, toward_zero), _mm_set1_epi64x(1));
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
  const __m128d finite = _mm_cmplt_pd(_mm_and_pd(s, abs_mask), _mm_set1_pd(__builtin_inf()));
  const __m128d inexact = _mm_and_pd(_mm_cmpneq_pd(e, _mm_setzero_pd()), finite);
  return _mm_or_pd(_mm_and_pd(inexact, _mm_castsi128_pd(odd)), _mm_andnot_pd(inexact, s));
}

inline __m128 FmaExact(__m128 a, __m128 b, __m128 c) {
  const __m128d lo = FmaRoundToOdd(_mm_cvtps_pd(a), _mm_cvtps_pd(b), _mm_cvtps_pd(c));
  const __m128d hi = FmaRoundToOdd(_mm_cvtps_pd(_mm_movehl_ps(a, a)),
                                   _mm_cvtps_pd(_mm_movehl_ps(b, b)),
                                   _mm_cvtps_pd(_mm_movehl_ps(c, c)));
  return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}

void KernelSse2(int64_t kc, const float* a, const float* b, float* acc, bool first) {
  __m128 c[kMr][2];
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    c[r][0] = first ? _mm_setzero_ps() : _mm_loadu_ps(acc + r * kNr);
    c[r][1] = first ? _mm_setzero_ps() : _mm_loadu_ps(acc + r * kNr + 4);
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m128 b0 = _mm_loadu_ps(b + p * kNr);
    const __m128 b1 = _mm_loadu_ps(b + p * kNr + 4);
    const float* ap = a + p * kMr;
    #pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      const __m128 ar = _mm_set1_ps(ap[r]);
      c[r][0] = FmaExact(ar, b0, c[r][0]);
      c[r][1] = FmaExact(ar, b1, c[r][1]);
    }
  }
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    _mm_storeu_ps(acc + r * kNr, c[r][0]);
    _mm_storeu_ps(acc + r * kNr + 4, c[r][1]);
  }
}

}  // namespace

bool Sse2Kernel(MicroKernel* k) {
  *k = MicroKernel{"sse2-exact-fma", kMr, kNr, KernelSse2};
  return true;
}

}  // namespace slimpack::runtime::gemm

#else

namespace slimpack::runtime::gemm {
bool Sse2Kernel(MicroKernel*) { return false; }
}  // namespace slimpack::runtime::gemm

#endif
