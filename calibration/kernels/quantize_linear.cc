// ONNX quantization operators with exact integer semantics:
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul and QLinearConv.
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

#include "calibration/kernels/broadcast.h"
#include "calibration/kernels/kernels.h"
#include "calibration/kernels/window.h"
#include "support/status_macros.h"

namespace slimpack::calibration::kernels {
namespace {

using ir::DType;

bool IsQuantType(DType t) { return t == DType::kU8 || t == DType::kI8; }

int64_t QMin(DType t) { return t == DType::kU8 ? 0 : t == DType::kI8 ? -128 : INT32_MIN; }
int64_t QMax(DType t) { return t == DType::kU8 ? 255 : t == DType::kI8 ? 127 : INT32_MAX; }

// Integer elements of a u8/i8/i32 tensor as int32.
std::vector<int32_t> IntsOf(const RtTensor& t) {
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
int64_t SaturateRound(float v, int64_t zp, DType t) {
  if (std::isnan(v)) return std::clamp<int64_t>(zp, QMin(t), QMax(t));
  const double r = static_cast<double>(std::nearbyint(v)) + static_cast<double>(zp);
  return static_cast<int64_t>(
      std::clamp(r, static_cast<double>(QMin(t)), static_cast<double>(QMax(t))));
}

void Store(RtTensor& out, int64_t i, int64_t v) {
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
absl::StatusOr<QParams> ReadQParams(const KernelContext& ctx, int si, int zi,
                                    int64_t len, const std::string& what) {
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

// numpy matmul shape rules for integer operands: returns out dims and the
// per-batch matrix offsets of A and B.
struct MatMulShape {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> out_dims;
  std::vector<int64_t> a_off, b_off;  // in matrices
};

absl::StatusOr<MatMulShape> PlanMatMul(const RtTensor& a, const RtTensor& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    return absl::InvalidArgumentError("operands must have rank >= 1, got " +
                                      a.DebugString() + " and " + b.DebugString());
  }
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  MatMulShape p;
  p.m = ad[ad.size() - 2];
  p.k = ad.back();
  p.n = bd.back();
  if (bd[bd.size() - 2] != p.k) {
    return absl::InvalidArgumentError("inner dims differ: " + a.DebugString() +
                                      " x " + b.DebugString());
  }
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
  std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
  ASSIGN_OR_RETURN(auto batch, BroadcastDims({a_batch, b_batch}));
  p.out_dims = batch;
  if (!a_vec) p.out_dims.push_back(p.m);
  if (!b_vec) p.out_dims.push_back(p.n);
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  p.a_off.assign(count, 0);
  p.b_off.assign(count, 0);
  if (!batch.empty()) {
    ForEachBroadcast<2>(batch,
                        {BroadcastStrides(a_batch, batch), BroadcastStrides(b_batch, batch)},
                        [&](int64_t o, const std::array<int64_t, 2>& in) {
                          p.a_off[o] = in[0];
                          p.b_off[o] = in[1];
                        });
  }
  return p;
}

// acc[batch, m, n] = sum_k (a - azp[m]) * (b - bzp[n]) in int32 (wrapping).
// azp is per-tensor or per-row (M), bzp per-tensor or per-column (N).
std::vector<int32_t> IntegerMatMul(const std::vector<int32_t>& a,
                                   const std::vector<int32_t>& b,
                                   const MatMulShape& p, const QParams& azp,
                                   const QParams& bzp) {
  std::vector<int32_t> acc(p.a_off.size() * p.m * p.n);
  for (size_t bi = 0; bi < p.a_off.size(); ++bi) {
    const int32_t* pa = a.data() + p.a_off[bi] * p.m * p.k;
    const int32_t* pb = b.data() + p.b_off[bi] * p.k * p.n;
    int32_t* po = acc.data() + bi * p.m * p.n;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        uint32_t sum = 0;  // unsigned: int32 wrap without UB
        for (int64_t k = 0; k < p.k; ++k) {
          const int32_t x = pa[i * p.k + k] - azp.z(i);
          const int32_t w = pb[k * p.n + j] - bzp.z(j);
          sum += static_cast<uint32_t>(x * w);
        }
        po[i * p.n + j] = static_cast<int32_t>(sum);
      }
    }
  }
  return acc;
}

struct ConvPlan {
  int64_t batch = 0, channels = 0, m = 0, group = 1;
  std::vector<int64_t> in;
  WindowGeometry g;
  std::vector<int64_t> out_dims;
};

absl::StatusOr<ConvPlan> PlanConv(const KernelContext& ctx, const RtTensor& x,
                                  const RtTensor& w) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return absl::InvalidArgumentError("X " + x.DebugString() + " and W " + w.DebugString() +
                                      " must have the same rank >= 3");
  }
  ConvPlan p;
  p.batch = x.dim(0);
  p.channels = x.dim(1);
  p.m = w.dim(0);
  ASSIGN_OR_RETURN(p.group, ctx.IntAttr("group", 1));
  if (p.group <= 0 || p.channels % p.group != 0 || p.m % p.group != 0 ||
      w.dim(1) * p.group != p.channels) {
    return absl::InvalidArgumentError("X " + x.DebugString() + ", W " + w.DebugString() +
                                      " and group " + std::to_string(p.group) +
                                      " disagree: need C = W.dim(1) * group");
  }
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  ASSIGN_OR_RETURN(auto ks, ctx.IntsAttr("kernel_shape", kernel));
  if (ks != kernel) {
    return absl::InvalidArgumentError("kernel_shape " + DimsToString(ks) +
                                      " differs from W " + w.DebugString());
  }
  p.in.assign(x.dims().begin() + 2, x.dims().end());
  ASSIGN_OR_RETURN(p.g, ComputeWindow(ctx, p.in, kernel, false));
  p.out_dims = {p.batch, p.m};
  p.out_dims.insert(p.out_dims.end(), p.g.out.begin(), p.g.out.end());
  return p;
}

