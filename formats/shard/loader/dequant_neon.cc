// NEON dequantization kernels for arm64 (NEON is part of the base Armv8-A
// ABI, so no run-time check is needed). Tails and odd nibble starts use the
// scalar reference.
#include "formats/shard/loader/dequant_kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

namespace slimpack::loader::internal {
namespace {

// float(w - zp) * s for the 8 int16 lanes of w, stored to out[0, 8).
inline void Store8(int16x8_t w, int16x8_t zp, float32x4_t s_lo, float32x4_t s_hi,
                   float* out) {
  const int16x8_t d = vsubq_s16(w, zp);
  vst1q_f32(out, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(d))), s_lo));
  vst1q_f32(out + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(d)), s_hi));
}

inline int16x8_t Widen8(uint8x8_t b, bool is_signed) {
  return is_signed ? vmovl_s8(vreinterpret_s8_u8(b))
                   : vreinterpretq_s16_u16(vmovl_u8(b));
}

inline int16x8_t LoadZp(const int16_t* zp) {
  return zp ? vld1q_s16(zp) : vdupq_n_s16(0);
}

void Bcast8Neon(const uint8_t* q, size_t n, bool is_signed, int32_t zp, float s,
                float* out) {
  const int16x8_t vzp = vdupq_n_s16(static_cast<int16_t>(zp));
  const float32x4_t vs = vdupq_n_f32(s);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint8x16_t b = vld1q_u8(q + i);
    Store8(Widen8(vget_low_u8(b), is_signed), vzp, vs, vs, out + i);
    Store8(Widen8(vget_high_u8(b), is_signed), vzp, vs, vs, out + i + 8);
  }
  ScalarKernels().bcast8(q + i, n - i, is_signed, zp, s, out + i);
}

void Vec8Neon(const uint8_t* q, size_t n, bool is_signed, const int16_t* zp,
              const float* s, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Store8(Widen8(vld1_u8(q + i), is_signed), LoadZp(zp ? zp + i : nullptr),
           vld1q_f32(s + i), vld1q_f32(s + i + 4), out + i);
  }
  ScalarKernels().vec8(q + i, n - i, is_signed, zp ? zp + i : nullptr, s + i,
                       out + i);
}

// 16 nibbles from 8 bytes in element order, widened to two int16x8.
inline void Unpack16Nibbles(const uint8_t* bytes, bool is_signed, int16x8_t* w0,
                            int16x8_t* w1) {
  const uint8x8_t b = vld1_u8(bytes);
  const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
  if (is_signed) {
    const int8x8_t eight = vdup_n_s8(8);
    *w0 = vmovl_s8(vsub_s8(veor_s8(vreinterpret_s8_u8(z.val[0]), eight), eight));
    *w1 = vmovl_s8(vsub_s8(veor_s8(vreinterpret_s8_u8(z.val[1]), eight), eight));
  } else {
    *w0 = vreinterpretq_s16_u16(vmovl_u8(z.val[0]));
    *w1 = vreinterpretq_s16_u16(vmovl_u8(z.val[1]));
  }
}

void Bcast4Neon(const uint8_t* packed, uint64_t first, size_t n, bool is_signed,
                int32_t zp, float s, float* out) {
  size_t i = 0;
  if ((first & 1) && n > 0) {
    ScalarKernels().bcast4(packed, first, 1, is_signed, zp, s, out);
    i = 1;
  }
  const int16x8_t vzp = vdupq_n_s16(static_cast<int16_t>(zp));
  const float32x4_t vs = vdupq_n_f32(s);
  for (; i + 16 <= n; i += 16) {
    int16x8_t w0, w1;
    Unpack16Nibbles(packed + (first + i) / 2, is_signed, &w0, &w1);
    Store8(w0, vzp, vs, vs, out + i);
    Store8(w1, vzp, vs, vs, out + i + 8);
  }
  ScalarKernels().bcast4(packed, first + i, n - i, is_signed, zp, s, out + i);
}

void Vec4Neon(const uint8_t* packed, uint64_t first, size_t n, bool is_signed,
              const int16_t* zp, const float* s, float* out) {
  size_t i = 0;
  if ((first & 1) && n > 0) {
    ScalarKernels().vec4(packed, first, 1, is_signed, zp, s, out);
    i = 1;
  }
  for (; i + 16 <= n; i += 16) {
    int16x8_t w0, w1;
    Unpack16Nibbles(packed + (first + i) / 2, is_signed, &w0, &w1);
    Store8(w0, LoadZp(zp ? zp + i : nullptr), vld1q_f32(s + i),
           vld1q_f32(s + i + 4), out + i);
    Store8(w1, LoadZp(zp ? zp + i + 8 : nullptr), vld1q_f32(s + i + 8),
           vld1q_f32(s + i + 12), out + i + 8);
  }
  ScalarKernels().vec4(packed, first + i, n - i, is_signed, zp ? zp + i : nullptr,
                       s + i, out + i);
}

}  // namespace

const DequantKernels& NeonKernels() {
  static const DequantKernels k = {"neon",     Bcast8Neon, Vec8Neon,
                                   Bcast4Neon, Vec4Neon,   DequantGgmlBlocksNeon};
  return k;
}

}  // namespace slimpack::loader::internal
#endif  // __aarch64__
