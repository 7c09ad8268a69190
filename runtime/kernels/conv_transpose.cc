// ConvTranspose (N-d, groups, dilations, pads/auto_pad/output_padding,
// strides) as GEMM + col2im: each input position's products with W are
// scattered onto the output positions it reaches.
#include <algorithm>
#include <optional>
#include <string>

#include "runtime/gemm.h"
#include "runtime/kernels/conv_common.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/window.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// Inverse of Im2Col (conv.cc): y[c, o*stride - pad + kk*dilation] += col[c*K + kk, o]
// where o runs over the *input* positions of a transposed convolution.
void Col2Im(const float* col, int64_t channels, const std::vector<int64_t>& in,
            const std::vector<int64_t>& out, const WindowGeometry& g, float* y,
            ThreadPool* pool) {
  const size_t r = in.size();
  const int64_t kprod = DimsProduct(g.kernel);
  const int64_t in_size = DimsProduct(in);
  const int64_t out_size = DimsProduct(out);
  ParallelFor(pool, channels, [&](int64_t c) {
    std::vector<int64_t> kk(r), ii(r);
    float* yc = y + c * out_size;
    for (int64_t k = 0; k < kprod; ++k) {
      UnravelIndex(k, g.kernel, kk);
      const float* row = col + (c * kprod + k) * in_size;
      for (int64_t i = 0; i < in_size; ++i) {
        UnravelIndex(i, in, ii);
        int64_t pos = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t p = ii[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
          if (p < 0 || p >= out[d]) {
            inside = false;
            break;
          }
          pos = pos * out[d] + p;
        }
        if (inside) yc[pos] += row[i];
      }
    }
  });
}

}  // namespace

