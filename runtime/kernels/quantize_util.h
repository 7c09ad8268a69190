// Helpers shared by the quantization kernels (quantize_linear.cc and
// quantized_conv.cc): zero-point/scale reading, integer views of u8/i8/i32
// tensors, and the round-and-saturate store. One copy here so the two files
// cannot drift apart in their rounding.
#ifndef SLIMPACK_RUNTIME_KERNELS_QUANTIZE_UTIL_H_
#define SLIMPACK_RUNTIME_KERNELS_QUANTIZE_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels::quantize_internal {

using ir::DType;

inline bool IsQuantType(DType t) { return t == DType::kU8 || t == DType::kI8; }

inline int64_t QMin(DType t) { return t == DType::kU8 ? 0 : t == DType::kI8 ? -128 : INT32_MIN; }
inline int64_t QMax(DType t) { return t == DType::kU8 ? 255 : t == DType::kI8 ? 127 : INT32_MAX; }

// Integer elements of a u8/i8/i32 tensor as int32.
inline std::vector<int32_t> IntsOf(const RtTensor& t) {
  std::vector<int32_t> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kU8: v[i] = t.data<uint8_t>()[i]; break;
      case DType::kI8: v[i] = t.data<int8_t>()[i]; break;
      default: v[i] = t.data<int32_t>()[i]; break;
    }
  }
  return v;
}

// Round half to even, then add zp and clamp to the type's range. NaN maps
// to zp (ONNX leaves it undefined; this keeps the result deterministic).
inline int64_t SaturateRound(float v, int64_t zp, DType t) {
  if (std::isnan(v)) return std::clamp<int64_t>(zp, QMin(t), QMax(t));
  const double r = static_cast<double>(std::nearbyint(v)) + static_cast<double>(zp);
  return static_cast<int64_t>(
      std::clamp(r, static_cast<double>(QMin(t)), static_cast<double>(QMax(t))));
}

// SaturateRound(v[i], zp, t) for i < n into u8 / i8 bytes (t is kU8 or kI8,
// zp within its range), four at a time on x86-64: there nearbyint is a
// libm call per element (SSE2 has no roundps), which made requantising a
// W8A8 CNN's outputs cost as much as its integer products. cvtps2dq rounds
// half to even in the default rounding mode, as nearbyint does; inputs are
// first clamped to +-2^30, where the result saturates either way, and NaN
// lanes take the clamped zero point.
inline void SaturateRoundBytes(const float* v, int64_t n, int32_t zp, DType t, uint8_t* out) {
  const auto lo = static_cast<int32_t>(QMin(t)), hi = static_cast<int32_t>(QMax(t));
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 big = _mm_set1_ps(1073741824.0f), nbig = _mm_set1_ps(-1073741824.0f);
  const __m128i vz = _mm_set1_epi32(zp), vlo = _mm_set1_epi32(lo), vhi = _mm_set1_epi32(hi);
  const __m128i vzc = _mm_set1_epi32(std::clamp(zp, lo, hi));
  const auto select = [](__m128i mask, __m128i a, __m128i b) {  // mask ? a : b
    return _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b));
  };
  for (; i + 4 <= n; i += 4) {
    const __m128 x = _mm_loadu_ps(v + i);
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(x, x));
    __m128i r = _mm_add_epi32(_mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(x, nbig), big)), vz);
    r = select(_mm_cmplt_epi32(r, vlo), vlo, r);
    r = select(_mm_cmpgt_epi32(r, vhi), vhi, r);
    r = select(nan, vzc, r);
    alignas(16) int32_t q[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(q), r);
    for (int k = 0; k < 4; ++k) out[i + k] = static_cast<uint8_t>(q[k]);
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(SaturateRound(v[i], zp, t));
}

inline void Store(RtTensor& out, int64_t i, int64_t v) {
  switch (out.dtype()) {
    case DType::kU8: out.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::kI8: out.mutable_data<int8_t>()[i] = static_cast<int8_t>(v); break;
    default: out.mutable_data<int32_t>()[i] = static_cast<int32_t>(v); break;
  }
}

