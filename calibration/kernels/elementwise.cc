// Element-wise kernels with numpy broadcasting: arithmetic, comparisons,
// logic, Where, and unary math/activation functions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "calibration/kernels/broadcast.h"
#include "calibration/kernels/elementwise_util.h"
#include "calibration/kernels/kernels.h"
#include "calibration/kernels/wrap.h"
#include "support/status_macros.h"

namespace slimpack::calibration::kernels {
namespace {

using ir::DType;

enum class Arith { kAdd, kSub, kMul, kDiv, kMax, kMin };

template <typename T>
absl::StatusOr<RtTensor> ArithTyped(KernelContext& ctx, Arith op,
                                    const RtTensor& a, const RtTensor& b) {
  const DType dt = a.dtype();
  switch (op) {
    // Lambdas rather than &WrapAdd<T> etc.: each gets its own BinaryLoop
    // instantiation, so the operation is inlined and the loop vectorises
    // (the three function pointers share one type, hence one indirect call).
    case Arith::kAdd:
      return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) { return WrapAdd<T>(x, y); });
    case Arith::kSub:
      return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) { return WrapSub<T>(x, y); });
    case Arith::kMul:
      return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) { return WrapMul<T>(x, y); });
    case Arith::kMax:
      return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(x) || std::isnan(y)) return x + y;  // NaN wins
        }
        return std::max(x, y);
      });
    case Arith::kMin:
      return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(x) || std::isnan(y)) return x + y;
        }
        return std::min(x, y);
      });
    case Arith::kDiv: {
      if constexpr (std::is_integral_v<T>) {
        const T* pb = b.data<T>();
        for (int64_t i = 0; i < b.num_elements(); ++i) {
          if (pb[i] == 0) {
            return absl::InvalidArgumentError(
                "integer division by zero (divisor element " +
                std::to_string(i) + ")");
          }
        }
        return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) {
          // Truncates toward zero as C and ONNX Runtime do; MIN / -1 wraps.
          if (y == -1) return WrapSub<T>(0, x);
          return static_cast<T>(x / y);
        });
      } else {
        return BinaryLoop<T, T>(ctx, a, b, dt, [](T x, T y) { return x / y; });
      }
    }
  }
  return absl::InternalError("unknown arithmetic op");
}

absl::StatusOr<RtTensor> ArithPair(KernelContext& ctx, Arith op,
                                   const RtTensor& a, const RtTensor& b) {
  if (a.dtype() != b.dtype()) {
    return absl::InvalidArgumentError(
        "operand dtypes differ: " + a.DebugString() + " vs " + b.DebugString());
  }
  switch (a.dtype()) {
    case DType::kF32: return ArithTyped<float>(ctx, op, a, b);
    case DType::kF64: return ArithTyped<double>(ctx, op, a, b);
    case DType::kI64: return ArithTyped<int64_t>(ctx, op, a, b);
    case DType::kI32: return ArithTyped<int32_t>(ctx, op, a, b);
    case DType::kI8: return ArithTyped<int8_t>(ctx, op, a, b);
    case DType::kU8: return ArithTyped<uint8_t>(ctx, op, a, b);
    default:
      return UnsupportedDType(ctx, a.dtype(), "f32, f64, i64, i32, i8, u8");
  }
}

absl::Status BinaryArith(KernelContext& ctx, Arith op) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(RtTensor out, ArithPair(ctx, op, *a, *b));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// Max/Min/Sum/Mean take one or more inputs, folded left to right.
absl::Status Variadic(KernelContext& ctx, Arith op, bool mean) {
  ASSIGN_OR_RETURN(const RtTensor* first, ctx.RequiredInput(0));
  RtTensor acc = *first;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const RtTensor* next, ctx.RequiredInput(i));
    ASSIGN_OR_RETURN(acc, ArithPair(ctx, op, acc, *next));
  }
  if (mean) {
    if (acc.dtype() != DType::kF32) {
      return UnsupportedDType(ctx, acc.dtype(), "f32");
    }
    RtTensor n = RtTensor::FromVector<float>(
        {}, {static_cast<float>(ctx.num_inputs())});
    ASSIGN_OR_RETURN(acc, ArithPair(ctx, Arith::kDiv, acc, n));
  }
  ctx.SetOutput(0, std::move(acc));
  return absl::OkStatus();
}

enum class Cmp { kEq, kLt, kGt, kLe, kGe };

