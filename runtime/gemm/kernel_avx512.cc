// The AVX-512F micro-kernel: 8 rows x 32 columns, 16 zmm accumulators.
// Compiled with -mavx512f -mfma (runtime/CMakeLists.txt); nothing here may
// be an inline function shared with other objects (the linker could keep
// this object's AVX-512 copy), hence intrinsics and plain loops only.
#include "runtime/gemm/micro_kernel.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

namespace slimpack::runtime::gemm {
namespace {

constexpr int kMr = 8;
constexpr int kNr = 32;

void KernelAvx512(int64_t kc, const float* a, const float* b, float* acc, bool first) {
  __m512 c[kMr][2];
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    c[r][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * kNr);
    c[r][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * kNr + 16);
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + p * kNr);
    const __m512 b1 = _mm512_loadu_ps(b + p * kNr + 16);
    const float* ap = a + p * kMr;
    #pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      const __m512 ar = _mm512_set1_ps(ap[r]);
      c[r][0] = _mm512_fmadd_ps(ar, b0, c[r][0]);
      c[r][1] = _mm512_fmadd_ps(ar, b1, c[r][1]);
    }
  }
  #pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(acc + r * kNr, c[r][0]);
    _mm512_storeu_ps(acc + r * kNr + 16, c[r][1]);
  }
}

}  // namespace

bool Avx512Kernel(MicroKernel* k) {
  if (!support::CpuAllows(support::CpuFeature::kAvx512f)) return false;
  *k = MicroKernel{"avx512", kMr, kNr, KernelAvx512};
  return true;
}

}  // namespace slimpack::runtime::gemm

#else

namespace slimpack::runtime::gemm {
bool Avx512Kernel(MicroKernel*) { return false; }
}  // namespace slimpack::runtime::gemm

#endif
