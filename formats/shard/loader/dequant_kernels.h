// Inner dequantization kernels: one run of contiguous elements sharing one
// scale (broadcast) or with one scale per element (vector). Every kernel
// computes float(q - zp) * s exactly as the scalar reference does. Internal.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_DEQUANT_KERNELS_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_DEQUANT_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace slimpack::loader::internal {

struct DequantKernels {
  const char* name;
  // out[i] = float(q[i] - zp) * s for 8-bit q (int8 if is_signed).
  void (*bcast8)(const uint8_t* q, size_t n, bool is_signed, int32_t zp,
                 float s, float* out);
  // out[i] = float(q[i] - zp[i]) * s[i]; zp may be nullptr (0).
  void (*vec8)(const uint8_t* q, size_t n, bool is_signed, const int16_t* zp,
               const float* s, float* out);
  // Same for the 4-bit elements [first, first + n) of a packed array
  // (element k in byte k/2, low nibble first).
  void (*bcast4)(const uint8_t* packed, uint64_t first, size_t n,
                 bool is_signed, int32_t zp, float s, float* out);
  void (*vec4)(const uint8_t* packed, uint64_t first, size_t n, bool is_signed,
               const int16_t* zp, const float* s, float* out);
  // `blocks` ggml blocks of ggml type `type` (shard::kGgmlBlockTypes; the
  // caller has checked it and passes its geometry) at src decoded to out with
  // the spec's per-weight formulas: the vectorised kernels perform the same
  // float operations per weight as DequantGgmlBlocks.
  void (*ggml)(uint32_t type, uint32_t block_size, uint32_t block_bytes,
               const uint8_t* src, uint64_t blocks, float* out);
};

const DequantKernels& ScalarKernels();
// The fastest kernels this CPU supports (ScalarKernels() if none).
const DequantKernels& BestKernels();

// The scalar reference of DequantKernels::ggml (dequant_ggml.cc).
void DequantGgmlBlocks(uint32_t type, uint32_t block_size, uint32_t block_bytes,
                       const uint8_t* src, uint64_t blocks, float* out);

// fp8_e4m3_groupwise (dequant_fp8.cc), one scalar loop for every
// DequantImpl: the tensor as [outer, axis, inner] with `group_size`
// consecutive indices along axis sharing a scale, scales laid out as
// [ceil(outer / block_rows), ceil(axis / group_size), inner] (block_rows
// consecutive outer indices share a scale row; 1 for one each);
// out = Fp8E4M3ToFloat(q) * scale.
void DequantFp8E4M3Groups(const uint8_t* q, const float* scale, uint64_t outer,
                          uint64_t axis, uint64_t inner, uint64_t group_size,
                          uint64_t block_rows, float* out);

// Little-endian f16 at p, widened exactly.
float HalfAt(const uint8_t* p);

// The j-th (scale, min) pair of q4_K / q5_K's 12 scale bytes at s.
inline void GgmlScaleMinK4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// q3_K's 6-bit scale of sub-block s (of 16), minus 32, from its 12 scale
// bytes at sc.
inline int GgmlQ3Scale(const uint8_t* sc, int s) {
  const int low = s < 8 ? sc[s] & 0x0F : sc[s - 8] >> 4;
  return (low | (((sc[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) - 32;
}

// The block loop every ggml decoder shares: block32(b, y) for a 32-weight
// type, block_k(b, y) for a 256-weight super-block, over `blocks` blocks.
template <typename Block32, typename BlockK>
inline void ForEachGgmlBlock(uint32_t block_size, uint32_t block_bytes, const uint8_t* src,
                             uint64_t blocks, float* out, Block32 block32, BlockK block_k) {
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * block_bytes;
    float* y = out + i * block_size;
    if (block_size == 32) {
      block32(b, y);
    } else {
      block_k(b, y);
    }
  }
}

// Element k of a packed 4-bit array as an integer.
inline int32_t Nibble(const uint8_t* packed, uint64_t k, bool is_signed) {
  const uint8_t byte = packed[k >> 1];
  const int32_t v = (k & 1) ? (byte >> 4) : (byte & 0x0F);
  return is_signed ? ((v ^ 8) - 8) : v;
}

#if defined(__x86_64__)
const DequantKernels* Avx2Kernels();  // nullptr when the CPU lacks AVX2
void DequantGgmlBlocksAvx2(uint32_t type, uint32_t block_size, uint32_t block_bytes,
                           const uint8_t* src, uint64_t blocks, float* out);
#endif
#if defined(__aarch64__)
const DequantKernels& NeonKernels();
void DequantGgmlBlocksNeon(uint32_t type, uint32_t block_size, uint32_t block_bytes,
                           const uint8_t* src, uint64_t blocks, float* out);
#endif

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_DEQUANT_KERNELS_H_
