// Unary element-wise kernels: Neg/Abs, the basic f32 math functions,
// Erf, the common activations (Sigmoid, Relu, Gelu, ...) and Clip. Split
// from elementwise.cc (the broadcasting binary ops) to keep each under the
// 500-line limit; unary_math.cc holds the rarer unary functions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/wrap.h"
#include "support/cpu_features.h"
#include "support/portable_math.h"
#include "support/status_macros.h"


namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

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


// f32 -> f32 element by element with the count hoisted and f inlined, so
// the loop vectorises when f has no calls or branches the vectoriser cannot
// if-convert.
template <typename F>
absl::Status UnaryF32Contiguous(KernelContext& ctx, F f) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitializedOrReuse(0, DType::kF32, x->dims()));
  const int64_t n = x->num_elements();
  if (out.raw() == x->raw()) {
    float* p = out.mutable_data<float>();  // in place
    for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
  } else {
    const float* __restrict px = x->data<float>();
    float* __restrict po = out.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
  }
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

// An f32 -> f32 op whose whole array goes through `array(px, po, n)` (a
// fresh output, so po never aliases px).
template <typename ArrayFn>
absl::Status UnaryF32Array(KernelContext& ctx, ArrayFn array) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  array(x->data<float>(), out.mutable_data<float>(), x->num_elements());
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ErfF32(KernelContext& ctx) { return UnaryF32Array(ctx, ErfArray); }

// Gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) with the erf above, in three
// vectorisable passes over the output.
absl::Status GeluErfF32(KernelContext& ctx) {
  return UnaryF32Array(ctx, [](const float* px, float* po, int64_t n) {
    const float k = static_cast<float>(M_SQRT1_2);
    for (int64_t i = 0; i < n; ++i) po[i] = px[i] * k;
    ErfArray(po, po, n);
    for (int64_t i = 0; i < n; ++i) po[i] = 0.5f * px[i] * (1.0f + po[i]);
  });
}

// 1 / (1 + exp(-x)) for x >= 0 and e / (1 + e), e = exp(x), below: split by
// sign so exp never overflows. The exps of a block go four at a time
// (pmath::ExpArray, the scalar pmath::Exp's bits).
void SigmoidArray(const float* px, float* po, int64_t n) {
  constexpr int64_t kBlock = 256;
  float e[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    for (int64_t j = 0; j < m; ++j) {
      const float v = px[i0 + j];
      e[j] = v >= 0 ? -v : v;  // NaN stays NaN
    }
    pmath::ExpArray(e, e, m);
    // 1 / (1 + e) for x >= 0, e / (1 + e) otherwise (NaN: e is NaN), as one
    // division of a selected numerator: the same bits, and a loop the
    // vectoriser takes (it will not speculate one of two divisions).
    for (int64_t j = 0; j < m; ++j) {
      const float num = px[i0 + j] >= 0 ? 1.0f : e[j];
      po[i0 + j] = num / (1.0f + e[j]);
    }
  }
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

absl::Status Neg(KernelContext& ctx) { return SignedUnary(ctx, false); }
absl::Status Abs(KernelContext& ctx) { return SignedUnary(ctx, true); }
absl::Status Sqrt(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return std::sqrt(x); });
}
absl::Status Exp(KernelContext& ctx) { return UnaryF32Array(ctx, pmath::ExpArray); }
absl::Status Log(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Log(x); });
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
  return UnaryFloat(ctx, [](float x) { return pmath::Sin(x); });
}
absl::Status Cos(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Cos(x); });
}
absl::Status Erf(KernelContext& ctx) {
  return ErfF32(ctx);
}
absl::Status Tanh(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) { return pmath::Tanh(x); });
}
absl::Status Sigmoid(KernelContext& ctx) { return UnaryF32Array(ctx, SigmoidArray); }
absl::Status Relu(KernelContext& ctx) {
  return UnaryF32Contiguous(
      ctx, [](float x) { return x > 0.0f ? x : (x == x ? 0.0f : x); });
}
absl::Status Softplus(KernelContext& ctx) {
  return UnaryFloat(ctx, [](float x) {
    return x > 0.0f ? x + pmath::Log1p(pmath::Exp(-x)) : pmath::Log1p(pmath::Exp(x));
  });
}

absl::Status LeakyRelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 0.01f));
  return UnaryFloat(ctx, [alpha](float x) { return x >= 0.0f ? x : alpha * x; });
}

absl::Status Elu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.0f));
  return UnaryFloat(ctx, [alpha](float x) {
    return x >= 0.0f ? x : alpha * pmath::Expm1(x);
  });
}