absl::Status ConvTranspose(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ConvInputs ci, ReadConvInputs(ctx));
  const auto& xd = ci.x->dims();
  const int64_t batch = xd[0], channels = xd[1];
  const size_t r = xd.size() - 2;
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  if (ci.w->dim(0) != channels || channels % ci.group != 0) {
    return absl::InvalidArgumentError(
        "W " + ci.w->DebugString() + " must have X's " + std::to_string(channels) +
        " channels first, divisible by group " + std::to_string(ci.group));
  }
  const int64_t mg = ci.w->dim(1), m = mg * ci.group, cg = channels / ci.group;
  WindowGeometry g;
  g.kernel = ci.kernel;
  ASSIGN_OR_RETURN(g.strides, ctx.IntsAttr("strides", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(g.dilations, ctx.IntsAttr("dilations", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(auto pads, ctx.IntsAttr("pads", std::vector<int64_t>(2 * r, 0)));
  ASSIGN_OR_RETURN(auto out_pad, ctx.IntsAttr("output_padding", std::vector<int64_t>(r, 0)));
  ASSIGN_OR_RETURN(auto out_shape, ctx.IntsAttr("output_shape"));
  ASSIGN_OR_RETURN(std::string auto_pad, ctx.StringAttr("auto_pad", "NOTSET"));
  if (g.strides.size() != r || g.dilations.size() != r || pads.size() != 2 * r ||
      out_pad.size() != r || (!out_shape.empty() && out_shape.size() < r)) {
    return absl::InvalidArgumentError(
        "strides/dilations/output_padding need " + std::to_string(r) +
        " values, pads " + std::to_string(2 * r));
  }
  // Col2Im multiplies by strides and dilations and the sizes below are
  // sums of products of attribute values, so ranges and overflow are
  // checked here rather than trusted from the file.
  RETURN_IF_ERROR(CheckAtLeast(g.kernel, 1, "kernel_shape"));
  RETURN_IF_ERROR(CheckAtLeast(g.strides, 1, "strides"));
  RETURN_IF_ERROR(CheckAtLeast(g.dilations, 1, "dilations"));
  RETURN_IF_ERROR(CheckAtLeast(pads, 0, "pads"));
  RETURN_IF_ERROR(CheckAtLeast(out_pad, 0, "output_padding"));
  g.pads_begin.assign(pads.begin(), pads.begin() + r);
  g.pads_end.assign(pads.begin() + r, pads.end());
  std::vector<int64_t> out(r);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < r; ++i) {
    auto overflow = [&] {
      return absl::InvalidArgumentError(
          "axis " + std::to_string(i) + ": output size from input " +
          std::to_string(in[i]) + ", strides " + std::to_string(g.strides[i]) +
          ", kernel_shape " + std::to_string(g.kernel[i]) + ", dilations " +
          std::to_string(g.dilations[i]) + ", output_padding " +
          std::to_string(out_pad[i]) + " and pads " + std::to_string(g.pads_begin[i]) +
          " + " + std::to_string(g.pads_end[i]) + " overflows int64");
    };
    // full = strides * (in - 1) + output_padding + (kernel - 1) * dilations + 1
    std::optional<int64_t> full = CheckedMulInt64(g.kernel[i] - 1, g.dilations[i]);
    if (full) full = CheckedAddInt64(*full, 1);
    if (full) full = CheckedAddInt64(*full, out_pad[i]);
    std::optional<int64_t> strided = CheckedMulInt64(g.strides[i], in[i] - 1);
    full = full && strided ? CheckedAddInt64(*full, *strided) : std::nullopt;
    if (!full) return overflow();
    if (!out_shape.empty() || same) {
      std::optional<int64_t> wanted = !out_shape.empty()
                                          ? out_shape[out_shape.size() - r + i]
                                          : CheckedMulInt64(in[i], g.strides[i]);
      std::optional<int64_t> diff =
          wanted ? CheckedSubInt64(*full, *wanted) : std::nullopt;
      if (!diff) return overflow();
      out[i] = *wanted;
      const int64_t total = std::max<int64_t>(0, *diff);
      // SAME_LOWER puts the odd pad first; SAME_UPPER and an explicit
      // output_shape put it last (what ONNX's test data expects).
      const int64_t big = total - total / 2;
      g.pads_begin[i] = auto_pad == "SAME_LOWER" ? big : total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
    } else {
      if (auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
      std::optional<int64_t> o = CheckedSubInt64(*full, g.pads_begin[i]);
      if (o) o = CheckedSubInt64(*o, g.pads_end[i]);
      if (!o) return overflow();
      out[i] = *o;
    }
    if (out[i] <= 0) {
      return absl::InvalidArgumentError("axis " + std::to_string(i) +
                                        ": output size " + std::to_string(out[i]) +
                                        " is not positive");
    }
  }
  std::vector<int64_t> out_dims = {batch, m};
  out_dims.insert(out_dims.end(), out.begin(), out.end());
  ASSIGN_OR_RETURN(RtTensor y, ctx.Allocate(DType::kF32, out_dims));
  const int64_t kprod = DimsProduct(g.kernel);
  const int64_t in_size = DimsProduct(in), out_size = DimsProduct(out);
  ASSIGN_OR_RETURN(RtTensor col, ctx.AllocateUninitialized(DType::kF32, {mg * kprod, in_size}));
  const float* px = ci.x->data<float>();
  const float* pw = ci.w->data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < ci.group; ++gi) {
      // col = W_g^T x X_g, W_g stored [cg, mg*kprod].
      RETURN_IF_ERROR(Sgemm(true, false, mg * kprod, in_size, cg, 1.0f,
                            pw + gi * cg * mg * kprod, mg * kprod,
                            px + (n * channels + gi * cg) * in_size, in_size, 0.0f,
                            col.mutable_data<float>(), in_size, ctx.pool()));
      Col2Im(col.data<float>(), mg, in, out, g,
             py + (n * m + gi * mg) * out_size, ctx.pool());
    }
  }
  ctx.Recycle(std::move(col));
  RETURN_IF_ERROR(AddConvBias(ci.b, batch, m, out_size, py));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