// A scale (f32) and zero point (u8/i8/i32, or absent = 0), scalar or one
// value per index of an axis of length `len`.
struct QParams {
  std::vector<float> scale;  // empty when no scale input
  std::vector<int32_t> zp;
  // Values for index `i` of the axis (scalars broadcast).
  float s(int64_t i) const { return scale.size() == 1 ? scale[0] : scale[i]; }
  int32_t z(int64_t i) const { return zp.size() == 1 ? zp[0] : zp[i]; }
};

// Reads the scale at input `si` (or none when si < 0) and zero point at
// `zi`. Each must be a scalar / one-element tensor or a 1-D tensor of `len`
// elements. InvalidArgument naming the input otherwise.
inline absl::StatusOr<QParams> ReadQParams(const KernelContext& ctx, int si,
                                           int zi, int64_t len,
                                           const std::string& what) {
  QParams p;
  auto check = [&](const RtTensor& t, const std::string& name) -> absl::Status {
    if (t.num_elements() == 1 && t.rank() <= 1) return absl::OkStatus();
    if (t.rank() == 1 && t.dim(0) == len) return absl::OkStatus();
    return absl::InvalidArgumentError("'" + name + "' " + t.DebugString() +
                                      " must be a scalar or 1-D with " +
                                      std::to_string(len) + " elements for " + what);
  };
  if (si >= 0) {
    ASSIGN_OR_RETURN(const RtTensor* s, ctx.RequiredInput(si));
    if (s->dtype() != DType::kF32) return UnsupportedDType(ctx, s->dtype(), "f32 scales");
    RETURN_IF_ERROR(check(*s, ctx.node().inputs[si]));
    p.scale = s->ToVector<float>();
  }
  const RtTensor* z = ctx.input(zi);
  if (z == nullptr) {
    p.zp.assign(1, 0);
  } else {
    if (!IsQuantType(z->dtype()) && z->dtype() != DType::kI32) {
      return UnsupportedDType(ctx, z->dtype(), "u8, i8, i32 zero points");
    }
    RETURN_IF_ERROR(check(*z, ctx.node().inputs[zi]));
    p.zp = IntsOf(*z);
  }
  if (si >= 0 && p.scale.size() != p.zp.size() && p.zp.size() != 1 &&
      p.scale.size() != 1) {
    return absl::InvalidArgumentError("scale and zero point of " + what +
                                      " have different lengths");
  }
  // A per-axis zero point with a scalar scale: widen the scale.
  if (si >= 0 && p.scale.size() == 1 && p.zp.size() > 1) {
    p.scale.assign(p.zp.size(), p.scale[0]);
  }
  if (p.zp.size() == 1 && p.scale.size() > 1) p.zp.assign(p.scale.size(), p.zp[0]);
  return p;
}

inline absl::Status ExpectQuantInput(const KernelContext& ctx, const RtTensor& t) {
  if (IsQuantType(t.dtype())) return absl::OkStatus();
  return UnsupportedDType(ctx, t.dtype(), "u8, i8");
}

// Checks a zero point (if present) has the same dtype as its tensor.
inline absl::Status ExpectZeroPointType(const KernelContext& ctx, size_t zi, DType want) {
  const RtTensor* z = ctx.input(zi);
  if (z == nullptr || z->dtype() == want) return absl::OkStatus();
  return absl::InvalidArgumentError("zero point '" + ctx.node().inputs[zi] + "' is " +
                                    std::string(ir::DTypeName(z->dtype())) +
                                    " but its tensor is " +
                                    std::string(ir::DTypeName(want)));
}

}  // namespace slimpack::runtime::kernels::quantize_internal

#endif  // SLIMPACK_RUNTIME_KERNELS_QUANTIZE_UTIL_H_
