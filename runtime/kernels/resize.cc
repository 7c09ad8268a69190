// Resize (nearest, linear and cubic, every coordinate transformation mode
// except tf_crop_and_resize) and the older Upsample. The interpolation is
// separable, so every mode runs as one 1-d pass per resized axis.
#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

struct ResizeParams {
  std::string mode;        // nearest | linear | cubic
  std::string coord_mode;  // coordinate_transformation_mode
  std::string nearest_mode;
  double cubic_a = -0.75;        // cubic_coeff_a
  bool exclude_outside = false;  // cubic taps outside the input get weight 0
};



// Maps output coordinate `x` to an input coordinate.
double ToInput(const std::string& mode, double x, double scale, int64_t in,
               int64_t out) {
  if (mode == "asymmetric") return x / scale;
  if (mode == "align_corners") {
    // The resized length is in*scale before flooring (ONNX reference and
    // ONNX Runtime agree; it differs from `out` when scales are given).
    const double resized = static_cast<double>(in) * scale;
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1);
  }
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / (scale * static_cast<double>(in));
    const double center = static_cast<double>(in) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t NearestIndex(const std::string& mode, double x, bool downsample) {
  const double fl = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(fl);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "simple") {  // opset 10 Resize and Upsample
    return downsample ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  if (x - fl == 0.5) {
    return mode == "round_prefer_ceil" ? static_cast<int64_t>(fl) + 1 : static_cast<int64_t>(fl);
  }
  return static_cast<int64_t>(std::round(x));
}

// Keys' cubic convolution weights of the taps at floor-1 .. floor+2 for a
// point `t` in (0, 1] past the second tap (ONNX's reference formulas).
std::array<double, 4> CubicWeights(double t, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };        // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// Cubic resize of one axis: output o reads taps idx[4o..4o+3] with weights
// w[4o..4o+3], computed in double as the reference does.
absl::StatusOr<RtTensor> ResizeAxisCubic(KernelContext& ctx, const RtTensor& x, size_t axis,
                                         int64_t out, double scale, const ResizeParams& p) {
  const int64_t in = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = out;
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, dims));
  std::vector<int64_t> idx(4 * out);
  std::vector<double> w(4 * out);
  for (int64_t o = 0; o < out; ++o) {
    const double xi = ToInput(p.coord_mode, static_cast<double>(o), scale, in, out);
    // The left tap is the one below xi, or xi - 1 when xi is a whole
    // number, so t is in (0, 1]. Taps past the ends repeat the edge value
    // (xi is within [-0.5, in) for every coordinate mode handled here).
    const int64_t base = static_cast<int64_t>(std::ceil(xi)) - 1;
    const std::array<double, 4> c = CubicWeights(xi - static_cast<double>(base), p.cubic_a);
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t tap = base - 1 + k;
      const bool outside = tap < 0 || tap >= in;
      w[4 * o + k] = p.exclude_outside && outside ? 0.0 : c[k];
      idx[4 * o + k] = std::clamp<int64_t>(tap, 0, in - 1);
      sum += w[4 * o + k];
    }
    if (p.exclude_outside && sum != 0) {
      for (int k = 0; k < 4; ++k) w[4 * o + k] /= sum;
    }
  }
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t a = 0; a < outer; ++a) {
    const float* xa = px + a * in * inner;
    float* ya = py + a * out * inner;
    for (int64_t o = 0; o < out; ++o) {
      const int64_t* io = &idx[4 * o];
      const double* wo = &w[4 * o];
      for (int64_t j = 0; j < inner; ++j) {
        double v = 0;
        for (int k = 0; k < 4; ++k) v += wo[k] * static_cast<double>(xa[io[k] * inner + j]);
        ya[o * inner + j] = static_cast<float>(v);
      }
    }
  }
  return y;
}

// Resizes axis `axis` of `x` to `out` elements.
absl::StatusOr<RtTensor> ResizeAxis(KernelContext& ctx, const RtTensor& x, size_t axis,
                                    int64_t out, double scale, const ResizeParams& p) {
  const int64_t in = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = out;
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, dims));
  std::vector<int64_t> i0(out), i1(out);
  std::vector<float> w1(out, 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const double xi = ToInput(p.coord_mode, static_cast<double>(o), scale, in, out);
    if (p.mode == "nearest") {
      i0[o] = std::clamp<int64_t>(NearestIndex(p.nearest_mode, xi, scale < 1), 0, in - 1);
      i1[o] = i0[o];
    } else {
      const double c = std::clamp(xi, 0.0, static_cast<double>(in - 1));
      i0[o] = static_cast<int64_t>(std::floor(c));
      i1[o] = std::min(i0[o] + 1, in - 1);
      w1[o] = static_cast<float>(c - static_cast<double>(i0[o]));
    }
  }
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t a = 0; a < outer; ++a) {
    const float* xa = px + a * in * inner;
    float* ya = py + a * out * inner;
    for (int64_t o = 0; o < out; ++o) {
      const float* r0 = xa + i0[o] * inner;
      const float* r1 = xa + i1[o] * inner;
      const float w = w1[o];
      float* yo = ya + o * inner;
      for (int64_t j = 0; j < inner; ++j) yo[j] = r0[j] + w * (r1[j] - r0[j]);
    }
  }
  return y;
}

