// AVX2 RTN kernel (this file alone is compiled with -mavx2 -mfma -mf16c
// -ffp-contract=off; called only after RtnHasAvx2(): AVX2, FMA and F16C).
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

// StoredScale of eight scales: vcvtps2ph rounds to nearest even as
// ir::F32ToF16 does (ir's F16C path relies on the same), then the same
// clamps of 0 and infinity; a non-finite scale is kept.
inline __m256 StoredScales(__m256 s, ScaleDType dtype) {
  if (dtype == ScaleDType::kF32) return s;
  const __m256 zero = _mm256_setzero_ps();
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 sign = _mm256_and_ps(s, sign_bit);
  const __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT));
  const __m256 underflow = _mm256_andnot_ps(_mm256_cmp_ps(s, zero, _CMP_EQ_OQ),
                                            _mm256_cmp_ps(r, zero, _CMP_EQ_OQ));
  __m256 out = _mm256_blendv_ps(r, _mm256_or_ps(_mm256_set1_ps(0x1p-24f), sign), underflow);
  const __m256 overflow = _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, r), inf, _CMP_EQ_OQ);
  out = _mm256_blendv_ps(out, _mm256_or_ps(_mm256_set1_ps(65504.0f), sign), overflow);
  const __m256 finite = _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, s), inf, _CMP_LT_OQ);
  return _mm256_blendv_ps(s, out, finite);
}

struct Avx2Ops {
  static constexpr bool kGrids8 = true;

  // MakeGrid(mn[k], mx[k], 1, ...) for eight groups, lane k the same
  // operations on the same values (each std::min/max below picks the
  // operand the scalar one does, NaN and ties included).
  static void Grids8(const float* mn_in, const float* mx_in, const RowJob& j, GroupGrid* out) {
    const __m256 mn = _mm256_loadu_ps(mn_in);
    const __m256 mx = _mm256_loadu_ps(mx_in);
    const __m256 zero = _mm256_setzero_ps();
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 ratio = one;
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    const __m256 abs_mn = _mm256_andnot_ps(sign_bit, mn);
    const __m256 abs_mx = _mm256_andnot_ps(sign_bit, mx);
    const int32_t half = 1 << (j.bits - 1);
    int32_t qmin = -half;
    const int32_t qmax = half - 1;
    __m256 scale;
    __m256i zeros = _mm256_setzero_si256();
    if (j.symmetric && j.restricted) {
      qmin = -(half - 1);
      const __m256 amax = _mm256_mul_ps(_mm256_max_ps(abs_mn, abs_mx), ratio);
      scale = StoredScales(_mm256_div_ps(amax, _mm256_set1_ps(static_cast<float>(half - 1))),
                           j.scale_dtype);
      scale = _mm256_blendv_ps(one, scale, _mm256_cmp_ps(scale, zero, _CMP_GT_OQ));
    } else if (j.symmetric) {
      const __m256 m =
          _mm256_mul_ps(_mm256_blendv_ps(mx, mn, _mm256_cmp_ps(abs_mn, abs_mx, _CMP_GE_OQ)), ratio);
      scale = StoredScales(_mm256_div_ps(m, _mm256_set1_ps(static_cast<float>(-half))),
                           j.scale_dtype);
      const __m256 nonzero =
          _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, scale), zero, _CMP_GT_OQ);
      scale = _mm256_blendv_ps(one, scale, nonzero);
    } else {
      const __m256 lo = _mm256_mul_ps(_mm256_min_ps(zero, mn), ratio);
      const __m256 hi = _mm256_mul_ps(_mm256_max_ps(zero, mx), ratio);
      const __m256 maxq = _mm256_set1_ps(static_cast<float>(2 * half - 1));
      scale = _mm256_div_ps(_mm256_sub_ps(hi, lo), maxq);
      const __m256 wide = _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, scale),
                                        _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                                        _CMP_EQ_OQ);
      scale = _mm256_blendv_ps(
          scale, _mm256_sub_ps(_mm256_div_ps(hi, maxq), _mm256_div_ps(lo, maxq)), wide);
      scale = StoredScales(scale, j.scale_dtype);
      const __m256 ok = _mm256_cmp_ps(scale, zero, _CMP_GT_OQ);
      // Lanes that are not ok divide by a non-positive scale; their result
      // is replaced below.
      __m256 zu = _mm256_round_ps(_mm256_div_ps(_mm256_xor_ps(lo, sign_bit), scale),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      zu = _mm256_min_ps(maxq, _mm256_max_ps(zero, zu));
      zu = _mm256_blendv_ps(zero, zu, ok);
      zeros = _mm256_sub_epi32(_mm256_cvttps_epi32(zu), _mm256_set1_epi32(half));
      scale = _mm256_blendv_ps(one, scale, ok);
    }
    alignas(32) float s[8];
    alignas(32) int32_t z[8];
    _mm256_store_ps(s, scale);
    _mm256_store_si256(reinterpret_cast<__m256i*>(z), zeros);
    for (int k = 0; k < 8; ++k) {
      out[k].scale = s[k];
      out[k].zero = z[k];
      out[k].qmin = qmin;
      out[k].qmax = qmax;
    }
  }

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