template <typename T>
absl::StatusOr<RtTensor> CompareTyped(KernelContext& ctx, Cmp op,
                                      const RtTensor& a, const RtTensor& b) {
  switch (op) {
    case Cmp::kEq:
      return BinaryLoop<T, uint8_t>(ctx, a, b, DType::kBool,
                                    [](T x, T y) { return x == y; });
    case Cmp::kLt:
      return BinaryLoop<T, uint8_t>(ctx, a, b, DType::kBool,
                                    [](T x, T y) { return x < y; });
    case Cmp::kGt:
      return BinaryLoop<T, uint8_t>(ctx, a, b, DType::kBool,
                                    [](T x, T y) { return x > y; });
    case Cmp::kLe:
      return BinaryLoop<T, uint8_t>(ctx, a, b, DType::kBool,
                                    [](T x, T y) { return x <= y; });
    case Cmp::kGe:
      return BinaryLoop<T, uint8_t>(ctx, a, b, DType::kBool,
                                    [](T x, T y) { return x >= y; });
  }
  return absl::InternalError("unknown comparison");
}

absl::Status Compare(KernelContext& ctx, Cmp op) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  if (a->dtype() != b->dtype()) {
    return absl::InvalidArgumentError("operand dtypes differ: " +
                                      a->DebugString() + " vs " +
                                      b->DebugString());
  }
  absl::StatusOr<RtTensor> out;
  switch (a->dtype()) {
    case DType::kF32: out = CompareTyped<float>(ctx, op, *a, *b); break;
    case DType::kF64: out = CompareTyped<double>(ctx, op, *a, *b); break;
    case DType::kI64: out = CompareTyped<int64_t>(ctx, op, *a, *b); break;
    case DType::kI32: out = CompareTyped<int32_t>(ctx, op, *a, *b); break;
    case DType::kI8: out = CompareTyped<int8_t>(ctx, op, *a, *b); break;
    case DType::kU8:
    case DType::kBool: out = CompareTyped<uint8_t>(ctx, op, *a, *b); break;
    default:
      return UnsupportedDType(ctx, a->dtype(), "f32, f64, i64, i32, i8, u8, bool");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

enum class Logic { kAnd, kOr, kXor };

absl::Status Logical(KernelContext& ctx, Logic op) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ctx.ExpectDType(0, DType::kBool));
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kBool));
  absl::StatusOr<RtTensor> out = BinaryLoop<uint8_t, uint8_t>(
      ctx, *a, *b, DType::kBool, [op](uint8_t x, uint8_t y) {
        bool p = x != 0, q = y != 0;
        return op == Logic::kAnd ? (p && q) : op == Logic::kOr ? (p || q) : (p != q);
      });
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

// Neg/Abs on signed numbers; integer MIN maps to itself (wraps).
absl::Status SignedUnary(KernelContext& ctx, bool abs) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  auto apply = [abs](auto v) {
    using T = decltype(v);
    if (abs && v >= 0) return v;
    if constexpr (std::is_integral_v<T>) return WrapSub<T>(0, v);
    else return -v;
  };
  switch (x->dtype()) {
    case DType::kF32: return UnaryTyped<float>(ctx, *x, apply);
    case DType::kF64: return UnaryTyped<double>(ctx, *x, apply);
    case DType::kI64: return UnaryTyped<int64_t>(ctx, *x, apply);
    case DType::kI32: return UnaryTyped<int32_t>(ctx, *x, apply);
    case DType::kI8: return UnaryTyped<int8_t>(ctx, *x, apply);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64, i64, i32, i8");
  }
}

