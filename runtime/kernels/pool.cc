// MaxPool (with optional Indices), AveragePool and the global pools, N-d.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/kernels.h"
#include "runtime/kernels/window.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
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

// Kernel taps of one output position along one spatial axis: taps [lo, hi)
// land inside the input, starting at input position `start` (may be < 0).
// `incl` is the count_include_pad tap count (inside the input or its
// begin/end padding; not past it, which ceil_mode may add).
struct AxisTaps {
  int64_t start, lo, hi, incl;
};

std::vector<AxisTaps> AxisWindows(const WindowGeometry& g, size_t d, int64_t in,
                                  int64_t k) {
  const int64_t s = g.strides[d], dil = g.dilations[d];
  // ComputeWindow checked that span and in + pads fit in int64; ceilings
  // are (n - 1) / dil + 1 (n > 0) because n + dil - 1 may not fit.
  const int64_t span = (k - 1) * dil + 1, limit = in + g.pads_end[d];
  std::vector<AxisTaps> taps(static_cast<size_t>(g.out[d]));
  for (int64_t o = 0; o < g.out[d]; ++o) {
    AxisTaps& t = taps[static_cast<size_t>(o)];
    t.start = o * s - g.pads_begin[d];
    t.lo = t.start >= 0 ? 0 : (-t.start - 1) / dil + 1;
    t.hi = t.start >= in ? 0 : std::min(k, (in - t.start - 1) / dil + 1);
    if (t.hi < t.lo) t.hi = t.lo;
    // min(start + span, in + pads_end) without forming start + span when
    // it would pass the limit.
    const int64_t end = t.start > limit - span ? limit : t.start + span;
    t.incl = end > t.start ? (end - t.start - 1) / dil + 1 : 0;
  }
  return taps;
}

