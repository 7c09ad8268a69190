// LookupBytes with AVX-512 VBMI. Compiled with -mavx512f -mavx512bw
// -mavx512vbmi (runtime/CMakeLists.txt) and entered only after
// support::CpuAllows; nothing here may be an inline function shared with
// other objects (the linker could keep this object's AVX-512 copy).
#include "runtime/kernels/byte_lookup.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
#include <immintrin.h>

namespace slimpack::runtime::kernels {

bool LookupBytesVbmi(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y) {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvx512f) &&
                         support::CpuAllows(support::CpuFeature::kAvx512bw) &&
                         support::CpuAllows(support::CpuFeature::kAvx512vbmi);
  if (!ok) return false;
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  // VPERMI2B reads the low seven bits of each index: codes 0-127 from the
  // first half, 128-255 (same low bits) from the second; the code's top
  // bit picks between them.
  const auto look = [&](__m512i idx) {
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, look(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = ~__mmask64{0} >> (64 - (n - i));
    _mm512_mask_storeu_epi8(y + i, m, look(_mm512_maskz_loadu_epi8(m, x + i)));
  }
  return true;
}

}  // namespace slimpack::runtime::kernels

#else

namespace slimpack::runtime::kernels {
bool LookupBytesVbmi(const uint8_t*, const uint8_t*, int64_t, uint8_t*) { return false; }
}  // namespace slimpack::runtime::kernels

#endif
