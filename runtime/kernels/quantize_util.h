// Helpers shared by the quantization kernels (quantize_linear.cc and
// quantized_conv.cc): zero-point/scale reading, integer views of u8/i8/i32
// tensors, and the round-and-saturate store. One copy here so the two files
// cannot drift apart in their rounding.
#ifndef SLIMPACK_RUNTIME_KERNELS_QUANTIZE_UTIL_H_
#define SLIMPACK_RUNTIME_KERNELS_QUANTIZE_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "runtime/gemm/micro_kernel.h"
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

// Float arithmetic is exact on integers below 2^24 in magnitude: when every
// partial sum of an integer product stays below this bound, a float GEMM or
// convolution over the zero-point-centred values returns exactly the int32
// sum, in whatever order it adds (and no wrap-around happens). The integer
// kernels use that to run at the float kernels' speed.
constexpr int64_t kFloatExactBound = int64_t{1} << 24;

// Whether the float kernels have hardware FMA here. Without it (x86-64 with
// SSE only) the GEMM emulates each fused multiply-add exactly, far slower
// than the integer kernels' pmaddwd, so those keep the products.
inline bool FloatProductsAreFast() {
  static const bool fast =
      std::string_view(gemm::BestMicroKernel().name) != "sse2-exact-fma";
  return fast;
}

// An integer weight minus its zero points as floats, and the largest sum of
// |w - zp| over the terms of any one output (a convolution channel's row, a
// matmul column): what the float-exact paths need from a weight. Built once
// per node and kept in its cache when the weight is a constant (Prepared).
struct CentredWeights {
  static constexpr int kCacheKey = 0;
  std::vector<float> values;
  float worst_abs_sum = 0;  // exact below 2^24; a larger sum fails the bound anyway
  int64_t bytes() const { return static_cast<int64_t>(values.size() * sizeof(float)); }
};

// Whether input `i` is absent or the same initializer on every run.
inline bool ConstantOrAbsent(const KernelContext& ctx, size_t i) {
  return ctx.input(i) == nullptr || ctx.input_is_constant(i);
}

// `build()` (a std::shared_ptr<const T>, T one of the prepared-weight
// structs, each with its own T::kCacheKey), from the node's cache when
// `constant` (the weight and its zero point are initializers) and the
// kernel runs from an interpreter plan, otherwise built for this call.
template <typename Build>
auto Prepared(KernelContext& ctx, bool constant, const Build& build) -> decltype(build()) {
  using Ptr = decltype(build());
  using T = std::remove_const_t<typename Ptr::element_type>;
  if (!constant || ctx.node_cache() == nullptr) return build();
  absl::StatusOr<Ptr> cached = ctx.node_cache()->GetOrBuild<T>(
      T::kCacheKey, [&]() -> absl::StatusOr<Ptr> { return build(); });
  return *std::move(cached);  // the build cannot fail
}

// (v - zp) as floats for the n elements of the u8/i8 tensor `t` from
// element `from` (exact: |v - zp| <= 255); typed, so the loops vectorise.
inline void CenteredFloats(const RtTensor& t, int64_t from, int64_t n, int32_t zp, float* out) {
  const auto z = static_cast<float>(zp);
  if (t.dtype() == DType::kU8) {
    const uint8_t* v = t.data<uint8_t>() + from;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(v[i]) - z;
  } else {
    const int8_t* v = t.data<int8_t>() + from;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(v[i]) - z;
  }
}

// out[i] = int32(f[i]) for sums that are exact integers of magnitude below
// 2^24 (the float-exact convolutions' results), so truncation is exact;
// four at a time on x86-64 (GCC does not vectorise the scalar conversion).
inline void ExactSumsToInts(const float* f, int64_t n, int32_t* out) {
  int64_t i = 0;
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_cvttps_epi32(_mm_loadu_ps(f + i)));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<int32_t>(f[i]);
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
// zp within its range), sixteen at a time on x86-64: there nearbyint is a
// libm call per element (SSE2 has no roundps), which made requantising a
// W8A8 CNN's outputs cost as much as its integer products. cvtps2dq rounds
// half to even in the default rounding mode, as nearbyint does. zp must lie
// in t's range (a zero point of type t does).
inline void SaturateRoundBytes(const float* v, int64_t n, int32_t zp, DType t, uint8_t* out) {
  int64_t i = 0;
#if defined(__SSE2__)
  // Clamping to the integer bounds [lo - zp, hi - zp] before rounding
  // gives what rounding then clamping gives (rounding is monotone and the
  // bounds are integers), keeps cvtps2dq in range, and leaves values the
  // saturating packs carry unchanged. NaN lanes are zeroed first: they
  // become zp.
  const __m128 flo = _mm_set1_ps(static_cast<float>(QMin(t) - zp));
  const __m128 fhi = _mm_set1_ps(static_cast<float>(QMax(t) - zp));
  const __m128i vz = _mm_set1_epi32(zp);
  const auto round4 = [&](const float* p) {
    __m128 x = _mm_loadu_ps(p);
    x = _mm_and_ps(x, _mm_cmpord_ps(x, x));
    x = _mm_min_ps(_mm_max_ps(x, flo), fhi);
    return _mm_add_epi32(_mm_cvtps_epi32(x), vz);
  };
  const bool u8 = t == DType::kU8;
  for (; i + 16 <= n; i += 16) {
    const __m128i w0 = _mm_packs_epi32(round4(v + i), round4(v + i + 4));
    const __m128i w1 = _mm_packs_epi32(round4(v + i + 8), round4(v + i + 12));
    const __m128i b = u8 ? _mm_packus_epi16(w0, w1) : _mm_packs_epi16(w0, w1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), b);
  }
  for (; i + 4 <= n; i += 4) {
    const __m128i w = _mm_packs_epi32(round4(v + i), round4(v + i));
    const __m128i b = u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    const auto bytes = static_cast<uint32_t>(_mm_cvtsi128_si32(b));
    std::memcpy(out + i, &bytes, 4);
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
