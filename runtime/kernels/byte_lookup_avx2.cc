// LookupBytes with AVX2, for CPUs without VBMI (the W8A8 activation lookups
// ran as a byte loop there, a tenth of a W8A8 MobileNet's run). VPSHUFB
// looks up 32 bytes in a 16-entry table: each of the table's sixteen rows
// of 16 is looked up by the codes' low four bits, and the code's bits 4, 5,
// 6 and 7 then pick among the sixteen results in a tree of byte blends
// (8 + 4 + 2 + 1 VPBLENDVB, each reading one bit moved to the byte's top).
// Compiled with -mavx2 (runtime/CMakeLists.txt) and entered only after
// support::CpuAllows; nothing here may be an inline function shared with
// other objects.
#include "runtime/kernels/byte_lookup.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include <cstring>

namespace slimpack::runtime::kernels {

bool LookupBytesAvx2(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y) {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvx2);
  if (!ok) return false;
  __m256i rows[16];  // row r = table[16r .. 16r + 15] in both 128-bit halves
  for (int r = 0; r < 16; ++r) {
    rows[r] = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  const auto look = [&](__m256i code) {
    const __m256i idx = _mm256_and_si256(code, low);
    // A 16-bit shift left by 3 puts each byte's bit 4 at its bit 7 (the
    // bits that cross from the lower byte land below it), and so on.
    const __m256i b4 = _mm256_slli_epi16(code, 3), b5 = _mm256_slli_epi16(code, 2);
    const __m256i b6 = _mm256_slli_epi16(code, 1);
    __m256i l4[8];
    for (int r = 0; r < 8; ++r) {
      l4[r] = _mm256_blendv_epi8(_mm256_shuffle_epi8(rows[2 * r], idx),
                                 _mm256_shuffle_epi8(rows[2 * r + 1], idx), b4);
    }
    __m256i l5[4];
    for (int r = 0; r < 4; ++r) l5[r] = _mm256_blendv_epi8(l4[2 * r], l4[2 * r + 1], b5);
    const __m256i l6a = _mm256_blendv_epi8(l5[0], l5[1], b6);
    const __m256i l6b = _mm256_blendv_epi8(l5[2], l5[3], b6);
    return _mm256_blendv_epi8(l6a, l6b, code);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), look(v));
  }
  if (i < n) {
    alignas(32) uint8_t in[32] = {}, out[32];
    std::memcpy(in, x + i, n - i);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                       look(_mm256_load_si256(reinterpret_cast<const __m256i*>(in))));
    std::memcpy(y + i, out, n - i);
  }
  return true;
}

}  // namespace slimpack::runtime::kernels

#else

namespace slimpack::runtime::kernels {
bool LookupBytesAvx2(const uint8_t*, const uint8_t*, int64_t, uint8_t*) { return false; }
}  // namespace slimpack::runtime::kernels

#endif
