// Element-wise kernels with numpy broadcasting: arithmetic, Pow,
// comparisons, logic, BitShift and Where. The unary math and activation kernels are
// in elementwise_unary.cc (kept apart to stay under the 500-line limit;
// the two share only the loops in elementwise_util.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/wrap.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
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
          if constexpr (std::is_signed_v<T>) {
            if (y == -1) return WrapSub<T>(0, x);
          }
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
    case DType::kI16: return ArithTyped<int16_t>(ctx, op, a, b);
    case DType::kI8: return ArithTyped<int8_t>(ctx, op, a, b);
    case DType::kU64: return ArithTyped<uint64_t>(ctx, op, a, b);
    case DType::kU32: return ArithTyped<uint32_t>(ctx, op, a, b);
    case DType::kU16: return ArithTyped<uint16_t>(ctx, op, a, b);
    case DType::kU8: return ArithTyped<uint8_t>(ctx, op, a, b);
    default:
      return UnsupportedDType(ctx, a.dtype(), "f32, f64 and 8- to 64-bit integers");
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

// A numeric tensor's values as f64 (for Pow's mixed-type forms).
absl::StatusOr<RtTensor> ToDouble(KernelContext& ctx, const RtTensor& t) {
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF64, t.dims()));
  double* po = out.mutable_data<double>();
  auto copy = [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.num_elements(); ++i) po[i] = static_cast<double>(t.data<T>()[i]);
  };
  switch (t.dtype()) {
    case DType::kF32: copy(float{}); break;
    case DType::kF64: copy(double{}); break;
    case DType::kI64: copy(int64_t{}); break;
    case DType::kI32: copy(int32_t{}); break;
    case DType::kI16: copy(int16_t{}); break;
    case DType::kI8: copy(int8_t{}); break;
    case DType::kU64: copy(uint64_t{}); break;
    case DType::kU32: copy(uint32_t{}); break;
    case DType::kU16: copy(uint16_t{}); break;
    case DType::kU8: copy(uint8_t{}); break;
    default: return UnsupportedDType(ctx, t.dtype(), "f32, f64 and 8- to 64-bit integers");
  }
  return out;
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
      // Other exponent types: compute on a float copy.
      ASSIGN_OR_RETURN(RtTensor wide, ToDouble(ctx, *b));
      ASSIGN_OR_RETURN(exponent, ctx.AllocateUninitialized(DType::kF32, b->dims()));
      for (int64_t i = 0; i < b->num_elements(); ++i) {
        exponent.mutable_data<float>()[i] = static_cast<float>(wide.data<double>()[i]);
      }
    }
    out = BinaryLoop<float, float>(ctx, *a, exponent, DType::kF32,
                                   [](float x, float y) {
                                     // Squares are common (LayerNorm
                                     // decompositions); keep them exact.
                                     if (y == 2.0f) return x * x;
                                     return pmath::Pow(x, y);
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
  } else if ((a->dtype() == DType::kI64 || a->dtype() == DType::kI32) &&
             (b->dtype() == DType::kF32 || b->dtype() == DType::kF64)) {
    // A float exponent on an integer base: pow in double, converted back to
    // the base's type as numpy's astype does (saturating here).
    ASSIGN_OR_RETURN(RtTensor x, ToDouble(ctx, *a));
    ASSIGN_OR_RETURN(RtTensor y, ToDouble(ctx, *b));
    if (a->dtype() == DType::kI64) {
      out = BinaryLoop<double, int64_t>(ctx, x, y, DType::kI64, [](double u, double v) {
        return ConvertNumber<int64_t>(pmath::Pow(u, v));
      });
    } else {
      out = BinaryLoop<double, int32_t>(ctx, x, y, DType::kI32, [](double u, double v) {
        return ConvertNumber<int32_t>(pmath::Pow(u, v));
      });
    }
  } else {
    return absl::UnimplementedError(
        "Pow does not support base " + a->DebugString() + " with exponent " +
        b->DebugString() + "; supported: f32 base with any numeric exponent, "
        "i64/i32 base with same-type or f32/f64 exponent");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

// BitShift on unsigned integers; shifting by the bit width or more gives 0
// (C++ leaves it undefined; numpy and ONNX Runtime give 0).
absl::Status BitShift(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(std::string direction, ctx.StringAttr("direction", ""));
  if (direction != "LEFT" && direction != "RIGHT") {
    return absl::InvalidArgumentError("direction '" + direction + "' is not LEFT or RIGHT");
  }
  if (a->dtype() != b->dtype()) {
    return absl::InvalidArgumentError("operand dtypes differ: " + a->DebugString() + " vs " +
                                      b->DebugString());
  }
  const bool left = direction == "LEFT";
  auto shift = [&](auto tag) -> absl::StatusOr<RtTensor> {
    using T = decltype(tag);
    return BinaryLoop<T, T>(ctx, *a, *b, a->dtype(), [left](T x, T y) -> T {
      if (y >= sizeof(T) * 8) return 0;
      // Promoted to at least unsigned int so u8/u16 shifts stay unsigned.
      using P = std::common_type_t<T, unsigned int>;
      return static_cast<T>(left ? static_cast<P>(x) << y : static_cast<P>(x) >> y);
    });
  };
  absl::StatusOr<RtTensor> out;
  switch (a->dtype()) {
    case DType::kU8: out = shift(uint8_t{}); break;
    case DType::kU16: out = shift(uint16_t{}); break;
    case DType::kU32: out = shift(uint32_t{}); break;
    case DType::kU64: out = shift(uint64_t{}); break;
    default: return UnsupportedDType(ctx, a->dtype(), "u8, u16, u32, u64");
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

}  // namespace slimpack::runtime::kernels
