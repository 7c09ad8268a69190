// AVX2 RTN kernel (this file alone is compiled with -mavx2 -mfma
// -ffp-contract=off; called only after __builtin_cpu_supports("avx2")).
// Element operations mirror rtn_kernel_scalar.cc exactly: division (not a
// reciprocal multiply), round-half-even, clamp, one multiply to dequantize,
// and the same 8-lane error summation order; tails use the scalar code.
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <cmath>
#include <limits>

#include "quantize/numerics/rtn_kernel.h"
#include "quantize/numerics/rtn_kernel_impl.h"

namespace slimpack::quant::internal {
#if defined(__AVX2__)
namespace {

// Quantize 8 values to centred codes held as integer-valued floats.
inline __m256 QuantizeLanes(__m256 v, __m256 s, __m256 z, __m256 lo,
                            __m256 hi) {
  __m256 t = _mm256_div_ps(v, s);
  t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  t = _mm256_add_ps(t, z);
  t = _mm256_max_ps(t, lo);
  return _mm256_min_ps(t, hi);
}

struct Avx2Ops {
  static bool MinMax(const float* x, int64_t n, float* mn, float* mx) {
    const int64_t n8 = n - n % 8;
    float lo = x[0], hi = x[0], poison = 0.0f;
    if (n8 > 0) {
      __m256 vlo = _mm256_loadu_ps(x), vhi = vlo;
      __m256 vp = _mm256_setzero_ps();
      const __m256 zero = _mm256_setzero_ps();
      for (int64_t i = 0; i < n8; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        vlo = _mm256_min_ps(vlo, v);
        vhi = _mm256_max_ps(vhi, v);
        vp = _mm256_add_ps(vp, _mm256_mul_ps(v, zero));
      }
      // Horizontal min/max by shuffles (min/max are exact, so the order
      // cannot change the result; a zero's sign may differ from the scalar
      // kernel's, which MakeGrid maps to the same grid).
      __m128 l4 = _mm_min_ps(_mm256_castps256_ps128(vlo),
                             _mm256_extractf128_ps(vlo, 1));
      __m128 h4 = _mm_max_ps(_mm256_castps256_ps128(vhi),
                             _mm256_extractf128_ps(vhi, 1));
      l4 = _mm_min_ps(l4, _mm_movehl_ps(l4, l4));
      h4 = _mm_max_ps(h4, _mm_movehl_ps(h4, h4));
      l4 = _mm_min_ss(l4, _mm_shuffle_ps(l4, l4, 1));
      h4 = _mm_max_ss(h4, _mm_shuffle_ps(h4, h4, 1));
      lo = _mm_cvtss_f32(l4);
      hi = _mm_cvtss_f32(h4);
      // Any inf/NaN made some lane of vp NaN.
      if (_mm256_movemask_ps(_mm256_cmp_ps(vp, vp, _CMP_UNORD_Q)) != 0) {
        poison = std::numeric_limits<float>::quiet_NaN();
      }
    }
    for (int64_t i = n8; i < n; ++i) {
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
      poison += x[i] * 0.0f;
    }
    *mn = lo;
    *mx = hi;
    return poison == 0.0f;
  }

  static float Error(const float* x, const float* imp, int64_t n,
                     const GroupGrid& g) {
    const int64_t n8 = n - n % 8;
    const __m256 s = _mm256_set1_ps(g.scale);
    const __m256 z = _mm256_set1_ps(static_cast<float>(g.zero));
    const __m256 lo = _mm256_set1_ps(static_cast<float>(g.qmin));
    const __m256 hi = _mm256_set1_ps(static_cast<float>(g.qmax));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n8; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const __m256 t = QuantizeLanes(v, s, z, lo, hi);
      const __m256 d = _mm256_sub_ps(v, _mm256_mul_ps(_mm256_sub_ps(t, z), s));
      __m256 e = _mm256_mul_ps(d, d);
      if (imp) e = _mm256_mul_ps(e, _mm256_loadu_ps(imp + i));
      acc = _mm256_add_ps(acc, e);
    }
    alignas(32) float a[8];
    _mm256_store_ps(a, acc);
    float sum = ReduceLanes(a);
    for (int64_t i = n8; i < n; ++i) {
      const float d = x[i] - DequantizeCode(QuantizeValue(x[i], g), g);
      float e = d * d;
      if (imp) e = e * imp[i];
      sum += e;
    }
    return sum;
  }

  static void Quantize(const float* x, int64_t n, const GroupGrid& g,
                       int8_t* q) {
    const int64_t n8 = n - n % 8;
    const __m256 s = _mm256_set1_ps(g.scale);
    const __m256 z = _mm256_set1_ps(static_cast<float>(g.zero));
    const __m256 lo = _mm256_set1_ps(static_cast<float>(g.qmin));
    const __m256 hi = _mm256_set1_ps(static_cast<float>(g.qmax));
    for (int64_t i = 0; i < n8; i += 8) {
      const __m256 t = QuantizeLanes(_mm256_loadu_ps(x + i), s, z, lo, hi);
      const __m256i i32 = _mm256_cvtps_epi32(t);
      const __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(i32),
                                          _mm256_extracti128_si256(i32, 1));
      const __m128i p8 = _mm_packs_epi16(p16, p16);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), p8);
    }
    for (int64_t i = n8; i < n; ++i) {
      q[i] = static_cast<int8_t>(QuantizeValue(x[i], g));
    }
  }
};

}  // namespace

bool QuantizeRowAvx2(const RowJob& job) {
  return QuantizeRowImpl<Avx2Ops>(job);
}
#else
// Not an x86 build: never selected (RtnHasAvx2() is false), kept linkable.
bool QuantizeRowAvx2(const RowJob& job) { return QuantizeRowScalar(job); }
#endif

}  // namespace slimpack::quant::internal
