// Pieces shared by the ggml block codecs (ggml_blocks*.cc): ggml's rounding
// and conversion semantics, the scale searches, and the K-quant entry points.
// Every float expression keeps ggml's operation order; see ggml_blocks.h.
#ifndef SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_INTERNAL_H_
#define SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_INTERNAL_H_

#include <cstdint>
#include <cstring>

#include "formats/gguf/ggml_grid.h"
#include "formats/gguf/gguf_format.h"
#include "ir/float_convert.h"

namespace slimpack::gguf::internal {

// ggml's nearest_int: adding 1.5 * 2^23 puts the sum where one ulp is 1, so
// the FPU's round-to-nearest-even rounds v and the integer sits in the low
// mantissa bits. Exact for |v| < 2^22; kept (rather than std::nearbyint) so
// out-of-range and NaN inputs map to the same integers as in ggml.
inline int NearestInt(float v) {
  const float biased = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, sizeof bits);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// ggml converts floats to int8_t/uint8_t with C casts, which x86-64 compiles
// to cvttss2si (truncate; NaN and out-of-range give INT32_MIN) followed by
// taking the low byte. This does the same without undefined behaviour, so
// blocks whose scale overflows (subnormal inputs) encode as ggml's do.
inline int32_t TruncateLikeX86(float v) {
  if (v >= -2147483648.0f && v < 2147483648.0f) return static_cast<int32_t>(v);
  return INT32_MIN;
}
inline int TruncateToInt8(float v) {
  return static_cast<int8_t>(static_cast<uint8_t>(TruncateLikeX86(v)));
}

// Little-endian f16 fields (ggml_half), rounded to nearest even.
inline void PutF16(uint8_t* p, float v) {
  const uint16_t h = ir::F32ToF16(v);
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}
inline float GetF16(const uint8_t* p) {
  return ir::F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}
// f32 -> f16 -> f32, as ggml re-reads a scale it has just stored.
inline float RoundTripF16(float v) { return ir::F16ToF32(ir::F32ToF16(v)); }

// ggml's GROUP_MAX_EPS: a group whose largest |x| is below it is all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// The scale searches (ggml_blocks_search.cc). Each returns the scale and
// writes codes L; names say which ggml routine each reproduces.

// make_qx_quants, rmse_type 1: symmetric codes L in [0, 2*nmax) (zero point
// nmax) minimising sum w*(x - scale*(L - nmax))^2 over 19 trial scales.
// `weights` null means w = x^2. An all-zero group gives L = 0, scale 0.
float MakeQxQuants(int n, int nmax, const float* x, const float* weights, int8_t* L);

// make_q3_quants with do_rmse: as MakeQxQuants(w = x^2) but refined by up to
// five passes of per-code coordinate descent instead of the trial scales.
float MakeQ3Quants(int n, int nmax, const float* x, int8_t* L);

// make_qkx2_quants / make_qkx3_quants (identical for non-null weights):
// asymmetric codes L in [0, nmax] with x ~ scale*L - *the_min (the_min >= 0
// in practice), trying nstep+1 scales (rmin + rdelta*is + nmax)/(max - min),
// each refit by weighted least squares; use_mad picks |err| over err^2.
float MakeQkxQuants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                    float* the_min, float rmin, float rdelta, int nstep, bool use_mad);

// MakeQxQuants / MakeQkxQuants (same arguments) for `groups` consecutive
// groups of n <= 32 values at x + g*n (weights likewise; may be null:
// MakeQxQuants' then weighs by x^2 as ggml does, MakeQkxQuants' by ggml's
// q4_K/q5_K reference weights sqrt(sum x^2 / n) + |x|), scale g in
// scales[g], codes at L + g*n: bit-identical to calling the scalar routine
// per group, many groups per vector pass (ggml_blocks_lanes.cc).
// MakeQ3Quants for `groups` consecutive groups of n <= 32 values at
// x + g*n, scale g in scales[g], codes at L + g*n: bit-identical to the
// scalar routine per group (ggml_blocks_lanes.cc).
void MakeQ3QuantsGroups(int64_t groups, int n, int nmax, const float* x, int8_t* L,
                        float* scales);
void MakeQxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                        int8_t* L, float* scales);
void MakeQkxQuantsGroups(int64_t groups, int n, int nmax, const float* x, const float* weights,
                         uint8_t* L, float* scales, float* the_mins, float rmin, float rdelta,
                         int nstep, bool use_mad);

// The K types' last rounding of a super-block's groups onto their grids:
// L[g*n + i] = Clamp(NearestInt((x[g*n + i] + offset[g]) / d[g]), lo, hi) + bias
// as bytes, groups with d[g] == 0 left untouched; n a multiple of 16.
void RoundToGrids(int64_t groups, int n, const float* x, const float* d, const float* offset,
                  int lo, int hi, int bias, uint8_t* L);

// The vector width the three routines above run at: 16 (AVX-512F), 8 (AVX2)
// or 4 (any CPU), the widest the CPU has unless set lower here (tests and
// benchmarks run each width; results are the same bits at every width).
// 0 restores the widest; a width the CPU lacks gives the widest it has.
// Returns the width now in use. Not for use while encoders run.
int SetLaneWidth(int width);

// make_qp_quants: codes L in [0, nmax] for non-negative x (the K-quants'
// sub-block scales and mins) with weights, nine trial scales, then up to five
// coordinate-descent passes.
float MakeQpQuants(int n, int nmax, const float* x, uint8_t* L, const float* weights);

// The K-quant codecs (ggml_blocks_k.cc). n is a multiple of kQK_K; the type
// is one of kQ2_K..kQ6_K. `importance` is as in QuantizeRow.
void QuantizeKRow(TensorType type, const float* x, int64_t n, const float* importance,
                  uint8_t* dst);
// ggml_grid.h's BlockGrids and SetBlockCodes for one K-quant super-block.
void KBlockGrids(TensorType type, const uint8_t* block, WeightGrid* grids);
void SetKBlockCodes(TensorType type, const uint8_t* codes, uint8_t* block);

// The 32-weight block types' layouts (ggml_blocks.cc), byte offsets within
// a block:
//   q4_0: f16 d @0, 16 B nibbles @2           q4_1: d @0, f16 m @2, nibbles @4
//   q5_0: d @0, u32 high bits @2, nibbles @6  q5_1: d @0, m @2, high @4, nibbles @8
//   q8_0: d @0, 32 x i8 @2
// Nibble byte j holds weight j (low) and weight j + 16 (high); high-bit word
// bit j is weight j's fifth bit. Values: q4_0/q5_0 d*(q - 8|16),
// q4_1/q5_1 d*q + m, q8_0 d*q.
struct LegacyLayout {
  int bits;        // 4, 5 or 8
  bool has_min;    // q4_1, q5_1
  int qh_offset;   // -1 without a high-bit word
  int qs_offset;
  int block_bytes;
};
LegacyLayout LayoutOf(TensorType type);  // a 32-weight type
bool IsLegacy(TensorType type);
// Stores 32 codes (0..15 or 0..31) in a block's nibbles and high-bit word.
void PackCodes(const LegacyLayout& layout, const uint8_t* codes, uint8_t* block);

}  // namespace slimpack::gguf::internal

#endif  // SLIMPACK_FORMATS_GGUF_GGML_BLOCKS_INTERNAL_H_
