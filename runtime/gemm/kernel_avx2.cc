// The AVX2 + FMA micro-kernel: 6 rows x 16 columns, 12 ymm accumulators.
// Compiled with -mavx2 -mfma (runtime/CMakeLists.txt); intrinsics and plain
// loops only, for the reason kernel_avx512.cc gives.
#include "runtime/gemm/micro_kernel.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace slimpack::runtime::gemm {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

void KernelAvx2(int64_t kc, const float* a, const float* b, float* acc, bool first) {
  __m256 c[kMr][2];
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    c[r][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + r * kNr);
    c[r][1] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + r * kNr + 8);
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * kNr);
    const __m256 b1 = _mm256_loadu_ps(b + p * kNr + 8);
    const float* ap = a + p * kMr;
    #pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      const __m256 ar = _mm256_broadcast_ss(ap + r);
      c[r][0] = _mm256_fmadd_ps(ar, b0, c[r][0]);
      c[r][1] = _mm256_fmadd_ps(ar, b1, c[r][1]);
    }
  }
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(acc + r * kNr, c[r][0]);
    _mm256_storeu_ps(acc + r * kNr + 8, c[r][1]);
  }
}

}  // namespace

bool Avx2Kernel(MicroKernel* k) {
  if (!support::CpuAllows(support::CpuFeature::kAvx2Fma)) return false;
  *k = MicroKernel{"avx2", kMr, kNr, KernelAvx2};
  return true;
}

}  // namespace slimpack::runtime::gemm

#else

namespace slimpack::runtime::gemm {
bool Avx2Kernel(MicroKernel*) { return false; }
}  // namespace slimpack::runtime::gemm

#endif
