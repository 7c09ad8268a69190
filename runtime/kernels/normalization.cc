// BatchNormalization (inference), InstanceNormalization,
// LayerNormalization, Softmax, LogSoftmax and Hardmax.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

absl::Status CheckPerChannel(const RtTensor& t, int64_t channels,
                             const std::string& what) {
  if (t.dtype() == DType::kF32 && t.num_elements() == channels) return absl::OkStatus();
  return absl::InvalidArgumentError(what + " must be f32 with " +
                                    std::to_string(channels) + " elements, got " +
                                    t.DebugString());
}

// exp of t[0..m) (m <= 256) into y: Cephes' single-precision expf (range
// reduction by ln 2 in two parts, degree-5 polynomial, 2^n through the
// exponent bits), relative error under 1e-7, written as one simple loop per
// step so each vectorises. Below -87 (where expf is subnormal or 0) gives
// 0; NaN stays NaN. For softmax arguments, which are <= 0.
void ExpBlock(const float* t, float* y, int64_t m) {
  float n_[256];
  int32_t e_[256];
  for (int64_t j = 0; j < m; ++j) {
    const float x = t[j] < -87.0f ? -87.0f : t[j];
    y[j] = x > 88.0f ? 88.0f : x;
  }
  // Round to nearest by the 1.5 * 2^23 trick (|x * log2 e| < 2^22 here).
  for (int64_t j = 0; j < m; ++j) {
    n_[j] = (y[j] * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  }
  for (int64_t j = 0; j < m; ++j) {
    const float x = y[j], n = n_[j];
    const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    y[j] = p * r * r + r + 1.0f;
  }
  for (int64_t j = 0; j < m; ++j) e_[j] = (static_cast<int32_t>(n_[j]) + 127) * (1 << 23);
  for (int64_t j = 0; j < m; ++j) {
    float scale;
    std::memcpy(&scale, &e_[j], sizeof(float));
    y[j] *= scale;
  }
  for (int64_t j = 0; j < m; ++j) y[j] = t[j] < -87.0f ? 0.0f : y[j];
}

// The largest non-NaN value of x[0, n) (-inf if none), as a loop of
// std::max(mx, x[i]). Lanes may meet equal zeros in another order and keep
// -0 where the loop keeps +0 or back; softmax subtracts it, and x - (+0)
// and x - (-0) differ only for x = ±0, whose exp is 1 either way.
float RowMax(const float* x, int64_t n) {
  int64_t i = 0;
  float mx = -INFINITY;
#if defined(__SSE2__)
  if (n >= 16) {
    // maxps(a, b) is a > b ? a : b, so a NaN a keeps b (never NaN here).
    __m128 m0 = _mm_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; i + 16 <= n; i += 16) {
      m0 = _mm_max_ps(_mm_loadu_ps(x + i), m0);
      m1 = _mm_max_ps(_mm_loadu_ps(x + i + 4), m1);
      m2 = _mm_max_ps(_mm_loadu_ps(x + i + 8), m2);
      m3 = _mm_max_ps(_mm_loadu_ps(x + i + 12), m3);
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
    for (float v : lanes) mx = std::max(mx, v);
  }
#endif
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

// Softmax of `rows` (<= 4) contiguous rows of `axis_size`: each exp computed
// once by the vectorised ExpBlock and kept in y, the row's sum taken in
// order in double, then scaled. The rows' sums run as independent chains
// side by side (one row's sum waits on every add before it, and attention
// rows are short); each row's bits are those of doing it alone.
void SoftmaxRows(const float* x, float* y, int64_t axis_size, int64_t rows) {
  constexpr int kRows = 4;
  double sum[kRows] = {0, 0, 0, 0};
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * axis_size;
    float* yr = y + r * axis_size;
    const float mx = RowMax(xr, axis_size);
    float t[256];
    for (int64_t i0 = 0; i0 < axis_size; i0 += 256) {
      const int64_t m = std::min<int64_t>(256, axis_size - i0);
      for (int64_t j = 0; j < m; ++j) t[j] = xr[i0 + j] - mx;
      // ExpBlock gives exactly 0 below -87: a trailing run of such values
      // (a causal mask's future positions, half of a decoder's scores) is
      // zero-filled instead of computed.
      int64_t live = m;
      while (live > 0 && t[live - 1] < -87.0f) --live;
      ExpBlock(t, yr + i0, live);
      std::fill(yr + i0 + live, yr + i0 + m, 0.0f);
    }
  }
  if (rows == kRows) {
    const float *y0 = y, *y1 = y + axis_size, *y2 = y1 + axis_size, *y3 = y2 + axis_size;
    for (int64_t i = 0; i < axis_size; ++i) {
      sum[0] += y0[i];
      sum[1] += y1[i];
      sum[2] += y2[i];
      sum[3] += y3[i];
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < axis_size; ++i) sum[r] += y[r * axis_size + i];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double inv = 1.0 / sum[r];
    float* yr = y + r * axis_size;
    for (int64_t i = 0; i < axis_size; ++i) yr[i] = static_cast<float>(yr[i] * inv);
  }
}

// Softmax over `axis_size` elements spaced `inner` apart.
void SoftmaxLine(const float* x, float* y, int64_t axis_size, int64_t inner,
                 bool log) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < axis_size; ++i) mx = std::max(mx, x[i * inner]);
  double sum = 0;
  if (log) {
    for (int64_t i = 0; i < axis_size; ++i) sum += pmath::Exp(x[i * inner] - mx);
    const float lse = static_cast<float>(pmath::Log(sum));
    for (int64_t i = 0; i < axis_size; ++i) y[i * inner] = x[i * inner] - mx - lse;
    return;
  }
  if (inner == 1) return SoftmaxRows(x, y, axis_size, 1);
  for (int64_t i = 0; i < axis_size; ++i) {
    const float e = pmath::Exp(x[i * inner] - mx);
    y[i * inner] = e;
    sum += e;
  }
  const double inv = 1.0 / sum;
  for (int64_t i = 0; i < axis_size; ++i) {
    y[i * inner] = static_cast<float>(y[i * inner] * inv);
  }
}