absl::Status RunResize(KernelContext& ctx, const RtTensor& x, const ResizeParams& p,
                       std::vector<double> scales, std::vector<int64_t> sizes) {
  if (x.dtype() != DType::kF32) return UnsupportedDType(ctx, x.dtype(), "f32");
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return absl::UnimplementedError("Resize mode '" + p.mode +
                                    "' is not supported; supported: nearest, linear, cubic");
  }
  const size_t r = x.rank();
  if (!sizes.empty()) {
    scales.resize(r);
    for (size_t i = 0; i < r; ++i) {
      scales[i] = static_cast<double>(sizes[i]) / static_cast<double>(x.dim(i));
    }
  } else {
    sizes.resize(r);
    for (size_t i = 0; i < r; ++i) {
      if (!(scales[i] > 0)) {
        return absl::InvalidArgumentError("scale " + std::to_string(scales[i]) +
                                          " on axis " + std::to_string(i) + " is not positive");
      }
      sizes[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.dim(i)) *
                                                 static_cast<float>(scales[i])));
    }
  }
  RtTensor cur = x;
  for (size_t axis = 0; axis < r; ++axis) {
    if (sizes[axis] == x.dim(axis) && scales[axis] == 1.0) continue;
    if (x.dim(axis) == 0 || sizes[axis] < 0) {
      return absl::InvalidArgumentError("cannot resize axis " + std::to_string(axis) +
                                        " from " + std::to_string(x.dim(axis)) + " to " +
                                        std::to_string(sizes[axis]));
    }
    ASSIGN_OR_RETURN(RtTensor next,
                     p.mode == "cubic"
                         ? ResizeAxisCubic(ctx, cur, axis, sizes[axis], scales[axis], p)
                         : ResizeAxis(ctx, cur, axis, sizes[axis], scales[axis], p));
    if (cur.raw() != x.raw()) ctx.Recycle(std::move(cur));
    cur = std::move(next);
  }
  ctx.SetOutput(0, std::move(cur));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ReadFloats(const RtTensor& t, const std::string& what) {
  if (t.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(what + " must be f32, got " + t.DebugString());
  }
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.data<float>()[i];
  return v;
}

}  // namespace

absl::Status Resize(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ResizeParams p;
  ASSIGN_OR_RETURN(p.mode, ctx.StringAttr("mode", "nearest"));
  const bool v10 = ctx.opset() < 11;
  ASSIGN_OR_RETURN(p.coord_mode, ctx.StringAttr("coordinate_transformation_mode",
                                                v10 ? "asymmetric" : "half_pixel"));
  ASSIGN_OR_RETURN(p.nearest_mode, ctx.StringAttr("nearest_mode",
                                                  v10 ? "simple" : "round_prefer_floor"));
  ASSIGN_OR_RETURN(float cubic_a, ctx.FloatAttr("cubic_coeff_a", -0.75f));
  p.cubic_a = cubic_a;
  ASSIGN_OR_RETURN(int64_t exclude_outside, ctx.IntAttr("exclude_outside", 0));
  p.exclude_outside = exclude_outside != 0;
  ASSIGN_OR_RETURN(int64_t antialias, ctx.IntAttr("antialias", 0));
  ASSIGN_OR_RETURN(std::string policy, ctx.StringAttr("keep_aspect_ratio_policy", "stretch"));
  if (p.coord_mode == "tf_crop_and_resize" || antialias != 0 || policy != "stretch") {
    return absl::UnimplementedError(
        "Resize with coordinate_transformation_mode=tf_crop_and_resize, antialias=1 or "
        "keep_aspect_ratio_policy other than stretch is not supported");
  }
  const size_t r = x->rank();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  const RtTensor* scales_t = ctx.input(v10 ? 1 : 2);
  const RtTensor* sizes_t = v10 ? nullptr : ctx.input(3);
  if (scales_t != nullptr && scales_t->num_elements() > 0) {
    ASSIGN_OR_RETURN(scales, ReadFloats(*scales_t, "scales"));
  } else if (sizes_t != nullptr && sizes_t->num_elements() > 0) {
    ASSIGN_OR_RETURN(sizes, ReadInts(*sizes_t, "sizes"));
  } else {
    return absl::InvalidArgumentError("Resize needs scales or sizes");
  }
  // Opset 18 `axes` name the axes that scales/sizes refer to.
  ASSIGN_OR_RETURN(auto axes, ctx.IntsAttr("axes"));
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (!axes.empty()) {
    if (axes.size() != given) {
      return absl::InvalidArgumentError("axes " + DimsToString(axes) + " do not match " +
                                        std::to_string(given) + " scales/sizes");
    }
    std::vector<double> full_scales(r, 1.0);
    std::vector<int64_t> full_sizes(x->dims());
    for (size_t i = 0; i < axes.size(); ++i) {
      ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axes[i], static_cast<int64_t>(r)));
      if (scales.empty()) full_sizes[a] = sizes[i];
      else full_scales[a] = scales[i];
    }
    if (scales.empty()) sizes = full_sizes;
    else scales = full_scales;
  } else if (given != r) {
    return absl::InvalidArgumentError("scales/sizes have " + std::to_string(given) +
                                      " values for input " + x->DebugString());
  }
  return RunResize(ctx, *x, p, scales, sizes);
}

absl::Status Upsample(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ResizeParams p;
  ASSIGN_OR_RETURN(p.mode, ctx.StringAttr("mode", "nearest"));
  p.coord_mode = "asymmetric";
  p.nearest_mode = "simple";
  std::vector<double> scales;
  if (const RtTensor* s = ctx.input(1)) {
    ASSIGN_OR_RETURN(scales, ReadFloats(*s, "scales"));
  } else {
    ASSIGN_OR_RETURN(auto f, ctx.FloatsAttr("scales"));
    scales.assign(f.begin(), f.end());
  }
  if (scales.size() != x->rank()) {
    return absl::InvalidArgumentError("scales have " + std::to_string(scales.size()) +
                                      " values for input " + x->DebugString());
  }
  return RunResize(ctx, *x, p, scales, {});
}

}  // namespace slimpack::runtime::kernels
