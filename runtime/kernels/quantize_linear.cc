// ONNX quantization operators with exact integer semantics:
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear here;
// MatMulInteger and QLinearMatMul in quantized_matmul.cc, ConvInteger and
// QLinearConv in quantized_conv.cc (same rules, shared helpers in
// quantize_util.h).
//
// Rounding (formats/shard/spec.md, "Integer execution (static W8A8)"):
//  - QuantizeLinear: q = saturate(rint(x / scale) + zp), the division in
//    f32, rint = round half to even (the default FP environment).
//  - Integer products accumulate in int32 (two's-complement wrap).
//  - QLinear* requantisation: the real multiplier M = (s_a * s_b) / s_y is
//    formed in f32 (same order as ONNX Runtime), then
//    y = saturate(rint(f32(acc) * M) + zp_y), the product in f32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/quantize_util.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

using quantize_internal::ExpectZeroPointType;
using quantize_internal::IsQuantType;
using quantize_internal::QParams;
using quantize_internal::ReadQParams;
using quantize_internal::SaturateRound;
using quantize_internal::Store;

// Outer/axis/inner sizes for per-axis parameters of `x` along `axis`.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

absl::StatusOr<AxisSplit> SplitAt(const KernelContext& ctx, const RtTensor& x,
                                  int scale_input, int zp_input) {
  AxisSplit s;
  // Per-tensor parameters never look at the axis (0-d inputs are allowed).
  const RtTensor* sc = ctx.input(scale_input);
  const RtTensor* zp = ctx.input(zp_input);
  const bool per_axis = (sc != nullptr && sc->num_elements() > 1) ||
                        (zp != nullptr && zp->num_elements() > 1);
  if (!per_axis) {
    s.inner = x.num_elements();
    return s;
  }
  ASSIGN_OR_RETURN(int64_t axis_attr, ctx.IntAttr("axis", 1));
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
  for (int64_t d = 0; d < axis; ++d) s.outer *= x.dim(d);
  s.len = x.dim(axis);
  for (size_t d = axis + 1; d < x.rank(); ++d) s.inner *= x.dim(d);
  return s;
}

}  // namespace