absl::Status SoftmaxImpl(KernelContext& ctx, bool log) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  const int64_t rank = static_cast<int64_t>(x->rank());
  // Opset < 13 flattens to 2-d at `axis` (default 1) and normalizes each
  // row; opset >= 13 normalizes along `axis` (default -1) alone.
  const bool coerce_2d = ctx.opset() < 13;
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", coerce_2d ? 1 : -1));
  if (rank == 0) {
    return absl::InvalidArgumentError("input must have rank >= 1");
  }
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  int64_t outer = 1, axis_size = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dim(i);
  if (coerce_2d) {
    for (int64_t i = axis; i < rank; ++i) axis_size *= x->dim(i);
  } else {
    axis_size = x->dim(axis);
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x->dim(i);
  }
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  if (inner == 1 && !log) {
    // The usual last-axis softmax, four rows per task (SoftmaxRows) when
    // that still leaves several tasks per thread (a decode step's few long
    // rows go one per task).
    const int threads = ctx.pool() != nullptr ? ctx.pool()->num_threads() : 1;
    const int64_t per = outer >= 16 * int64_t{threads} ? 4 : 1;
    ParallelFor(ctx.pool(), (outer + per - 1) / per, [&](int64_t g) {
      const int64_t rows = std::min<int64_t>(per, outer - per * g);
      SoftmaxRows(px + per * g * axis_size, py + per * g * axis_size, axis_size, rows);
    });
    ctx.SetOutput(0, std::move(y));
    return absl::OkStatus();
  }
  ParallelFor(ctx.pool(), outer, [&](int64_t o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * axis_size * inner + i;
      SoftmaxLine(px + base, py + base, axis_size, inner, log);
    }
  });
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace

absl::Status Softmax(KernelContext& ctx) { return SoftmaxImpl(ctx, false); }
absl::Status LogSoftmax(KernelContext& ctx) { return SoftmaxImpl(ctx, true); }

// 1 at the first maximum of each line along the axis (the same axis
// conventions as Softmax, by opset), 0 elsewhere. A NaN is never the
// maximum unless the line is all NaN (then the first element wins).
absl::Status Hardmax(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->dtype() != DType::kF32 && x->dtype() != DType::kF64) {
    return UnsupportedDType(ctx, x->dtype(), "f32, f64");
  }
  const int64_t rank = static_cast<int64_t>(x->rank());
  if (rank == 0) return absl::InvalidArgumentError("input must have rank >= 1");
  const bool coerce_2d = ctx.opset() < 13;
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", coerce_2d ? 1 : -1));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  int64_t outer = 1, axis_size = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dim(i);
  if (coerce_2d) {
    for (int64_t i = axis; i < rank; ++i) axis_size *= x->dim(i);
  } else {
    axis_size = x->dim(axis);
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x->dim(i);
  }
  ASSIGN_OR_RETURN(RtTensor y, ctx.Allocate(x->dtype(), x->dims()));  // zeros
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* px = x->data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner && axis_size > 0; ++i) {
        const int64_t base = o * axis_size * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < axis_size; ++k) {
          const T v = px[base + k * inner], b = px[base + best * inner];
          if (v > b || (b != b && v == v)) best = k;
        }
        py[base + best * inner] = T(1);
      }
    }
  };
  if (x->dtype() == DType::kF32) {
    run(float{});
  } else {
    run(double{});
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status BatchNormalization(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* scale, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* bias, ctx.RequiredInput(2));
  ASSIGN_OR_RETURN(const RtTensor* mean, ctx.RequiredInput(3));
  ASSIGN_OR_RETURN(const RtTensor* var, ctx.RequiredInput(4));
  ASSIGN_OR_RETURN(float eps, ctx.FloatAttr("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(int64_t training, ctx.IntAttr("training_mode", 0));
  if (training != 0 || ctx.wants_output(3) || ctx.wants_output(4)) {
    return absl::UnimplementedError(
        "BatchNormalization in training mode is not supported; supported: "
        "inference (training_mode=0, outputs Y[, running_mean, running_var])");
  }
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  if (x->rank() < 2) {
    return absl::InvalidArgumentError("X must be [N, C, ...], got " + x->DebugString());
  }
  const int64_t channels = x->dim(1);
  RETURN_IF_ERROR(CheckPerChannel(*scale, channels, "scale"));
  RETURN_IF_ERROR(CheckPerChannel(*bias, channels, "B"));
  RETURN_IF_ERROR(CheckPerChannel(*mean, channels, "mean"));
  RETURN_IF_ERROR(CheckPerChannel(*var, channels, "var"));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  const int64_t plane = channels == 0 || x->dim(0) == 0
                            ? 0 : x->num_elements() / (x->dim(0) * channels);
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t n = 0; n < x->dim(0); ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const float a = scale->data<float>()[c] / std::sqrt(var->data<float>()[c] + eps);
      const float b = bias->data<float>()[c] - mean->data<float>()[c] * a;
      const int64_t base = (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) py[base + i] = px[base + i] * a + b;
    }
  }
  ctx.SetOutput(0, std::move(y));
  // In inference the running statistics pass through unchanged.
  if (ctx.wants_output(1)) ctx.SetOutput(1, *mean);
  if (ctx.wants_output(2)) ctx.SetOutput(2, *var);
  return absl::OkStatus();
}

