// Quantization schemes and the unpacked quantized-matrix form every weight
// quantizer (RTN, GPTQ, AWQ) produces and pack.h turns into shard tensors.
//
// Matrix convention: W is row-major [rows, cols], rows = output channels,
// cols = input features; quantization groups run along cols (a group is
// `group_size` consecutive columns of one row; the last group of a row may
// be shorter).
//
// Code convention ("centred codes"): every code and zero point is stored as
//   stored = unsigned_code - 2^(bits-1)
// so both always fit an int8_t in [-2^(bits-1), 2^(bits-1) - 1].
// - symmetric: zero point is 0 (the `zero` vector is empty); the code IS the
//   signed integer of an i8/i4 tensor, in [-2^(b-1), 2^(b-1)-1]; the
//   group's extreme of larger magnitude (times clip_ratio) takes code
//   -2^(b-1), so all 2^b codes are used and the scale is negative when that
//   extreme is positive (see MakeGrid).
// - asymmetric: the u8/u4 tensor holds unsigned_code = stored + 2^(b-1) and
//   its zero point likewise; since both carry the same offset,
//     x = float(q - zero) * scale
//   is the same number computed on stored or unsigned codes.
// Dequantization is exactly float(int(q) - int(zero)) * scale, one f32
// multiply, no FMA (formats/shard/spec.md "Layouts").
#ifndef SLIMPACK_QUANTIZE_NUMERICS_QUANT_TYPES_H_
#define SLIMPACK_QUANTIZE_NUMERICS_QUANT_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace slimpack::quant {

// How a group's scale is stored. f16 (ggml's choice for every block type)
// costs 16 bits per group instead of 32 (0.25 bit/weight at group 64) and
// every quantizer rounds onto the f16 grid it will be stored in
// (MakeGrid), so the codes are chosen for the scale a reader multiplies by.
enum class ScaleDType : uint8_t { kF32 = 0, kF16 = 1 };

struct Scheme {
  int bits = 4;
  int64_t group_size = 0;  // 0: one group per row (per output channel)
  bool symmetric = true;
  ScaleDType scale_dtype = ScaleDType::kF32;

  // "int4 g32 sym", "int8 per-channel asym", "int4 g32 sym f16-scale": for
  // messages and reports.
  std::string ToString() const;
  bool operator==(const Scheme& o) const {
    return bits == o.bits && group_size == o.group_size &&
           symmetric == o.symmetric && scale_dtype == o.scale_dtype;
  }
};

// Groups per row for `cols` columns under `s` (ceil(cols / group), or 1).
int64_t NumGroups(const Scheme& s, int64_t cols);
// Columns per group, resolving group_size 0 to `cols`.
inline int64_t EffectiveGroupSize(const Scheme& s, int64_t cols) {
  return s.group_size == 0 ? cols : s.group_size;
}

// Checks bits in [2, 8] and group_size >= 0; bits 5..7 (stored in an 8-bit
// container) must be per-channel (group_size 0 or == cols): grouped they
// would cost 8 bits a weight for fewer levels than int8_groupwise. 8 bits
// take any group size (int8_per_channel or int8_groupwise).
// InvalidArgument naming the offending field and value.
absl::Status ValidateScheme(const Scheme& s, int64_t cols);

struct QuantizedMatrix {
  int64_t rows = 0, cols = 0;
  Scheme scheme;
  std::vector<int8_t> q;     // rows*cols centred codes, row-major, unpacked
  std::vector<float> scale;  // rows * num_groups(), row-major
  std::vector<int8_t> zero;  // rows * num_groups() centred zero points;
                             // empty when symmetric
  int64_t num_groups() const { return NumGroups(scheme, cols); }
  int64_t group_size() const { return EffectiveGroupSize(scheme, cols); }
  // Bytes of the packed payload plus scales and packed zero points.
  uint64_t StorageBytes() const;
};

// out[r*cols + c] = float(q - zero) * scale of (r, c)'s group. `out` holds
// rows*cols floats.
void Dequantize(const QuantizedMatrix& m, float* out);
// Rows [r0, r1) of Dequantize's output, written to out[0, (r1 - r0) * cols).
void DequantizeRows(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out);

// Quantization grid of one group: x -> clamp(rint(x / scale) + zero,
// qmin, qmax) with centred codes. Shared by RTN, GPTQ and AWQ so all use the
// same arithmetic.
struct GroupGrid {
  float scale = 1.0f;
  int32_t zero = 0;  // centred
  int32_t qmin = 0, qmax = 0;
};
// Grid for a group whose values span [mn, mx], range shrunk by `ratio`
// (1 = no clipping). Symmetric: scale = m*ratio / -2^(b-1) with m the one
// of mn, mx of larger magnitude (mn on a tie), so m lands on the lowest code
// and the scale is negative when m > 0;
// asymmetric: range [min(mn,0), max(mx,0)]*ratio over 2^b - 1 steps,
// zero = rint(-lo/scale). A zero range gives scale 1 (all codes equal the
// zero point).
// `restricted` (symmetric only): codes in [-(2^(b-1)-1), 2^(b-1)-1] with
// scale = max(|mn|,|mx|)*ratio / (2^(b-1)-1) > 0, the convention of int8
// kernels that multiply two signed codes (static W8A8, spec "Integer ops").
// `scale_dtype` kF16: the scale is rounded to f16 (StoredScale) before the
// zero point is chosen, so the grid is the one the stored layout describes.
GroupGrid MakeGrid(float mn, float mx, float ratio, int bits, bool symmetric,
                   bool restricted = false, ScaleDType scale_dtype = ScaleDType::kF32);

// `scale` as it will be stored: itself for kF32; for kF16 the nearest f16
// (ties to even), with a value too small for f16's subnormals kept at the
// smallest one (2^-24) and one too large at the largest finite (65504), both
// of the same sign, so a stored scale is never 0 or infinite.
float StoredScale(float scale, ScaleDType scale_dtype);
// One element through the grid (centred code).
inline int32_t QuantizeValue(float x, const GroupGrid& g);
inline float DequantizeCode(int32_t q, const GroupGrid& g) {
  return static_cast<float>(q - g.zero) * g.scale;
}

}  // namespace slimpack::quant

// Inline definitions.
#include <cmath>
namespace slimpack::quant {
inline int32_t QuantizeValue(float x, const GroupGrid& g) {
  // rint: round half to even in the default rounding mode, what
  // _mm256_round_ps(_MM_FROUND_TO_NEAREST_INT) and numpy.round do.
  float t = std::nearbyint(x / g.scale) + static_cast<float>(g.zero);
  t = t < static_cast<float>(g.qmin) ? static_cast<float>(g.qmin) : t;
  t = t > static_cast<float>(g.qmax) ? static_cast<float>(g.qmax) : t;
  return static_cast<int32_t>(t);
}
}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_QUANT_TYPES_H_