absl::Status QuantizeLinear(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32 && x->dtype() != DType::kI32) {
    return UnsupportedDType(ctx, x->dtype(), "f32, i32");
  }
  const RtTensor* zp = ctx.input(2);
  const DType out_type = zp == nullptr ? DType::kU8 : zp->dtype();
  if (!IsQuantType(out_type)) return UnsupportedDType(ctx, out_type, "u8, i8 outputs");
  ASSIGN_OR_RETURN(AxisSplit split, SplitAt(ctx, *x, 1, 2));
  ASSIGN_OR_RETURN(QParams q, ReadQParams(ctx, 1, 2, split.len, "QuantizeLinear"));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(out_type, x->dims()));
  // Each run of `inner` values shares a scale: f32 input divided, rounded
  // and saturated eight lanes at a time where AVX2 is (QuantizeAvx2), else
  // divided (vectorised), then rounded and saturated four at a time.
  std::vector<float> scaled(split.inner);
  uint8_t* py = y.mutable_data<uint8_t>();
  for (int64_t o = 0, i = 0; o < split.outer; ++o) {
    for (int64_t a = 0; a < split.len; ++a, i += split.inner) {
      const float s = q.s(a);
      if (x->dtype() == DType::kF32) {
        const float* px = x->data<float>() + i;
        if (int8dot::QuantizeAvx2(px, split.inner, s,
                                  static_cast<int32_t>(quantize_internal::QMin(out_type)),
                                  static_cast<int32_t>(quantize_internal::QMax(out_type)),
                                  q.z(a), py + i)) {
          continue;
        }
        for (int64_t in = 0; in < split.inner; ++in) scaled[in] = px[in] / s;
      } else {
        const int32_t* px = x->data<int32_t>() + i;
        for (int64_t in = 0; in < split.inner; ++in) {
          scaled[in] = static_cast<float>(px[in]) / s;
        }
      }
      quantize_internal::SaturateRoundBytes(scaled.data(), split.inner, q.z(a), out_type, py + i);
    }
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

namespace {

// y = (x - zp) * scale: the difference is exact (in int64 for i32; for
// 8-bit types it is at most 255, exact in float, which lets the loops
// vectorise), the product is one f32 rounding.
void DequantizeInto(const RtTensor& x, const AxisSplit& split, const QParams& q, float* py) {
  for (int64_t o = 0, i = 0; o < split.outer; ++o) {
    for (int64_t a = 0; a < split.len; ++a, i += split.inner) {
      const float s = q.s(a);
      const auto zf = static_cast<float>(q.z(a));
      float* dst = py + i;
      if (x.dtype() == DType::kU8) {
        const uint8_t* src = x.data<uint8_t>() + i;
        for (int64_t in = 0; in < split.inner; ++in) {
          dst[in] = (static_cast<float>(src[in]) - zf) * s;
        }
      } else if (x.dtype() == DType::kI8) {
        const int8_t* src = x.data<int8_t>() + i;
        for (int64_t in = 0; in < split.inner; ++in) {
          dst[in] = (static_cast<float>(src[in]) - zf) * s;
        }
      } else {
        const int32_t* src = x.data<int32_t>() + i;
        for (int64_t in = 0; in < split.inner; ++in) {
          dst[in] = static_cast<float>(static_cast<int64_t>(src[in]) - q.z(a)) * s;
        }
      }
    }
  }
}

// A dequantized constant (a QDQ graph's weight), kept in the node's cache.
struct DequantizedConstant {
  std::vector<float> values;
  int64_t bytes() const { return static_cast<int64_t>(values.size() * sizeof(float)); }
};

}  // namespace

absl::Status DequantizeLinear(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (!IsQuantType(x->dtype()) && x->dtype() != DType::kI32) {
    return UnsupportedDType(ctx, x->dtype(), "u8, i8, i32");
  }
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  ASSIGN_OR_RETURN(AxisSplit split, SplitAt(ctx, *x, 1, 2));
  ASSIGN_OR_RETURN(QParams q, ReadQParams(ctx, 1, 2, split.len, "DequantizeLinear"));
  // A QDQ graph dequantizes every weight on every run: when all inputs are
  // initializers no graph input overrides, the floats are computed once
  // and the output is a read-only view of them (the same values).
  if (ctx.node_cache() != nullptr && ctx.input_is_constant(0) &&
      quantize_internal::ConstantOrAbsent(ctx, 1) && quantize_internal::ConstantOrAbsent(ctx, 2)) {
    ASSIGN_OR_RETURN(std::shared_ptr<const DequantizedConstant> c,
                     ctx.node_cache()->GetOrBuild<DequantizedConstant>(
                         0, [&]() -> absl::StatusOr<std::shared_ptr<const DequantizedConstant>> {
                           auto built = std::make_shared<DequantizedConstant>();
                           built->values.resize(static_cast<size_t>(x->num_elements()));
                           DequantizeInto(*x, split, q, built->values.data());
                           return std::shared_ptr<const DequantizedConstant>(std::move(built));
                         }));
    const auto* bytes = reinterpret_cast<const uint8_t*>(c->values.data());
    ctx.SetOutput(0, RtTensor::Borrow(DType::kF32, x->dims(), std::move(c), bytes));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  DequantizeInto(*x, split, q, y.mutable_data<float>());
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status DynamicQuantizeLinear(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  // ONNX: the range always includes 0; scale = (max - min) / 255 and
  // zp = saturate(rint(-min / scale)), all in f32.
  float lo = 0, hi = 0;
  const float* px = x->data<float>();
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const int64_t zp = scale == 0 ? 0 : SaturateRound((0.0f - lo) / scale, 0, DType::kU8);
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kU8, x->dims()));
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    Store(y, i, scale == 0 ? zp : SaturateRound(px[i] / scale, zp, DType::kU8));
  }
  ctx.SetOutput(0, std::move(y));
  if (ctx.wants_output(1)) ctx.SetOutput(1, RtTensor::FromVector<float>({}, {scale}));
  if (ctx.wants_output(2)) {
    ctx.SetOutput(2, RtTensor::FromVector<uint8_t>({}, {static_cast<uint8_t>(zp)}));
  }
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