absl::Status InstanceNormalization(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* scale, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* bias, ctx.RequiredInput(2));
  ASSIGN_OR_RETURN(float eps, ctx.FloatAttr("epsilon", 1e-5f));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  if (x->rank() < 3) {
    return absl::InvalidArgumentError("X must be [N, C, spatial...], got " +
                                      x->DebugString());
  }
  const int64_t channels = x->dim(1);
  RETURN_IF_ERROR(CheckPerChannel(*scale, channels, "scale"));
  RETURN_IF_ERROR(CheckPerChannel(*bias, channels, "B"));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  const int64_t planes = x->dim(0) * channels;
  const int64_t size = planes == 0 ? 0 : x->num_elements() / planes;
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = px + p * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += xp[i];
    mean /= static_cast<double>(size);
    for (int64_t i = 0; i < size; ++i) var += (xp[i] - mean) * (xp[i] - mean);
    var /= static_cast<double>(size);
    const int64_t c = p % channels;
    const double a = scale->data<float>()[c] / std::sqrt(var + eps);
    for (int64_t i = 0; i < size; ++i) {
      py[p * size + i] = static_cast<float>((xp[i] - mean) * a + bias->data<float>()[c]);
    }
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status LayerNormalization(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* scale, ctx.RequiredInput(1));
  const RtTensor* bias = ctx.input(2);
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", -1));
  ASSIGN_OR_RETURN(float eps, ctx.FloatAttr("epsilon", 1e-5f));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kF32));
  RETURN_IF_ERROR(ctx.ExpectDType(2, DType::kF32));
  const int64_t rank = static_cast<int64_t>(x->rank());
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  int64_t outer = 1, size = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dim(i);
  for (int64_t i = axis; i < rank; ++i) size *= x->dim(i);
  // Scale and B broadcast to the normalized trailing dims; precompute them
  // expanded to `size` values.
  const std::vector<int64_t> norm_dims(x->dims().begin() + axis, x->dims().end());
  auto expand = [&](const RtTensor& t, const std::string& what)
      -> absl::StatusOr<std::vector<float>> {
    std::vector<float> v(size);
    if (t.num_elements() == size) {
      std::copy(t.data<float>(), t.data<float>() + size, v.begin());
    } else if (t.num_elements() == 1) {
      std::fill(v.begin(), v.end(), t.data<float>()[0]);
    } else if (t.num_elements() > 0 && size % t.num_elements() == 0 &&
               t.num_elements() == norm_dims.back()) {
      for (int64_t i = 0; i < size; ++i) v[i] = t.data<float>()[i % t.num_elements()];
    } else {
      return absl::InvalidArgumentError(what + " " + t.DebugString() +
                                        " does not broadcast to " + DimsToString(norm_dims));
    }
    return v;
  };
  ASSIGN_OR_RETURN(auto sv, expand(*scale, "Scale"));
  std::vector<float> bv(size, 0.0f);
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(bv, expand(*bias, "B"));
  }
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, x->dims()));
  std::vector<int64_t> stat_dims(x->dims().begin(), x->dims().begin() + axis);
  stat_dims.resize(rank, 1);
  RtTensor mean_t, inv_t;
  if (ctx.wants_output(1)) {
    ASSIGN_OR_RETURN(mean_t, ctx.AllocateUninitialized(DType::kF32, stat_dims));
  }
  if (ctx.wants_output(2)) {
    ASSIGN_OR_RETURN(inv_t, ctx.AllocateUninitialized(DType::kF32, stat_dims));
  }
  const float* px = x->data<float>();
  float* py = y.mutable_data<float>();
  ParallelFor(ctx.pool(), outer, [&](int64_t o) {
    const float* xr = px + o * size;
    float* yr = py + o * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += xr[i];
    mean /= static_cast<double>(size);
    for (int64_t i = 0; i < size; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(size);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < size; ++i) {
      yr[i] = static_cast<float>((xr[i] - mean) * inv) * sv[i] + bv[i];
    }
    if (mean_t.defined()) mean_t.mutable_data<float>()[o] = static_cast<float>(mean);
    if (inv_t.defined()) inv_t.mutable_data<float>()[o] = static_cast<float>(inv);
  });
  ctx.SetOutput(0, std::move(y));
  if (mean_t.defined()) ctx.SetOutput(1, std::move(mean_t));
  if (inv_t.defined()) ctx.SetOutput(2, std::move(inv_t));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
