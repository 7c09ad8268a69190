// MaxPool (with optional Indices), AveragePool and the global pools, N-d.
#include <algorithm>
#include <cmath>
#include <limits>

#include "calibration/kernels/kernels.h"
#include "calibration/kernels/window.h"
#include "support/status_macros.h"

namespace slimpack::calibration::kernels {
namespace {

using ir::DType;

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

void Unravel(int64_t i, const std::vector<int64_t>& dims, std::vector<int64_t>& idx) {
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

enum class PoolKind { kMax, kAverage };

absl::Status Pool(KernelContext& ctx, PoolKind kind) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  if (x->rank() < 3) {
    return absl::InvalidArgumentError("input must be [N, C, spatial...], got " +
                                      x->DebugString());
  }
  const size_t r = x->rank() - 2;
  const std::vector<int64_t> in(x->dims().begin() + 2, x->dims().end());
  ASSIGN_OR_RETURN(auto kernel, ctx.IntsAttr("kernel_shape"));
  if (kernel.size() != r) {
    return absl::InvalidArgumentError("kernel_shape needs " + std::to_string(r) +
                                      " values, got " + std::to_string(kernel.size()));
  }
  ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.IntAttr("ceil_mode", 0));
  ASSIGN_OR_RETURN(int64_t count_include_pad, ctx.IntAttr("count_include_pad", 0));
  ASSIGN_OR_RETURN(int64_t storage_order, ctx.IntAttr("storage_order", 0));
  ASSIGN_OR_RETURN(WindowGeometry g, ComputeWindow(ctx, in, kernel, ceil_mode != 0));
  const bool want_indices = kind == PoolKind::kMax && ctx.wants_output(1);
  if (want_indices && storage_order != 0) {
    return absl::UnimplementedError(
        "MaxPool Indices with storage_order=1 is not supported; supported: 0");
  }
  std::vector<int64_t> out_dims = {x->dim(0), x->dim(1)};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, out_dims));
  RtTensor indices;
  if (want_indices) {
    ASSIGN_OR_RETURN(indices, ctx.AllocateUninitialized(DType::kI64, out_dims));
  }
  const int64_t planes = x->dim(0) * x->dim(1);
  const int64_t in_size = Product(in), out_size = Product(g.out);
  const int64_t kprod = Product(kernel);
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  ParallelFor(ctx.pool(), planes, [&](int64_t plane) {
    std::vector<int64_t> oo(r), kk(r);
    const float* xp = px + plane * in_size;
    for (int64_t o = 0; o < out_size; ++o) {
      Unravel(o, g.out, oo);
      float best = -std::numeric_limits<float>::infinity();
      int64_t best_at = -1;
      double sum = 0;
      int64_t valid = 0;
      for (int64_t k = 0; k < kprod; ++k) {
        Unravel(k, kernel, kk);
        int64_t pos = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t p = oo[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
          if (p < 0 || p >= in[d]) {
            inside = false;
            break;
          }
          pos = pos * in[d] + p;
        }
        if (!inside) continue;
        const float v = xp[pos];
        ++valid;
        sum += v;
        if (v > best || best_at < 0) {
          best = v;
          best_at = pos;
        }
      }
      if (kind == PoolKind::kMax) {
        py[plane * out_size + o] = best;
        if (want_indices) {
          indices.mutable_data<int64_t>()[plane * out_size + o] =
              plane * in_size + best_at;
        }
        continue;
      }
      int64_t count = valid;
      if (count_include_pad) {
        // Positions inside the (begin and end) padding count; positions
        // past it, which ceil_mode may add, do not.
        count = 1;
        for (size_t d = 0; d < r; ++d) {
          const int64_t start = oo[d] * g.strides[d] - g.pads_begin[d];
          const int64_t end = std::min(start + (kernel[d] - 1) * g.dilations[d] + 1,
                                       in[d] + g.pads_end[d]);
          count *= (end - start + g.dilations[d] - 1) / g.dilations[d];
        }
      }
      py[plane * out_size + o] =
          count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
    }
  });
  ctx.SetOutput(0, std::move(y));
  if (want_indices) ctx.SetOutput(1, std::move(indices));
  return absl::OkStatus();
}

absl::Status GlobalPool(KernelContext& ctx, PoolKind kind) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  if (x->rank() < 2) {
    return absl::InvalidArgumentError("input must be [N, C, ...], got " +
                                      x->DebugString());
  }
  std::vector<int64_t> out_dims(x->rank(), 1);
  out_dims[0] = x->dim(0);
  out_dims[1] = x->dim(1);
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, out_dims));
  const int64_t planes = x->dim(0) * x->dim(1);
  const int64_t size = planes == 0 ? 0 : x->num_elements() / planes;
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = px + p * size;
    if (kind == PoolKind::kMax) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < size; ++i) best = std::max(best, xp[i]);
      py[p] = best;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += xp[i];
      py[p] = size > 0 ? static_cast<float>(sum / static_cast<double>(size)) : NAN;
    }
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace

absl::Status MaxPool(KernelContext& ctx) { return Pool(ctx, PoolKind::kMax); }
absl::Status AveragePool(KernelContext& ctx) { return Pool(ctx, PoolKind::kAverage); }
absl::Status GlobalAveragePool(KernelContext& ctx) {
  return GlobalPool(ctx, PoolKind::kAverage);
}
absl::Status GlobalMaxPool(KernelContext& ctx) { return GlobalPool(ctx, PoolKind::kMax); }

}  // namespace slimpack::calibration::kernels
