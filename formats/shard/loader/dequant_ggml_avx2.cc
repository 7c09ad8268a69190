// AVX2 decoding of ggml blocks (spec.md, "ggml_blocks"). Each run of 32
// weights that share their packed bytes is unpacked into 32 int8 codes with
// byte shifts and masks, then widened and scaled eight at a time. The float
// work per weight is that of dequant_ggml.cc's scalar formulas: one multiply
// of the code by the (sub-)block scale, then one add or subtract of the
// (sub-)block offset, never fused; the scales themselves are computed by the
// same scalar expressions. So the output is bit-identical to the scalar
// reference (dequantize_ggml_test.cc, GgmlDequantTest). Chosen at run
// time like dequant_avx2.cc.
#include "formats/shard/loader/dequant_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "formats/shard/loader/dequantize.h"

namespace slimpack::loader::internal {
namespace {

#define SLP_AVX2 __attribute__((target("avx2")))

enum Offset { kNoOffset, kAddOffset, kSubOffset };

SLP_AVX2 inline __m256i Load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// (v >> shift) & mask in every byte.
SLP_AVX2 inline __m256i Bits(__m256i v, int shift, uint8_t mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)),
                          _mm256_set1_epi8(static_cast<char>(mask)));
}

// y[i] = float(codes[i]) * d, then + or - m, for 16 int8 codes.
template <Offset kOff>
SLP_AVX2 inline void Scale16(__m128i codes, float d, float m, float* y) {
  const __m256 vd = _mm256_set1_ps(d);
  const __m256 vm = _mm256_set1_ps(m);
  for (int half = 0; half < 2; ++half) {
    const __m128i c = half == 0 ? codes : _mm_srli_si128(codes, 8);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)), vd);
    if (kOff == kAddOffset) v = _mm256_add_ps(v, vm);
    if (kOff == kSubOffset) v = _mm256_sub_ps(v, vm);
    _mm256_storeu_ps(y + 8 * half, v);
  }
}

// 32 codes: the first 16 with (d0, m0), the last 16 with (d1, m1).
template <Offset kOff>
SLP_AVX2 inline void Scale32(__m256i codes, float d0, float m0, float d1, float m1,
                             float* y) {
  Scale16<kOff>(_mm256_castsi256_si128(codes), d0, m0, y);
  Scale16<kOff>(_mm256_extracti128_si256(codes, 1), d1, m1, y + 16);
}

// Byte e = 0x10 when bit e of `high` is set, else 0 (q5_0/q5_1's fifth bits).
SLP_AVX2 inline __m256i FifthBits(uint32_t high) {
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(high)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit),
                          _mm256_set1_epi8(0x10));
}

// q4_0, q4_1, q5_0, q5_1, q8_0 (dequant_ggml.cc's Block32).
SLP_AVX2 void Block32(uint32_t type, const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  if (type == 8) {  // q8_0
    Scale32<kNoOffset>(Load32(b + 2), d, 0.0f, d, 0.0f, y);
    return;
  }
  const bool has_min = type == 3 || type == 7;
  const bool fifth = type == 6 || type == 7;
  const uint8_t* qh = b + (has_min ? 4 : 2);
  const uint8_t* qs = qh + (fifth ? 4 : 0);
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low = _mm_and_si128(raw, _mm_set1_epi8(0x0F));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F));
  __m256i codes = _mm256_set_m128i(high, low);  // weights 0-15, then 16-31
  if (fifth) {
    const uint32_t h = uint32_t{qh[0]} | uint32_t{qh[1]} << 8 | uint32_t{qh[2]} << 16 |
                       uint32_t{qh[3]} << 24;
    codes = _mm256_or_si256(codes, FifthBits(h));
  }
  if (has_min) {
    const float m = HalfAt(b + 2);
    Scale32<kAddOffset>(codes, d, m, d, m, y);
    return;
  }
  codes = _mm256_sub_epi8(codes, _mm256_set1_epi8(fifth ? 16 : 8));
  Scale32<kNoOffset>(codes, d, 0.0f, d, 0.0f, y);
}

// The K super-blocks, one run r of 32 weights (e = 32 r + l) at a time: run r
// reads byte l of a 32-byte field at bit 2 * (r % 4) (2-bit fields) or
// 4 * (r % 2) (nibbles); 16-weight sub-blocks are 2 r and 2 r + 1.
SLP_AVX2 void BlockK(uint32_t type, const uint8_t* b, float* y) {
  for (int r = 0; r < 8; ++r, y += 32) {
    const int h = r / 4, quarter = r % 4, s0 = 2 * r, s1 = 2 * r + 1;
    switch (type) {
      case 10: {  // q2_K
        const float d = HalfAt(b + 80), dmin = HalfAt(b + 82);
        const __m256i codes = Bits(Load32(b + 16 + 32 * h), 2 * quarter, 3);
        Scale32<kSubOffset>(codes, d * (b[s0] & 0x0F), dmin * (b[s0] >> 4),
                            d * (b[s1] & 0x0F), dmin * (b[s1] >> 4), y);
        break;
      }
      case 11: {  // q3_K: q2 - (high bit ? 0 : 4)
        const float d = HalfAt(b + 108);
        const __m256i q2 = Bits(Load32(b + 32 + 32 * h), 2 * quarter, 3);
        const __m256i hbit = Bits(Load32(b), r, 1);
        const __m256i codes =
            _mm256_sub_epi8(_mm256_or_si256(q2, _mm256_slli_epi16(hbit, 2)), _mm256_set1_epi8(4));
        Scale32<kNoOffset>(codes, d * GgmlQ3Scale(b + 96, s0), 0.0f, d * GgmlQ3Scale(b + 96, s1), 0.0f,
                           y);
        break;
      }
      case 12:
      case 13: {  // q4_K, q5_K: one (scale, min) per run
        int sc, m;
        GgmlScaleMinK4(b + 4, r, &sc, &m);
        const float d1 = HalfAt(b) * sc, m1 = HalfAt(b + 2) * m;
        const uint8_t* qs = b + (type == 12 ? 16 : 48);
        __m256i codes = Bits(Load32(qs + 32 * (r / 2)), 4 * (r % 2), 0x0F);
        if (type == 13) {
          codes = _mm256_or_si256(codes, _mm256_slli_epi16(Bits(Load32(b + 16), r, 1), 4));
        }
        Scale32<kSubOffset>(codes, d1, m1, d1, m1, y);
        break;
      }
      default: {  // 14, q6_K: (low | high << 4) - 32
        const float d = HalfAt(b + 208);
        const __m256i low = Bits(Load32(b + 64 * h + 32 * (quarter % 2)), 4 * (quarter / 2), 0x0F);
        const __m256i high = Bits(Load32(b + 128 + 32 * h), 2 * quarter, 3);
        const __m256i codes =
            _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
        Scale32<kNoOffset>(codes, d * static_cast<int8_t>(b[192 + s0]), 0.0f,
                           d * static_cast<int8_t>(b[192 + s1]), 0.0f, y);
        break;
      }
    }
  }
}

}  // namespace

SLP_AVX2 void DequantGgmlBlocksAvx2(uint32_t type, uint32_t block_size,
                                    uint32_t block_bytes, const uint8_t* src,
                                    uint64_t blocks, float* out) {
  ForEachGgmlBlock(
      block_size, block_bytes, src, blocks, out,
      [type](const uint8_t* b, float* y) { Block32(type, b, y); },
      [type](const uint8_t* b, float* y) { BlockK(type, b, y); });
}

}  // namespace slimpack::loader::internal
#endif  // __x86_64__