// Direct integer convolution: acc[n, m, o] = sum (x - xzp) * (w - wzp[m]),
// padded positions contributing zero (ONNX pads with the zero point).
std::vector<int32_t> IntegerConv(const std::vector<int32_t>& x,
                                 const std::vector<int32_t>& w, const ConvPlan& p,
                                 int32_t xzp, const QParams& wzp) {
  const size_t r = p.in.size();
  int64_t in_size = 1, out_size = 1, kprod = 1;
  for (size_t d = 0; d < r; ++d) {
    in_size *= p.in[d];
    out_size *= p.g.out[d];
    kprod *= p.g.kernel[d];
  }
  const int64_t cg = p.channels / p.group, mg = p.m / p.group;
  std::vector<int32_t> acc(p.batch * p.m * out_size);
  std::vector<int64_t> oo(r), kk(r);
  // Input offset of (output position, kernel position), or -1 in padding.
  std::vector<int64_t> offset(out_size * kprod);
  for (int64_t o = 0; o < out_size; ++o) {
    int64_t rem = o;
    for (size_t d = r; d-- > 0;) {
      oo[d] = rem % p.g.out[d];
      rem /= p.g.out[d];
    }
    for (int64_t k = 0; k < kprod; ++k) {
      int64_t krem = k;
      for (size_t d = r; d-- > 0;) {
        kk[d] = krem % p.g.kernel[d];
        krem /= p.g.kernel[d];
      }
      int64_t pos = 0;
      for (size_t d = 0; d < r && pos >= 0; ++d) {
        const int64_t q = oo[d] * p.g.strides[d] - p.g.pads_begin[d] + kk[d] * p.g.dilations[d];
        pos = (q < 0 || q >= p.in[d]) ? -1 : pos * p.in[d] + q;
      }
      offset[o * kprod + k] = pos;
    }
  }
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t mi = 0; mi < p.m; ++mi) {
      const int64_t grp = mi / mg;
      const int32_t wz = wzp.z(mi);
      int32_t* dst = acc.data() + (n * p.m + mi) * out_size;
      for (int64_t o = 0; o < out_size; ++o) {
        uint32_t sum = 0;
        for (int64_t c = 0; c < cg; ++c) {
          const int32_t* xc = x.data() + (n * p.channels + grp * cg + c) * in_size;
          const int32_t* wc = w.data() + (mi * cg + c) * kprod;
          const int64_t* off = offset.data() + o * kprod;
          for (int64_t k = 0; k < kprod; ++k) {
            if (off[k] < 0) continue;
            sum += static_cast<uint32_t>((xc[off[k]] - xzp) * (wc[k] - wz));
          }
        }
        dst[o] = static_cast<int32_t>(sum);
      }
    }
  }
  return acc;
}

absl::Status ExpectQuantInput(const KernelContext& ctx, const RtTensor& t) {
  if (IsQuantType(t.dtype())) return absl::OkStatus();
  return UnsupportedDType(ctx, t.dtype(), "u8, i8");
}