// The 2-D case of Pool below with the per-axis tap ranges hoisted out of
// the output loops: the same taps in the same (row-major kernel) order, so
// results are identical to the N-d loop, including which of several equal
// maxima (the first) and NaNs (kept only when first) win.
void Pool2d(PoolKind kind, bool count_include_pad, const WindowGeometry& g,
            int64_t h, int64_t w, int64_t plane, const float* xp, float* yp,
            int64_t* ip, const std::vector<AxisTaps>& th,
            const std::vector<AxisTaps>& tw) {
  const int64_t dh = g.dilations[0], dw = g.dilations[1];
  const int64_t oh_n = g.out[0], ow_n = g.out[1];
  const int64_t in_size = h * w;
#if defined(__SSE2__)
  // Max values without Indices, four output columns at a time where every
  // kernel column of all four lands inside the input: maxps(v, best) is
  // `v > best ? v : best` lane by lane, the scalar loop's rule, so the
  // same value wins (the first of equal maxima, NaN only when first). The
  // scalar loop took 9 % of a ResNet-18 run for its one pooling layer.
  const int64_t kw_n = g.kernel[1], sw = g.strides[1];
  int64_t ow_begin = ow_n, ow_end = 0;  // the columns with every tap inside
  for (int64_t ow = 0; ow < ow_n; ++ow) {
    const AxisTaps& b = tw[static_cast<size_t>(ow)];
    if (b.lo == 0 && b.hi == kw_n) {
      ow_begin = std::min(ow_begin, ow);
      ow_end = ow + 1;
    }
  }
  const bool vector_max = kind == PoolKind::kMax && ip == nullptr && (sw == 1 || sw == 2);
  // Four columns' values of one tap: stride 1 one load, stride 2 two loads
  // (8 floats) with the even lanes kept.
  const auto load4 = [&](int64_t at) {
    if (sw == 1) return _mm_loadu_ps(xp + at);
    return _mm_shuffle_ps(_mm_loadu_ps(xp + at), _mm_loadu_ps(xp + at + 4),
                          _MM_SHUFFLE(2, 0, 2, 0));
  };
#endif
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const AxisTaps& a = th[static_cast<size_t>(oh)];
    float* yrow = yp + oh * ow_n;
    for (int64_t ow = 0; ow < ow_n; ++ow) {
#if defined(__SSE2__)
      // The last float a vector reads: column ow + 3's last tap, plus the
      // odd lane a stride-2 load also reads; it must stay in the plane.
      if (vector_max && a.hi > a.lo && ow >= ow_begin && ow + 4 <= ow_end &&
          (a.start + (a.hi - 1) * dh) * w + tw[static_cast<size_t>(ow)].start +
                  (kw_n - 1) * dw + 4 * sw - 1 < in_size) {
        const int64_t col = tw[static_cast<size_t>(ow)].start;
        __m128 best = load4((a.start + a.lo * dh) * w + col);
        for (int64_t kh = a.lo; kh < a.hi; ++kh) {
          const int64_t row = (a.start + kh * dh) * w + col;
          for (int64_t kw = kh == a.lo ? 1 : 0; kw < kw_n; ++kw) {
            best = _mm_max_ps(load4(row + kw * dw), best);
          }
        }
        _mm_storeu_ps(yrow + ow, best);
        ow += 3;
        continue;
      }
#endif
      const AxisTaps& b = tw[static_cast<size_t>(ow)];
      const int64_t valid = (a.hi - a.lo) * (b.hi - b.lo);
      if (kind == PoolKind::kMax) {
        if (valid == 0) {
          yrow[ow] = -std::numeric_limits<float>::infinity();
          if (ip) ip[oh * ow_n + ow] = plane * in_size - 1;
          continue;
        }
        int64_t best_at = (a.start + a.lo * dh) * w + b.start + b.lo * dw;
        float best = xp[best_at];
        for (int64_t kh = a.lo; kh < a.hi; ++kh) {
          const int64_t row = (a.start + kh * dh) * w + b.start;
          for (int64_t kw = b.lo; kw < b.hi; ++kw) {
            const float v = xp[row + kw * dw];
            if (v > best) {
              best = v;
              best_at = row + kw * dw;
            }
          }
        }
        yrow[ow] = best;
        if (ip) ip[oh * ow_n + ow] = plane * in_size + best_at;
        continue;
      }
      double sum = 0;
      for (int64_t kh = a.lo; kh < a.hi; ++kh) {
        const float* row = xp + (a.start + kh * dh) * w + b.start;
        for (int64_t kw = b.lo; kw < b.hi; ++kw) sum += row[kw * dw];
      }
      const int64_t count = count_include_pad ? a.incl * b.incl : valid;
      yrow[ow] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
    }
  }
}

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
  // kernel_shape is an attribute only (Conv's comes from W's real dims), so
  // its product is checked; ComputeWindow has checked each value is >= 1.
  int64_t kprod = 1;
  for (size_t d = 0; d < r; ++d) {
    std::optional<int64_t> p = CheckedMulInt64(kprod, kernel[d]);
    if (!p) {
      return absl::InvalidArgumentError("kernel_shape " + DimsToString(kernel) +
                                        " has more taps than int64 can count");
    }
    kprod = *p;
  }
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  if (r == 2) {
    const std::vector<AxisTaps> th = AxisWindows(g, 0, in[0], kernel[0]);
    const std::vector<AxisTaps> tw = AxisWindows(g, 1, in[1], kernel[1]);
    int64_t* pi = want_indices ? indices.mutable_data<int64_t>() : nullptr;
    ParallelFor(ctx.pool(), planes, [&](int64_t plane) {
      Pool2d(kind, count_include_pad != 0, g, in[0], in[1], plane,
             px + plane * in_size, py + plane * out_size,
             pi ? pi + plane * out_size : nullptr, th, tw);
    });
    ctx.SetOutput(0, std::move(y));
    if (want_indices) ctx.SetOutput(1, std::move(indices));
    return absl::OkStatus();
  }
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
          // As in AxisWindows: no intermediate can overflow.
          const int64_t dil = g.dilations[d];
          const int64_t start = oo[d] * g.strides[d] - g.pads_begin[d];
          const int64_t span = (kernel[d] - 1) * dil + 1, limit = in[d] + g.pads_end[d];
          const int64_t end = start > limit - span ? limit : start + span;
          count *= end > start ? (end - start - 1) / dil + 1 : 0;
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

}  // namespace slimpack::runtime::kernels