float SigmoidF(float x) {
  // Split by sign so exp never overflows.
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// f32 -> f32 element by element with the count hoisted and f inlined, so
// the loop vectorises when f has no calls or branches the vectoriser cannot
// if-convert.
template <typename F>
absl::Status UnaryF32Contiguous(KernelContext& ctx, F f) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  const float* __restrict px = x->data<float>();
  float* __restrict po = out.mutable_data<float>();
  const int64_t n = x->num_elements();
  for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// erf on f32 as a rational function of x (odd numerator of degree 13, even
// denominator of degree 8) on x clamped to [-4, 4], where erf rounds to
// +-1 in f32: the approximation Eigen and XLA use, absolute error under
// 5e-7 (a few ulp, well inside the ONNX tolerance). Unlike libm's erff it
// is branch-free, so it vectorises. The clamps are ternaries on values so
// NaN passes through them unchanged.
inline float ClampErfArg(float a) {
  const float x = a < -4.0f ? -4.0f : a;
  return x > 4.0f ? 4.0f : x;
}

inline float ErfRational(float x) {
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  const float y = x * p / q;
  // The rational overshoots 1 by up to 4e-7 just below |x| = 4.
  const float lo = y < -1.0f ? -1.0f : y;
  return lo > 1.0f ? 1.0f : lo;
}

// erf of px[0..n) into po[0..n); po may equal px (each block of px is read
// into local buffers before that block of po is written).
void ErfArray(const float* px, float* po, int64_t n) {
  // Clamp and rational in separate passes over a block: GCC does not
  // if-convert the clamp when the rational follows it in the same loop, and
  // leaves that loop scalar.
  //
  // Below |x| = 2^-20, erf(x) = x * 2/sqrt(pi) to f32 precision (the next
  // term is x^3/3 relatively smaller), and the rational's x^2 * c products
  // would go subnormal near 1e-15, which costs ~100x per element on x86:
  // such lanes evaluate the rational at 0 and take the linear term.
  // (The rational at 0 is 0, so adding the linear term, 0 elsewhere, picks
  // one or the other exactly.)
  constexpr int64_t kBlock = 256;
  constexpr float kTiny = 9.5367431640625e-07f;  // 2^-20
  constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
  float arg[kBlock], linear[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    for (int64_t j = 0; j < m; ++j) arg[j] = ClampErfArg(px[i0 + j]);
    // One select per loop and no arithmetic inside a select: GCC leaves
    // such loops scalar.
    for (int64_t j = 0; j < m; ++j) linear[j] = arg[j] * kTwoOverSqrtPi;
    for (int64_t j = 0; j < m; ++j) linear[j] = std::fabs(arg[j]) < kTiny ? linear[j] : 0.0f;
    for (int64_t j = 0; j < m; ++j) arg[j] = std::fabs(arg[j]) < kTiny ? 0.0f : arg[j];
    for (int64_t j = 0; j < m; ++j) po[i0 + j] = ErfRational(arg[j]) + linear[j];
  }
}

absl::Status ErfF32(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  ErfArray(x->data<float>(), out.mutable_data<float>(), x->num_elements());
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// Gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) with the erf above, in three
// vectorisable passes over the output.
absl::Status GeluErfF32(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  const float* px = x->data<float>();
  float* po = out.mutable_data<float>();
  const int64_t n = x->num_elements();
  const float k = static_cast<float>(M_SQRT1_2);
  for (int64_t i = 0; i < n; ++i) po[i] = px[i] * k;
  ErfArray(po, po, n);
  for (int64_t i = 0; i < n; ++i) po[i] = 0.5f * px[i] * (1.0f + po[i]);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

template <typename T>
absl::Status ClipTyped(KernelContext& ctx, const RtTensor& x, double lo,
                       double hi) {
  const T tl = static_cast<T>(lo), th = static_cast<T>(hi);
  return UnaryTyped<T>(ctx, x, [tl, th](T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;
    }
    return std::min(std::max(v, tl), th);
  });
}

}  // namespace

absl::Status Add(KernelContext& ctx) { return BinaryArith(ctx, Arith::kAdd); }
absl::Status Sub(KernelContext& ctx) { return BinaryArith(ctx, Arith::kSub); }
absl::Status Mul(KernelContext& ctx) { return BinaryArith(ctx, Arith::kMul); }
absl::Status Div(KernelContext& ctx) { return BinaryArith(ctx, Arith::kDiv); }
absl::Status Max(KernelContext& ctx) { return Variadic(ctx, Arith::kMax, false); }
absl::Status Min(KernelContext& ctx) { return Variadic(ctx, Arith::kMin, false); }
absl::Status Sum(KernelContext& ctx) { return Variadic(ctx, Arith::kAdd, false); }
absl::Status Mean(KernelContext& ctx) { return Variadic(ctx, Arith::kAdd, true); }

absl::Status Pow(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  absl::StatusOr<RtTensor> out;
  if (a->dtype() == DType::kF32) {
    RtTensor exponent = *b;
    if (b->dtype() != DType::kF32) {
      // Integer exponents: compute on a float copy.
      ASSIGN_OR_RETURN(exponent, ctx.AllocateUninitialized(DType::kF32, b->dims()));
      for (int64_t i = 0; i < b->num_elements(); ++i) {
        if (b->dtype() == DType::kI64) {
          exponent.mutable_data<float>()[i] =
              static_cast<float>(b->data<int64_t>()[i]);
        } else if (b->dtype() == DType::kI32) {
          exponent.mutable_data<float>()[i] =
              static_cast<float>(b->data<int32_t>()[i]);
        } else if (b->dtype() == DType::kF64) {
          exponent.mutable_data<float>()[i] =
              static_cast<float>(b->data<double>()[i]);
        } else {
          return UnsupportedDType(ctx, b->dtype(), "exponent f32, f64, i64, i32");
        }
      }
    }
    out = BinaryLoop<float, float>(ctx, *a, exponent, DType::kF32,
                                   [](float x, float y) {
                                     // Squares are common (LayerNorm
                                     // decompositions); keep them exact.
                                     if (y == 2.0f) return x * x;
                                     return std::pow(x, y);
                                   });
  } else if ((a->dtype() == DType::kI64 || a->dtype() == DType::kI32) &&
             b->dtype() == a->dtype()) {
    if (a->dtype() == DType::kI64) {
      out = BinaryLoop<int64_t, int64_t>(ctx, *a, *b, DType::kI64,
                                         [](int64_t x, int64_t y) {
                                           int64_t r = 1;
                                           for (int64_t i = 0; i < y && i < 64; ++i) r = WrapMul(r, x);
                                           return y < 0 ? int64_t{0} : r;
                                         });
    } else {
      out = BinaryLoop<int32_t, int32_t>(ctx, *a, *b, DType::kI32,
                                         [](int32_t x, int32_t y) {
                                           int32_t r = 1;
                                           for (int32_t i = 0; i < y && i < 32; ++i) r = WrapMul(r, x);
                                           return y < 0 ? int32_t{0} : r;
                                         });
    }
  } else {
    return absl::UnimplementedError(
        "Pow does not support base " + a->DebugString() + " with exponent " +
        b->DebugString() + "; supported: f32 base with any numeric exponent, "
        "i64/i32 base with same-type exponent");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status Equal(KernelContext& ctx) { return Compare(ctx, Cmp::kEq); }
absl::Status Less(KernelContext& ctx) { return Compare(ctx, Cmp::kLt); }
absl::Status Greater(KernelContext& ctx) { return Compare(ctx, Cmp::kGt); }
absl::Status LessOrEqual(KernelContext& ctx) { return Compare(ctx, Cmp::kLe); }
absl::Status GreaterOrEqual(KernelContext& ctx) { return Compare(ctx, Cmp::kGe); }
absl::Status And(KernelContext& ctx) { return Logical(ctx, Logic::kAnd); }
absl::Status Or(KernelContext& ctx) { return Logical(ctx, Logic::kOr); }
absl::Status Xor(KernelContext& ctx) { return Logical(ctx, Logic::kXor); }

absl::Status Not(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  RETURN_IF_ERROR(ctx.ExpectDType(0, DType::kBool));
  return UnaryTyped<uint8_t>(ctx, *x, [](uint8_t v) -> uint8_t { return v ? 0 : 1; });
}

absl::Status Where(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* c, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* y, ctx.RequiredInput(2));
  RETURN_IF_ERROR(ctx.ExpectDType(0, DType::kBool));
  if (x->dtype() != y->dtype()) {
    return absl::InvalidArgumentError("X and Y dtypes differ: " +
                                      x->DebugString() + " vs " + y->DebugString());
  }
  const int bits = ir::DTypeBits(x->dtype());
  if (bits < 8) return UnsupportedDType(ctx, x->dtype(), "byte-sized dtypes");
  const size_t es = static_cast<size_t>(bits / 8);
  ASSIGN_OR_RETURN(auto dims, BroadcastDims({c->dims(), x->dims(), y->dims()}));
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  const uint8_t* pc = c->raw();
  const uint8_t* px = x->raw();
  const uint8_t* py = y->raw();
  uint8_t* po = out.mutable_raw();
  ForEachBroadcast<3>(dims,
                      {BroadcastStrides(c->dims(), dims),
                       BroadcastStrides(x->dims(), dims),
                       BroadcastStrides(y->dims(), dims)},
                      [&](int64_t o, const std::array<int64_t, 3>& in) {
                        const uint8_t* src = pc[in[0]] ? px + in[1] * es : py + in[2] * es;
                        std::memcpy(po + o * es, src, es);
                      });
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Neg(KernelContext& ctx) { return SignedUnary(ctx, false); }
absl::Status Abs(KernelContext& ctx) { return SignedUnary(ctx, true); }
absl::Status Sqrt(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::sqrt(x); });
}
absl::Status Exp(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::exp(x); });
}
absl::Status Log(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::log(x); });
}
absl::Status Reciprocal(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return 1.0f / x; });
}
absl::Status Floor(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::floor(x); });
}
absl::Status Ceil(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::ceil(x); });
}
absl::Status Sin(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::sin(x); });
}
absl::Status Cos(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::cos(x); });
}
absl::Status Erf(KernelContext& ctx) {
  return ErfF32(ctx);
}
absl::Status Tanh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::tanh(x); });
}
absl::Status Sigmoid(KernelContext& ctx) { return UnaryFloat(ctx, SigmoidF); }
absl::Status Relu(KernelContext& ctx) {
  return UnaryF32Contiguous(
      ctx, [](float x) { return x > 0.0f ? x : (x == x ? 0.0f : x); });
}
absl::Status Softplus(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) {
    return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
}

