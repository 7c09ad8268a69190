// ConvActivation (conv_direct.h) on vectors of 16 (AVX-512F) or 8 (AVX2)
// outputs, for the convolution kernels' stores: the same compares, selects
// and singly rounded division, addition and multiplication as the Relu and
// HardSwish kernels (elementwise_unary.cc), so the same bits. Each carries
// its instruction set as a target attribute and is internal to the file
// that includes it, so no copy built for one instruction set can stand in
// for another.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_ACTIVATION_SIMD_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_ACTIVATION_SIMD_H_

#if defined(__x86_64__)
#include <immintrin.h>

#include "runtime/kernels/conv_direct.h"

namespace slimpack::runtime::kernels {
namespace {

// v > 0 or NaN ? v : +0 (a NaN compares "not less or equal").
__attribute__((target("avx512f"), unused)) inline __m512 Activate16(__m512 v,
                                                                    ConvActivation act) {
  const __m512 zero = _mm512_setzero_ps();
  if (act == ConvActivation::kRelu) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_NLE_UQ), v);
  }
  if (act == ConvActivation::kHardSwish) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 t = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
    t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, zero, _CMP_GT_OQ), t);  // NaN -> 0
    t = _mm512_mask_mov_ps(one, _mm512_cmp_ps_mask(t, one, _CMP_LT_OQ), t);
    return _mm512_mul_ps(v, t);
  }
  return v;
}

__attribute__((target("avx2"), unused)) inline __m256 Activate8(__m256 v, ConvActivation act) {
  const __m256 zero = _mm256_setzero_ps();
  if (act == ConvActivation::kRelu) {
    return _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_NLE_UQ), v);
  }
  if (act == ConvActivation::kHardSwish) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
    t = _mm256_and_ps(_mm256_cmp_ps(t, zero, _CMP_GT_OQ), t);  // NaN -> 0
    t = _mm256_blendv_ps(one, t, _mm256_cmp_ps(t, one, _CMP_LT_OQ));
    return _mm256_mul_ps(v, t);
  }
  return v;
}

}  // namespace
}  // namespace slimpack::runtime::kernels

#endif  // defined(__x86_64__)
#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_ACTIVATION_SIMD_H_
