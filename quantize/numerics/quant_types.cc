// Scheme validation, the shared per-group grid and dequantization.
#include "quantize/numerics/quant_types.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "support/cpu_features.h"

namespace slimpack::quant {

std::string Scheme::ToString() const {
  return absl::StrCat("int", bits, " ",
                      group_size == 0 ? std::string("per-channel")
                                      : absl::StrCat("g", group_size),
                      symmetric ? " sym" : " asym",
                      scale_dtype == ScaleDType::kF16 ? " f16-scale" : "");
}

float StoredScale(float scale, ScaleDType scale_dtype) {
  if (scale_dtype == ScaleDType::kF32 || !std::isfinite(scale)) return scale;
  const float r = ir::F16ToF32(ir::F32ToF16(scale));
  if (r == 0.0f && scale != 0.0f) return std::copysign(0x1p-24f, scale);
  if (std::isinf(r)) return std::copysign(65504.0f, scale);
  return r;
}

int64_t NumGroups(const Scheme& s, int64_t cols) {
  if (cols <= 0) return 0;
  const int64_t g = EffectiveGroupSize(s, cols);
  if (g <= 0) return 0;
  return (cols + g - 1) / g;
}

absl::Status ValidateScheme(const Scheme& s, int64_t cols) {
  if (s.bits < 2 || s.bits > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("quant scheme: bits ", s.bits, " not in [2, 8]"));
  }
  if (s.group_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quant scheme: group_size ", s.group_size, " is negative"));
  }
  if (s.bits > 4 && s.bits < 8 && s.group_size != 0 && s.group_size != cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quant scheme: ", s.bits, "-bit weights are per-channel only "
        "(group_size 0 or cols = ", cols, "), got group_size ", s.group_size,
        " (grouped, use 8 or 2..4 bits)"));
  }
  return absl::OkStatus();
}

uint64_t QuantizedMatrix::StorageBytes() const {
  const uint64_t n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  const uint64_t g = static_cast<uint64_t>(rows) *
                     static_cast<uint64_t>(num_groups());
  const int container = scheme.bits <= 4 ? 4 : 8;
  const uint64_t scale_bytes = scheme.scale_dtype == ScaleDType::kF16 ? 2 : 4;
  uint64_t bytes = (n * container + 7) / 8 + g * scale_bytes;
  if (!scheme.symmetric) bytes += (g * container + 7) / 8;
  return bytes;
}

GroupGrid MakeGrid(float mn, float mx, float ratio, int bits, bool symmetric, bool restricted,
                   ScaleDType scale_dtype) {
  GroupGrid g;
  const int32_t half = 1 << (bits - 1);
  g.qmin = -half;
  g.qmax = half - 1;
  if (symmetric && restricted) {
    const float amax = std::max(std::fabs(mn), std::fabs(mx)) * ratio;
    g.qmin = -(half - 1);
    g.scale = StoredScale(amax / static_cast<float>(half - 1), scale_dtype);
    if (!(g.scale > 0.0f)) g.scale = 1.0f;
    return g;
  }
  if (symmetric) {
    // The extreme of larger magnitude maps to code -2^(b-1), so all 2^b codes
    // are used (llama.cpp's Q4_0 does the same): the step is amax / 2^(b-1)
    // instead of amax / (2^(b-1) - 1), 12.5 % finer at 4 bits. A positive
    // extreme therefore gets a negative scale; q * scale is all a reader
    // computes, and 0 still maps to code 0.
    const float m = (std::fabs(mn) >= std::fabs(mx) ? mn : mx) * ratio;
    g.scale = StoredScale(m / static_cast<float>(-half), scale_dtype);
    g.zero = 0;
    if (!(std::fabs(g.scale) > 0.0f)) g.scale = 1.0f;
    return g;
  }
  // Asymmetric: the range always contains 0 (as GPTQ's quantizer does), so
  // the zero point is a valid code and exact zeros stay exact.
  const float lo = std::min(mn, 0.0f) * ratio;
  const float hi = std::max(mx, 0.0f) * ratio;
  const int32_t maxq = 2 * half - 1;
  g.scale = (hi - lo) / static_cast<float>(maxq);
  if (std::isinf(g.scale)) {
    // hi - lo overflowed (weights near FLT_MAX): divide first.
    g.scale = hi / static_cast<float>(maxq) - lo / static_cast<float>(maxq);
  }
  g.scale = StoredScale(g.scale, scale_dtype);
  if (!(g.scale > 0.0f)) {
    g.scale = 1.0f;
    g.zero = -half;  // unsigned zero point 0
    return g;
  }
  float zu = std::nearbyint(-lo / g.scale);
  zu = std::min(std::max(zu, 0.0f), static_cast<float>(maxq));
  g.zero = static_cast<int32_t>(zu) - half;
  return g;
}

namespace {

// One row's groups: float(q - z) * s, the same single subtraction,
// conversion and multiply per code on every path.
inline void DequantizeRowScalar(const int8_t* q, const float* scale, const int8_t* zero,
                                int64_t cols, int64_t gs, float* o) {
  for (int64_t g = 0, begin = 0; begin < cols; ++g, begin += gs) {
    const float s = scale[g];
    const int32_t z = zero ? zero[g] : 0;
    const int64_t end = std::min(cols, begin + gs);
    for (int64_t c = begin; c < end; ++c) {
      o[c] = static_cast<float>(static_cast<int32_t>(q[c]) - z) * s;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// Eight codes at a time (GCC left the plain loop scalar: 9 % of an int4
// conversion, and its generic vectors widened int8 lanes one by one).
__attribute__((target("avx2"))) void DequantizeRowAvx2(const int8_t* q, const float* scale,
                                                       const int8_t* zero, int64_t cols,
                                                       int64_t gs, float* o) {
  for (int64_t g = 0, begin = 0; begin < cols; ++g, begin += gs) {
    const float s = scale[g];
    const int32_t z = zero ? zero[g] : 0;
    const __m256i zv = _mm256_set1_epi32(z);
    const __m256 sv = _mm256_set1_ps(s);
    const int64_t end = std::min(cols, begin + gs);
    int64_t c = begin;
    for (; c + 8 <= end; c += 8) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + c));
      const __m256i v = _mm256_sub_epi32(_mm256_cvtepi8_epi32(b), zv);
      _mm256_storeu_ps(o + c, _mm256_mul_ps(_mm256_cvtepi32_ps(v), sv));
    }
    for (; c < end; ++c) o[c] = static_cast<float>(static_cast<int32_t>(q[c]) - z) * s;
  }
}
#endif

}  // namespace

void DequantizeRows(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  const int64_t ng = m.num_groups();
  const int64_t gs = m.group_size();
  const bool has_zero = !m.zero.empty();
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = support::CpuAllows(support::CpuFeature::kAvx2);
#endif
  for (int64_t r = r0; r < r1; ++r) {
    const int8_t* q = m.q.data() + r * m.cols;
    const float* scale = m.scale.data() + r * ng;
    const int8_t* zero = has_zero ? m.zero.data() + r * ng : nullptr;
    float* o = out + (r - r0) * m.cols;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2) {
      DequantizeRowAvx2(q, scale, zero, m.cols, gs, o);
      continue;
    }
#endif
    DequantizeRowScalar(q, scale, zero, m.cols, gs, o);
  }
}

void Dequantize(const QuantizedMatrix& m, float* out) { DequantizeRows(m, 0, m.rows, out); }

}  // namespace slimpack::quant