absl::Status LeakyRelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 0.01f));
  return UnaryFloat(ctx, [alpha](float x) { return x >= 0.0f ? x : alpha * x; });
}

absl::Status Elu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.0f));
  return UnaryFloat(ctx, [alpha](float x) {
    return x >= 0.0f ? x : alpha * std::expm1(x);
  });
}

absl::Status HardSigmoid(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 0.2f));
  ASSIGN_OR_RETURN(float beta, ctx.FloatAttr("beta", 0.5f));
  return UnaryFloat(ctx, [alpha, beta](float x) {
    return std::min(1.0f, std::max(0.0f, alpha * x + beta));
  });
}

absl::Status HardSwish(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) {
    return x * std::min(1.0f, std::max(0.0f, x / 6.0f + 0.5f));
  });
}

absl::Status Gelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string approx, ctx.StringAttr("approximate", "none"));
  if (approx == "none") {
    return GeluErfF32(ctx);
  }
  if (approx == "tanh") {
    return UnaryFloat(ctx, [](float x) {
      const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    });
  }
  return absl::UnimplementedError("Gelu approximate='" + approx +
                                  "' is not supported; supported: none, tanh");
}

absl::Status Clip(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  double lo = -INFINITY, hi = INFINITY;
  // Opset < 11 gives the bounds as attributes, later opsets as inputs.
  if (ctx.HasAttr("min") || ctx.HasAttr("max")) {
    ASSIGN_OR_RETURN(float amin, ctx.FloatAttr("min", -INFINITY));
    ASSIGN_OR_RETURN(float amax, ctx.FloatAttr("max", INFINITY));
    lo = amin;
    hi = amax;
  }
  if (const RtTensor* t = ctx.input(1)) {
    ASSIGN_OR_RETURN(lo, ReadScalar(*t, "min"));
  }
  if (const RtTensor* t = ctx.input(2)) {
    ASSIGN_OR_RETURN(hi, ReadScalar(*t, "max"));
  }
  switch (x->dtype()) {
    case DType::kF32: return ClipTyped<float>(ctx, *x, lo, hi);
    case DType::kI64:
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: {
      // Integer bounds absent mean the type's own range.
      auto clamp_bounds = [&](double tmin, double tmax) {
        lo = std::isinf(lo) ? tmin : std::max(lo, tmin);
        hi = std::isinf(hi) ? tmax : std::min(hi, tmax);
      };
      if (x->dtype() == DType::kI64) {
        clamp_bounds(-9.2233720368547748e18, 9.2233720368547748e18);
        const int64_t l = lo <= -9.2233720368547748e18 ? INT64_MIN : static_cast<int64_t>(lo);
        const int64_t h = hi >= 9.2233720368547748e18 ? INT64_MAX : static_cast<int64_t>(hi);
        return UnaryTyped<int64_t>(ctx, *x, [l, h](int64_t v) { return std::min(std::max(v, l), h); });
      }
      if (x->dtype() == DType::kI32) {
        clamp_bounds(INT32_MIN, INT32_MAX);
        return ClipTyped<int32_t>(ctx, *x, lo, hi);
      }
      if (x->dtype() == DType::kI8) {
        clamp_bounds(INT8_MIN, INT8_MAX);
        return ClipTyped<int8_t>(ctx, *x, lo, hi);
      }
      clamp_bounds(0, UINT8_MAX);
      return ClipTyped<uint8_t>(ctx, *x, lo, hi);
    }
    default:
      return UnsupportedDType(ctx, x->dtype(), "f32, i64, i32, i8, u8");
  }
}

}  // namespace slimpack::calibration::kernels
