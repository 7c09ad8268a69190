// See gemv_avx2.h. Eight rows of B at a time: an 8 x 8 block (eight rows,
// eight consecutive p) is loaded row by row and transposed in registers, so
// lane r of vector i holds B[j + r, p + i] and one broadcast of a[p + i]
// and one fused multiply-add advance all eight chains by one step, in p
// order. Compiled with -mavx2 -mfma (runtime/CMakeLists.txt); called only
// after GemvTransBAvx2Available().
#include "runtime/gemm/gemv_avx2.h"
#include "support/cpu_features.h"

#include <cmath>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SLP_GEMV_AVX2 1
#endif

namespace slimpack::runtime::gemm {

#if defined(SLP_GEMV_AVX2)
namespace {

// The final scaling, as Sgemm's Finish does it.
float Finish(float acc, float alpha, float beta, float c) {
  if (alpha == 1.0f && beta == 0.0f) return acc;
  if (beta == 0.0f) return alpha * acc;
  return alpha * acc + beta * c;
}

// r[i] lane q = m[q] lane i, for the 8 x 8 block m.
inline void Transpose8(__m256 m[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
  const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
  const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
  const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  m[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  m[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  m[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  m[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  m[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  m[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  m[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  m[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

}  // namespace

bool GemvTransBAvx2Available() {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvx2Fma);
  return ok;
}

void GemvTransBAvx2(int64_t j0, int64_t j1, int64_t k, float alpha, const float* a,
                    const float* b, int64_t ldb, float beta, float* c) {
  int64_t j = j0;
  for (; j + 8 <= j1; j += 8) {
    const float* rows = b + j * ldb;
    __m256 acc = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
      __m256 m[8];
      for (int r = 0; r < 8; ++r) m[r] = _mm256_loadu_ps(rows + r * ldb + p);
      Transpose8(m);
      for (int i = 0; i < 8; ++i) {
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + p + i), m[i], acc);
      }
    }
    for (; p < k; ++p) {
      const __m256 col = _mm256_set_ps(rows[7 * ldb + p], rows[6 * ldb + p], rows[5 * ldb + p],
                                       rows[4 * ldb + p], rows[3 * ldb + p], rows[2 * ldb + p],
                                       rows[ldb + p], rows[p]);
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + p), col, acc);
    }
    alignas(32) float out[8];
    _mm256_store_ps(out, acc);
    for (int r = 0; r < 8; ++r) c[j + r] = Finish(out[r], alpha, beta, c[j + r]);
  }
  for (; j < j1; ++j) {
    const float* row = b + j * ldb;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; ++p) acc = std::fma(a[p], row[p], acc);
    c[j] = Finish(acc, alpha, beta, c[j]);
  }
}

#else

bool GemvTransBAvx2Available() { return false; }

void GemvTransBAvx2(int64_t, int64_t, int64_t, float, const float*, const float*, int64_t,
                    float, float*) {}

#endif

}  // namespace slimpack::runtime::gemm
