// ggml_blocks decoding (spec.md, "ggml_blocks"), written from the spec's
// per-weight formulas rather than shared with slimpack's IR (the loader
// depends on nothing): tests hold it bit-identical to ir/ggml_blocks.cc and
// to ggml's own decoders. Each weight costs the same float operations in the
// same order as ggml's dequantize_row_* (two roundings for d*q - m, never an
// FMA: the build passes -ffp-contract=off). This is the scalar reference;
// dequant_ggml_avx2.cc and dequant_ggml_neon.cc unpack 32 codes at a time and
// then perform the same operations, and tests hold them bit-identical.
#include <cstring>

#include "formats/shard/loader/dequant_kernels.h"
#include "formats/shard/loader/dequantize.h"

namespace slimpack::loader::internal {
namespace {

uint32_t U32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// A 32-weight block: q4_0, q4_1, q5_0, q5_1 (nibble byte j holds weights j
// and j + 16, bit j of the high word is weight j's fifth bit) and q8_0.
void Block32(uint32_t type, const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  if (type == 8) {  // q8_0
    for (int e = 0; e < 32; ++e) y[e] = static_cast<int8_t>(b[2 + e]) * d;
    return;
  }
  const bool has_min = type == 3 || type == 7;
  const bool fifth = type == 6 || type == 7;
  const float m = has_min ? HalfAt(b + 2) : 0.0f;
  const uint8_t* qh = b + (has_min ? 4 : 2);
  const uint8_t* qs = b + (has_min ? 4 : 2) + (fifth ? 4 : 0);
  const uint32_t high = fifth ? U32(qh) : 0;
  const int zero = has_min ? 0 : (fifth ? 16 : 8);
  for (int e = 0; e < 32; ++e) {
    const int nib = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    const int q = (nib | static_cast<int>((high >> e) & 1) << 4) - zero;
    y[e] = has_min ? q * d + m : q * d;
  }
}

// A 256-weight K super-block. Weight e sits in sub-block e / 16 (e / 32 for
// q4_K/q5_K); the 2-bit fields of q2_K/q3_K/q6_K are spread over 32-byte
// runs: byte e % 32 of run e / 128, bits 2 * ((e % 128) / 32).
void BlockK(uint32_t type, const uint8_t* b, float* y) {
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, quarter = (e % 128) / 32, l = e % 32, s = e / 16;
    switch (type) {
      case 10: {  // q2_K
        const float d = HalfAt(b + 80), dmin = HalfAt(b + 82);
        const float dl = d * (b[s] & 0x0F), ml = dmin * (b[s] >> 4);
        const int q = (b[16 + 32 * h + l] >> (2 * quarter)) & 3;
        y[e] = dl * q - ml;
        break;
      }
      case 11: {  // q3_K
        const float dl = HalfAt(b + 108) * GgmlQ3Scale(b + 96, s);
        const int q2 = (b[32 + 32 * h + l] >> (2 * quarter)) & 3;
        const int hbit = (b[l] >> (e / 32)) & 1;
        y[e] = dl * (q2 - (hbit ? 0 : 4));
        break;
      }
      case 12:
      case 13: {  // q4_K, q5_K
        const int j = e / 32;
        int sc, m;
        GgmlScaleMinK4(b + 4, j, &sc, &m);
        const float d1 = HalfAt(b) * sc, m1 = HalfAt(b + 2) * m;
        const uint8_t* qs = b + (type == 12 ? 16 : 48);
        int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0F;
        if (type == 13) q += ((b[16 + l] >> j) & 1) << 4;
        y[e] = d1 * q - m1;
        break;
      }
      default: {  // 14, q6_K
        const int low = (b[64 * h + 32 * (quarter % 2) + l] >> (4 * (quarter / 2))) & 0x0F;
        const int high = (b[128 + 32 * h + l] >> (2 * quarter)) & 3;
        const int8_t scale = static_cast<int8_t>(b[192 + s]);
        y[e] = HalfAt(b + 208) * scale * ((low | high << 4) - 32);
        break;
      }
    }
  }
}

}  // namespace

void DequantGgmlBlocks(uint32_t type, uint32_t block_size, uint32_t block_bytes,
                       const uint8_t* src, uint64_t blocks, float* out) {
  ForEachGgmlBlock(
      block_size, block_bytes, src, blocks, out,
      [type](const uint8_t* b, float* y) { Block32(type, b, y); },
      [type](const uint8_t* b, float* y) { BlockK(type, b, y); });
}

}  // namespace slimpack::loader::internal
