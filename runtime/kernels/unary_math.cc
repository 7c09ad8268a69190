// More element-wise functions: rounding, sign, trigonometric and
// hyperbolic functions, IsNaN/IsInf, the parametric activations (Selu,
// Celu, ThresholdedRelu, Shrink, Softsign, PRelu) and Mod.
#include <cmath>
#include <type_traits>

#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

absl::Status FloatPredicate(KernelContext& ctx, bool (*pred)(float, bool, bool)) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(int64_t neg, ctx.IntAttr("detect_negative", 1));
  ASSIGN_OR_RETURN(int64_t pos, ctx.IntAttr("detect_positive", 1));
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kBool, x->dims()));
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    out.mutable_data<uint8_t>()[i] = pred(x->data<float>()[i], neg != 0, pos != 0);
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<RtTensor> ModTyped(KernelContext& ctx, const RtTensor& a, const RtTensor& b,
                                  bool fmod) {
  if constexpr (std::is_integral_v<T>) {
    for (int64_t i = 0; i < b.num_elements(); ++i) {
      if (b.data<T>()[i] == 0) {
        return absl::InvalidArgumentError("integer Mod by zero (divisor element " +
                                          std::to_string(i) + ")");
      }
    }
    return BinaryLoop<T, T>(ctx, a, b, a.dtype(), [fmod](T x, T y) -> T {
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return 0;  // also avoids MIN % -1
        const T r = static_cast<T>(x % y);
        // Python-style: the result takes the divisor's sign unless fmod.
        return (!fmod && r != 0 && ((r < 0) != (y < 0))) ? static_cast<T>(r + y) : r;
      } else {
        (void)fmod;  // unsigned: C++'s % is already the floor remainder
        return static_cast<T>(x % y);
      }
    });
  } else {
    return BinaryLoop<T, T>(ctx, a, b, a.dtype(), [fmod](T x, T y) -> T {
      const T r = std::fmod(x, y);
      return (!fmod && r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    });
  }
}

}  // namespace

absl::Status Round(KernelContext& ctx) {
  // Halves go to the even neighbour (the default FP rounding mode).
  return UnaryFloat(ctx, [](float x) { return std::nearbyint(x); });
}
absl::Status Sign(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  auto sign = [](auto v) { return static_cast<decltype(v)>((v > 0) - (v < 0)); };
  switch (x->dtype()) {
    case DType::kF32: return UnaryTyped<float>(ctx, *x, sign);
    case DType::kI64: return UnaryTyped<int64_t>(ctx, *x, sign);
    case DType::kI32: return UnaryTyped<int32_t>(ctx, *x, sign);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, i64, i32");
  }
}
absl::Status Tan(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Tan(x); });
}
absl::Status Asin(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Asin(x); });
}
absl::Status Acos(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Acos(x); });
}
absl::Status Atan(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Atan(x); });
}
absl::Status Sinh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Sinh(x); });
}
absl::Status Cosh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Cosh(x); });
}
absl::Status Asinh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Asinh(x); });
}
absl::Status Acosh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Acosh(x); });
}
absl::Status Atanh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Atanh(x); });
}
absl::Status Softsign(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return x / (1.0f + std::fabs(x)); });
}

absl::Status Selu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.67326319217681884765625f));
  ASSIGN_OR_RETURN(float gamma, ctx.FloatAttr("gamma", 1.05070102214813232421875f));
  return UnaryFloat(ctx, [alpha, gamma](float x) {
    return x > 0 ? gamma * x : gamma * alpha * pmath::Expm1(x);
  });
}

absl::Status Celu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.0f));
  return UnaryFloat(ctx, [alpha](float x) {
    return std::max(0.0f, x) + std::min(0.0f, alpha * pmath::Expm1(x / alpha));
  });
}

absl::Status ThresholdedRelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.0f));
  return UnaryFloat(ctx, [alpha](float x) { return x > alpha ? x : 0.0f; });
}

absl::Status Shrink(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float bias, ctx.FloatAttr("bias", 0.0f));
  ASSIGN_OR_RETURN(float lambd, ctx.FloatAttr("lambd", 0.5f));
  return UnaryFloat(ctx, [bias, lambd](float x) {
    return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0f;
  });
}

absl::Status IsNaN(KernelContext& ctx) {
  return FloatPredicate(ctx, [](float v, bool, bool) { return std::isnan(v); });
}

absl::Status IsInf(KernelContext& ctx) {
  return FloatPredicate(ctx, [](float v, bool neg, bool pos) {
    return std::isinf(v) && ((v < 0 && neg) || (v > 0 && pos));
  });
}

absl::Status PRelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* slope, ctx.RequiredInput(1));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kF32));
  auto prelu = [](float v, float s) { return v < 0 ? s * v : v; };
  ASSIGN_OR_RETURN(RtTensor out, (BinaryLoop<float, float>(ctx, *x, *slope, DType::kF32, prelu)));
  // The slope broadcasts to X only (unidirectional).
  if (out.dims() != x->dims()) {
    return absl::InvalidArgumentError("slope " + slope->DebugString() +
                                      " does not broadcast to X " + x->DebugString());
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Mod(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t fmod, ctx.IntAttr("fmod", 0));
  if (a->dtype() != b->dtype()) {
    return absl::InvalidArgumentError("operand dtypes differ: " + a->DebugString() + " vs " +
                                      b->DebugString());
  }
  absl::StatusOr<RtTensor> out;
  switch (a->dtype()) {
    case DType::kF32: out = ModTyped<float>(ctx, *a, *b, fmod != 0); break;
    case DType::kF64: out = ModTyped<double>(ctx, *a, *b, fmod != 0); break;
    case DType::kI64: out = ModTyped<int64_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kI32: out = ModTyped<int32_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kI16: out = ModTyped<int16_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kI8: out = ModTyped<int8_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kU64: out = ModTyped<uint64_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kU32: out = ModTyped<uint32_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kU16: out = ModTyped<uint16_t>(ctx, *a, *b, fmod != 0); break;
    case DType::kU8: out = ModTyped<uint8_t>(ctx, *a, *b, fmod != 0); break;
    default:
      return UnsupportedDType(ctx, a->dtype(), "f32, f64, and 8- to 64-bit integers");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
