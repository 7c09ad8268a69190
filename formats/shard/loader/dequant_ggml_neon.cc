// NEON decoding of ggml blocks (spec.md, "ggml_blocks"), the arm64 twin of
// dequant_ggml_avx2.cc: each run of 32 weights sharing their packed bytes is
// unpacked into 32 int8 codes (two q-registers), then widened and scaled four
// at a time with one multiply and one add or subtract per weight, never fused
// (vmulq/vaddq, and the build passes -ffp-contract=off), so the output is
// bit-identical to dequant_ggml.cc's scalar reference (dequantize_ggml_test.cc,
// run under qemu-aarch64 by scripts/aarch64_loader_test.sh).
#include "formats/shard/loader/dequant_kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "formats/shard/loader/dequantize.h"

namespace slimpack::loader::internal {
namespace {

enum Offset { kNoOffset, kAddOffset, kSubOffset };

// 32 bytes as two registers: bytes 0-15 and 16-31.
struct V32 {
  uint8x16_t lo, hi;
};

inline V32 Load32(const uint8_t* p) { return {vld1q_u8(p), vld1q_u8(p + 16)}; }

// (v >> shift) & mask in every byte.
inline V32 Bits(V32 v, int shift, uint8_t mask) {
  const int8x16_t right = vdupq_n_s8(static_cast<int8_t>(-shift));
  const uint8x16_t m = vdupq_n_u8(mask);
  return {vandq_u8(vshlq_u8(v.lo, right), m), vandq_u8(vshlq_u8(v.hi, right), m)};
}

// (a | b << shift) - sub in every byte.
inline V32 Combine(V32 a, V32 b, int shift, uint8_t sub) {
  const int8x16_t left = vdupq_n_s8(static_cast<int8_t>(shift));
  const uint8x16_t s = vdupq_n_u8(sub);
  return {vsubq_u8(vorrq_u8(a.lo, vshlq_u8(b.lo, left)), s),
          vsubq_u8(vorrq_u8(a.hi, vshlq_u8(b.hi, left)), s)};
}

template <Offset kOff>
inline void Store4(int32x4_t c, float32x4_t d, float32x4_t m, float* y) {
  float32x4_t v = vmulq_f32(vcvtq_f32_s32(c), d);
  if (kOff == kAddOffset) v = vaddq_f32(v, m);
  if (kOff == kSubOffset) v = vsubq_f32(v, m);
  vst1q_f32(y, v);
}

// y[i] = float(codes[i]) * d, then + or - m, for 16 int8 codes.
template <Offset kOff>
inline void Scale16(uint8x16_t codes, float d, float m, float* y) {
  const int8x16_t c = vreinterpretq_s8_u8(codes);
  const float32x4_t vd = vdupq_n_f32(d), vm = vdupq_n_f32(m);
  const int16x8_t lo = vmovl_s8(vget_low_s8(c)), hi = vmovl_high_s8(c);
  Store4<kOff>(vmovl_s16(vget_low_s16(lo)), vd, vm, y);
  Store4<kOff>(vmovl_high_s16(lo), vd, vm, y + 4);
  Store4<kOff>(vmovl_s16(vget_low_s16(hi)), vd, vm, y + 8);
  Store4<kOff>(vmovl_high_s16(hi), vd, vm, y + 12);
}

template <Offset kOff>
inline void Scale32(V32 codes, float d0, float m0, float d1, float m1, float* y) {
  Scale16<kOff>(codes.lo, d0, m0, y);
  Scale16<kOff>(codes.hi, d1, m1, y + 16);
}

// Byte e = 0x10 when bit e of `high` is set, else 0 (q5_0/q5_1's fifth bits).
inline V32 FifthBits(uint32_t high) {
  static const uint8_t kIndexLo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t kIndexHi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t word = vreinterpretq_u8_u32(vdupq_n_u32(high));
  const uint8x16_t bit = vld1q_u8(kBit), ten = vdupq_n_u8(0x10);
  return {vandq_u8(vtstq_u8(vqtbl1q_u8(word, vld1q_u8(kIndexLo)), bit), ten),
          vandq_u8(vtstq_u8(vqtbl1q_u8(word, vld1q_u8(kIndexHi)), bit), ten)};
}

// q4_0, q4_1, q5_0, q5_1, q8_0 (dequant_ggml.cc's Block32).
void Block32(uint32_t type, const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  if (type == 8) {  // q8_0
    Scale32<kNoOffset>(Load32(b + 2), d, 0.0f, d, 0.0f, y);
    return;
  }
  const bool has_min = type == 3 || type == 7;
  const bool fifth = type == 6 || type == 7;
  const uint8_t* qh = b + (has_min ? 4 : 2);
  const uint8_t* qs = qh + (fifth ? 4 : 0);
  const uint8x16_t raw = vld1q_u8(qs);
  V32 codes = {vandq_u8(raw, vdupq_n_u8(0x0F)), vshrq_n_u8(raw, 4)};  // weights 0-15, 16-31
  if (fifth) {
    const uint32_t h = uint32_t{qh[0]} | uint32_t{qh[1]} << 8 | uint32_t{qh[2]} << 16 |
                       uint32_t{qh[3]} << 24;
    const V32 f = FifthBits(h);
    codes = {vorrq_u8(codes.lo, f.lo), vorrq_u8(codes.hi, f.hi)};
  }
  if (has_min) {
    const float m = HalfAt(b + 2);
    Scale32<kAddOffset>(codes, d, m, d, m, y);
    return;
  }
  const uint8x16_t zero = vdupq_n_u8(fifth ? 16 : 8);
  codes = {vsubq_u8(codes.lo, zero), vsubq_u8(codes.hi, zero)};
  Scale32<kNoOffset>(codes, d, 0.0f, d, 0.0f, y);
}

// The K super-blocks, one run r of 32 weights at a time (see
// dequant_ggml_avx2.cc's BlockK for the bit positions).
void BlockK(uint32_t type, const uint8_t* b, float* y) {
  for (int r = 0; r < 8; ++r, y += 32) {
    const int h = r / 4, quarter = r % 4, s0 = 2 * r, s1 = 2 * r + 1;
    switch (type) {
      case 10: {  // q2_K
        const float d = HalfAt(b + 80), dmin = HalfAt(b + 82);
        Scale32<kSubOffset>(Bits(Load32(b + 16 + 32 * h), 2 * quarter, 3), d * (b[s0] & 0x0F),
                            dmin * (b[s0] >> 4), d * (b[s1] & 0x0F), dmin * (b[s1] >> 4), y);
        break;
      }
      case 11: {  // q3_K: q2 - (high bit ? 0 : 4)
        const float d = HalfAt(b + 108);
        const V32 codes = Combine(Bits(Load32(b + 32 + 32 * h), 2 * quarter, 3),
                                  Bits(Load32(b), r, 1), 2, 4);
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
        V32 codes = Bits(Load32(qs + 32 * (r / 2)), 4 * (r % 2), 0x0F);
        if (type == 13) codes = Combine(codes, Bits(Load32(b + 16), r, 1), 4, 0);
        Scale32<kSubOffset>(codes, d1, m1, d1, m1, y);
        break;
      }
      default: {  // 14, q6_K: (low | high << 4) - 32
        const float d = HalfAt(b + 208);
        const V32 codes =
            Combine(Bits(Load32(b + 64 * h + 32 * (quarter % 2)), 4 * (quarter / 2), 0x0F),
                    Bits(Load32(b + 128 + 32 * h), 2 * quarter, 3), 4, 32);
        Scale32<kNoOffset>(codes, d * static_cast<int8_t>(b[192 + s0]), 0.0f,
                           d * static_cast<int8_t>(b[192 + s1]), 0.0f, y);
        break;
      }
    }
  }
}

}  // namespace

void DequantGgmlBlocksNeon(uint32_t type, uint32_t block_size, uint32_t block_bytes,
                           const uint8_t* src, uint64_t blocks, float* out) {
  ForEachGgmlBlock(
      block_size, block_bytes, src, blocks, out,
      [type](const uint8_t* b, float* y) { Block32(type, b, y); },
      [type](const uint8_t* b, float* y) { BlockK(type, b, y); });
}

}  // namespace slimpack::loader::internal
#endif  // __aarch64__
