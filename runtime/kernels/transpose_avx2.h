// An 8 x 8 float transpose on ymm registers, shared by the kernels that
// move between channels-in-lanes and planes (conv_blocked_tiles.cc's
// stores, the AVX2 depthwise kernel). It carries its instruction set as a
// target attribute and is internal to each file that includes it, so no
// copy built for one instruction set can stand in for another.
#ifndef SLIMPACK_RUNTIME_KERNELS_TRANSPOSE_AVX2_H_
#define SLIMPACK_RUNTIME_KERNELS_TRANSPOSE_AVX2_H_

#if defined(__x86_64__)
#include <immintrin.h>

namespace slimpack::runtime::kernels {
namespace {

// r[i] lane j <-> r[j] lane i: pairs of vectors interleaved, 4-float
// groups within 128-bit lanes, then the 128-bit lanes. Only moves values.
// Plain AVX2, so that AVX2 + FMA and AVX-512F callers can inline it.
__attribute__((target("avx2"), unused)) inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  #pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  #pragma GCC unroll 8
  for (int g = 0; g < 8; g += 4) {
    u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
    u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
    u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  #pragma GCC unroll 8
  for (int q = 0; q < 4; ++q) {
    r[q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x20);
    r[4 + q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x31);
  }
}

}  // namespace
}  // namespace slimpack::runtime::kernels

#endif  // defined(__x86_64__)
#endif  // SLIMPACK_RUNTIME_KERNELS_TRANSPOSE_AVX2_H_