// Checks a zero point (if present) has the same dtype as its tensor.
absl::Status ExpectZeroPointType(const KernelContext& ctx, size_t zi, DType want) {
  const RtTensor* z = ctx.input(zi);
  if (z == nullptr || z->dtype() == want) return absl::OkStatus();
  return absl::InvalidArgumentError("zero point '" + ctx.node().inputs[zi] + "' is " +
                                    std::string(ir::DTypeName(z->dtype())) +
                                    " but its tensor is " +
                                    std::string(ir::DTypeName(want)));
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
  for (int64_t o = 0, i = 0; o < split.outer; ++o) {
    for (int64_t a = 0; a < split.len; ++a) {
      const float s = q.s(a);
      const int32_t z = q.z(a);
      for (int64_t in = 0; in < split.inner; ++in, ++i) {
        const float v = x->dtype() == DType::kF32
                            ? x->data<float>()[i]
                            : static_cast<float>(x->data<int32_t>()[i]);
        Store(y, i, SaturateRound(v / s, z, out_type));
      }
    }
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status DequantizeLinear(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (!IsQuantType(x->dtype()) && x->dtype() != DType::kI32) {
    return UnsupportedDType(ctx, x->dtype(), "u8, i8, i32");
  }
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  ASSIGN_OR_RETURN(AxisSplit split, SplitAt(ctx, *x, 1, 2));
  ASSIGN_OR_RETURN(QParams q, ReadQParams(ctx, 1, 2, split.len, "DequantizeLinear"));
  const std::vector<int32_t> v = IntsOf(*x);
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  float* py = y.mutable_data<float>();
  for (int64_t o = 0, i = 0; o < split.outer; ++o) {
    for (int64_t a = 0; a < split.len; ++a) {
      for (int64_t in = 0; in < split.inner; ++in, ++i) {
        // x - zp is exact in int64; the product is one f32 rounding.
        const int64_t d = static_cast<int64_t>(v[i]) - q.z(a);
        py[i] = static_cast<float>(d) * q.s(a);
      }
    }
  }
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

absl::Status MatMulInteger(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *a));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *b));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, a->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 3, b->dtype()));
  ASSIGN_OR_RETURN(MatMulShape p, PlanMatMul(*a, *b));
  ASSIGN_OR_RETURN(QParams azp, ReadQParams(ctx, -1, 2, p.m, "a_zero_point"));
  ASSIGN_OR_RETURN(QParams bzp, ReadQParams(ctx, -1, 3, p.n, "b_zero_point"));
  const std::vector<int32_t> acc = IntegerMatMul(IntsOf(*a), IntsOf(*b), p, azp, bzp);
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
  std::copy(acc.begin(), acc.end(), y.mutable_data<int32_t>());
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status QLinearMatMul(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(3));
  ASSIGN_OR_RETURN(const RtTensor* yz, ctx.RequiredInput(7));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *a));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *b));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *yz));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, a->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 5, b->dtype()));
  ASSIGN_OR_RETURN(MatMulShape p, PlanMatMul(*a, *b));
  // a and y: per tensor or per row; b: per tensor or per column.
  ASSIGN_OR_RETURN(QParams qa, ReadQParams(ctx, 1, 2, p.m, "a"));
  ASSIGN_OR_RETURN(QParams qb, ReadQParams(ctx, 4, 5, p.n, "b"));
  ASSIGN_OR_RETURN(QParams qy, ReadQParams(ctx, 6, 7, p.m, "y"));
  const std::vector<int32_t> acc = IntegerMatMul(IntsOf(*a), IntsOf(*b), p, qa, qb);
  const DType out_type = yz->dtype();
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(out_type, p.out_dims));
  const int64_t mn = p.m * p.n;
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t row = (i % mn) / p.n, col = i % p.n;
    const float mult = qa.s(row) * qb.s(col) / qy.s(row);
    Store(y, i, SaturateRound(static_cast<float>(acc[i]) * mult, qy.z(row), out_type));
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status ConvInteger(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *x));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *w));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 3, w->dtype()));
  ASSIGN_OR_RETURN(ConvPlan p, PlanConv(ctx, *x, *w));
  ASSIGN_OR_RETURN(QParams xzp, ReadQParams(ctx, -1, 2, 1, "x_zero_point"));
  ASSIGN_OR_RETURN(QParams wzp, ReadQParams(ctx, -1, 3, p.m, "w_zero_point"));
  const std::vector<int32_t> acc = IntegerConv(IntsOf(*x), IntsOf(*w), p, xzp.z(0), wzp);
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
  std::copy(acc.begin(), acc.end(), y.mutable_data<int32_t>());
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status QLinearConv(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(3));
  ASSIGN_OR_RETURN(const RtTensor* yz, ctx.RequiredInput(7));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *x));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *w));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *yz));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 5, w->dtype()));
  ASSIGN_OR_RETURN(ConvPlan p, PlanConv(ctx, *x, *w));
  ASSIGN_OR_RETURN(QParams qx, ReadQParams(ctx, 1, 2, 1, "x"));
  ASSIGN_OR_RETURN(QParams qw, ReadQParams(ctx, 4, 5, p.m, "w"));
  ASSIGN_OR_RETURN(QParams qy, ReadQParams(ctx, 6, 7, 1, "y"));
  std::vector<int32_t> bias(p.m, 0);
  if (const RtTensor* b = ctx.input(8)) {
    if (b->dtype() != DType::kI32) return UnsupportedDType(ctx, b->dtype(), "i32 bias");
    if (b->num_elements() != p.m) {
      return absl::InvalidArgumentError("bias " + b->DebugString() + " needs " +
                                        std::to_string(p.m) + " elements");
    }
    bias = b->ToVector<int32_t>();
  }
  const std::vector<int32_t> acc = IntegerConv(IntsOf(*x), IntsOf(*w), p, qx.z(0), qw);
  const DType out_type = yz->dtype();
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(out_type, p.out_dims));
  int64_t plane = 1;
  for (int64_t d : p.g.out) plane *= d;
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t mi = (i / plane) % p.m;
    const float mult = qx.s(0) * qw.s(mi) / qy.s(0);
    const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) +
                                             static_cast<uint32_t>(bias[mi]));
    Store(y, i, SaturateRound(static_cast<float>(sum) * mult, qy.z(0), out_type));
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace slimpack::calibration::kernels
