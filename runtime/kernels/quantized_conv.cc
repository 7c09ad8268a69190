// ONNX integer convolutions: ConvInteger and QLinearConv, a direct loop
// with int32 accumulation. Rounding and requantisation follow the rules at
// the top of quantize_linear.cc; split from that file to keep each under
// the 500-line limit, with the shared helpers in quantize_util.h.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/kernels.h"
#include "runtime/kernels/quantize_util.h"
#include "runtime/kernels/window.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

using quantize_internal::ExpectQuantInput;
using quantize_internal::ExpectZeroPointType;
using quantize_internal::IntsOf;
using quantize_internal::QParams;
using quantize_internal::ReadQParams;
using quantize_internal::SaturateRound;
using quantize_internal::Store;

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

}  // namespace

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

}  // namespace slimpack::runtime::kernels
