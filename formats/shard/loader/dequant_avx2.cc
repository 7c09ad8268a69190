// AVX2 dequantization kernels, compiled with a target attribute and chosen
// at run time (__builtin_cpu_supports), so the library still runs on x86-64
// CPUs without AVX2. Tails and odd nibble starts use the scalar reference.
#include "formats/shard/loader/dequant_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace slimpack::loader::internal {
namespace {

#define SLP_AVX2 __attribute__((target("avx2")))

SLP_AVX2 inline __m256i Widen8(__m128i bytes8, bool is_signed) {
  return is_signed ? _mm256_cvtepi8_epi32(bytes8) : _mm256_cvtepu8_epi32(bytes8);
}

// float(v - zp) * s for 8 lanes, stored unaligned.
SLP_AVX2 inline void Store8(__m256i v, __m256i zp, __m256 s, float* out) {
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, zp)), s));
}

SLP_AVX2 __m256i LoadZp8(const int16_t* zp) {
  if (zp == nullptr) return _mm256_setzero_si256();
  return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(zp)));
}

SLP_AVX2 void Bcast8Avx2(const uint8_t* q, size_t n, bool is_signed, int32_t zp,
                         float s, float* out) {
  const __m256i vzp = _mm256_set1_epi32(zp);
  const __m256 vs = _mm256_set1_ps(s);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
    Store8(Widen8(b, is_signed), vzp, vs, out + i);
    Store8(Widen8(_mm_srli_si128(b, 8), is_signed), vzp, vs, out + i + 8);
  }
  ScalarKernels().bcast8(q + i, n - i, is_signed, zp, s, out + i);
}

SLP_AVX2 void Vec8Avx2(const uint8_t* q, size_t n, bool is_signed,
                       const int16_t* zp, const float* s, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
    Store8(Widen8(b, is_signed), LoadZp8(zp ? zp + i : nullptr),
           _mm256_loadu_ps(s + i), out + i);
  }
  ScalarKernels().vec8(q + i, n - i, is_signed, zp ? zp + i : nullptr, s + i,
                       out + i);
}

// 16 nibbles from 8 bytes, in element order, as int8 lanes (sign-extended
// from 4 bits when is_signed).
SLP_AVX2 inline __m128i Unpack16Nibbles(const uint8_t* bytes, bool is_signed) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(b, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  __m128i e = _mm_unpacklo_epi8(lo, hi);
  if (is_signed) {
    const __m128i eight = _mm_set1_epi8(8);
    e = _mm_sub_epi8(_mm_xor_si128(e, eight), eight);
  }
  return e;
}

SLP_AVX2 void Bcast4Avx2(const uint8_t* packed, uint64_t first, size_t n,
                         bool is_signed, int32_t zp, float s, float* out) {
  size_t i = 0;
  if ((first & 1) && n > 0) {  // start on a byte boundary
    ScalarKernels().bcast4(packed, first, 1, is_signed, zp, s, out);
    i = 1;
  }
  const __m256i vzp = _mm256_set1_epi32(zp);
  const __m256 vs = _mm256_set1_ps(s);
  for (; i + 16 <= n; i += 16) {
    const __m128i e = Unpack16Nibbles(packed + (first + i) / 2, is_signed);
    Store8(_mm256_cvtepi8_epi32(e), vzp, vs, out + i);
    Store8(_mm256_cvtepi8_epi32(_mm_srli_si128(e, 8)), vzp, vs, out + i + 8);
  }
  ScalarKernels().bcast4(packed, first + i, n - i, is_signed, zp, s, out + i);
}

SLP_AVX2 void Vec4Avx2(const uint8_t* packed, uint64_t first, size_t n,
                       bool is_signed, const int16_t* zp, const float* s,
                       float* out) {
  size_t i = 0;
  if ((first & 1) && n > 0) {
    ScalarKernels().vec4(packed, first, 1, is_signed, zp, s, out);
    i = 1;
  }
  for (; i + 16 <= n; i += 16) {
    const __m128i e = Unpack16Nibbles(packed + (first + i) / 2, is_signed);
    Store8(_mm256_cvtepi8_epi32(e), LoadZp8(zp ? zp + i : nullptr),
           _mm256_loadu_ps(s + i), out + i);
    Store8(_mm256_cvtepi8_epi32(_mm_srli_si128(e, 8)),
           LoadZp8(zp ? zp + i + 8 : nullptr), _mm256_loadu_ps(s + i + 8),
           out + i + 8);
  }
  ScalarKernels().vec4(packed, first + i, n - i, is_signed, zp ? zp + i : nullptr,
                       s + i, out + i);
}

}  // namespace

const DequantKernels* Avx2Kernels() {
  static const DequantKernels k = {"avx2",   Bcast8Avx2, Vec8Avx2,
                                   Bcast4Avx2, Vec4Avx2,  DequantGgmlBlocksAvx2};
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported ? &k : nullptr;
}

}  // namespace slimpack::loader::internal
#endif  // __x86_64__