namespace {

// min(1, max(0, t)), NaN giving 0 (as std::max(0.0f, NaN) does).
float Clamp01(float t) {
  t = t > 0.0f ? t : 0.0f;
  return t < 1.0f ? t : 1.0f;
}

// HardSigmoid / HardSwish (below) W lanes at a time: each lane does the
// scalar's division, multiply and add (IEEE in every width) and Clamp01's
// two selects, so every width gives the scalar bits. Returns the elements
// done (a multiple of W).
template <int W>
__attribute__((always_inline)) inline int64_t HardSigmoidLanes(const float* px, float* py,
                                                               int64_t n, bool swish,
                                                               float alpha, float beta) {
  typedef float V __attribute__((vector_size(4 * W), aligned(4)));
  const V zero = {}, one = zero + 1.0f;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const V v = *reinterpret_cast<const V*>(px + i);
    V t = swish ? v / 6.0f + 0.5f : alpha * v + beta;
    t = t > zero ? t : zero;
    t = t < one ? t : one;
    *reinterpret_cast<V*>(py + i) = swish ? v * t : t;
  }
  return i;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) int64_t HardSigmoid16(const float* px, float* py, int64_t n,
                                                         bool swish, float alpha, float beta) {
  return HardSigmoidLanes<16>(px, py, n, swish, alpha, beta);
}
__attribute__((target("avx2"))) int64_t HardSigmoid8(const float* px, float* py, int64_t n,
                                                     bool swish, float alpha, float beta) {
  return HardSigmoidLanes<8>(px, py, n, swish, alpha, beta);
}
#endif

// The widest lanes this CPU has, then four: HardSwish is bound by the
// division's throughput, and wider vectors divide more lanes per
// instruction.
int64_t HardSigmoidVector(const float* px, float* py, int64_t n, bool swish, float alpha,
                          float beta) {
  int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  static const int width = support::CpuAllows(support::CpuFeature::kAvx512f) ? 16
                           : support::CpuAllows(support::CpuFeature::kAvx2) ? 8
                                                            : 0;
  if (width == 16) i = HardSigmoid16(px, py, n, swish, alpha, beta);
  if (width == 8) i = HardSigmoid8(px, py, n, swish, alpha, beta);
#endif
  return i + HardSigmoidLanes<4>(px + i, py + i, n - i, swish, alpha, beta);
}

void HardSigmoidArray(const float* px, float* py, int64_t n, bool swish, float alpha,
                      float beta) {
  int64_t i = HardSigmoidVector(px, py, n, swish, alpha, beta);
  for (; i < n; ++i) {
    py[i] = swish ? px[i] * Clamp01(px[i] / 6.0f + 0.5f) : Clamp01(alpha * px[i] + beta);
  }
}

// HardSigmoid, y = Clamp01(alpha * x + beta), or with `swish` HardSwish,
// y = x * Clamp01(x / 6 + 1/2). GCC leaves two chained selects as a
// compare-and-branch per element (it will not if-convert trapping float
// compares), which made HardSwish a sixth of a MobileNet-style run, mostly
// mispredicted branches; HardSigmoidLanes writes the same selects on
// vectors (compares and blends, no branch) for all but the last few.
absl::Status HardSigmoidF32(KernelContext& ctx, bool swish, float alpha, float beta) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  // px and py may be one buffer: each element is read before it is written.
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitializedOrReuse(0, DType::kF32, x->dims()));
  const float* px = x->data<float>();
  float* py = out.mutable_data<float>();
  const int64_t n = x->num_elements();
  HardSigmoidArray(px, py, n, swish, alpha, beta);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace

void HardSwishArray(const float* x, float* y, int64_t n) {
  HardSigmoidArray(x, y, n, true, 0.0f, 0.0f);
}

absl::Status HardSigmoid(KernelContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 0.2f));
  ASSIGN_OR_RETURN(float beta, ctx.FloatAttr("beta", 0.5f));
  return HardSigmoidF32(ctx, false, alpha, beta);
}

absl::Status HardSwish(KernelContext& ctx) { return HardSigmoidF32(ctx, true, 0.0f, 0.0f); }

absl::Status Gelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string approx, ctx.StringAttr("approximate", "none"));
  if (approx == "none") {
    return GeluErfF32(ctx);
  }
  if (approx == "tanh") {
    return UnaryFloat(ctx, [](float x) {
      const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
      return 0.5f * x * (1.0f + pmath::Tanh(k * (x + 0.044715f * x * x * x)));
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

}  // namespace slimpack::runtime::kernels
