#include "calibration/kernels/window.h"

#include <algorithm>
#include <string>

#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

absl::Status CheckLength(const std::vector<int64_t>& v, size_t want,
                         const std::string& name) {
  if (v.size() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(name + " has " + std::to_string(v.size()) +
                                    " values, expected " + std::to_string(want));
}

}  // namespace

absl::StatusOr<WindowGeometry> ComputeWindow(const KernelContext& ctx,
                                             const std::vector<int64_t>& in,
                                             const std::vector<int64_t>& kernel,
                                             bool ceil_mode) {
  const size_t r = in.size();
  WindowGeometry g;
  g.kernel = kernel;
  RETURN_IF_ERROR(CheckLength(kernel, r, "kernel_shape"));
  ASSIGN_OR_RETURN(g.strides, ctx.IntsAttr("strides", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(g.dilations, ctx.IntsAttr("dilations", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(auto pads, ctx.IntsAttr("pads", std::vector<int64_t>(2 * r, 0)));
  ASSIGN_OR_RETURN(std::string auto_pad, ctx.StringAttr("auto_pad", "NOTSET"));
  RETURN_IF_ERROR(CheckLength(g.strides, r, "strides"));
  RETURN_IF_ERROR(CheckLength(g.dilations, r, "dilations"));
  RETURN_IF_ERROR(CheckLength(pads, 2 * r, "pads"));
  g.pads_begin.assign(pads.begin(), pads.begin() + r);
  g.pads_end.assign(pads.begin() + r, pads.end());
  g.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || kernel[i] <= 0) {
      return absl::InvalidArgumentError(
          "axis " + std::to_string(i) + ": kernel " + std::to_string(kernel[i]) +
          ", stride " + std::to_string(g.strides[i]) + " and dilation " +
          std::to_string(g.dilations[i]) + " must be positive");
    }
    const int64_t span = (kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = (in[i] + g.strides[i] - 1) / g.strides[i];
      const int64_t total =
          std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + span - in[i]);
      // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start.
      const int64_t small = total / 2;
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pads_end[i] = total - g.pads_begin[i];
      continue;
    }
    if (auto_pad == "VALID") {
      g.pads_begin[i] = g.pads_end[i] = 0;
    } else if (auto_pad != "NOTSET") {
      return absl::InvalidArgumentError(
          "auto_pad '" + auto_pad +
          "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    const int64_t padded = in[i] + g.pads_begin[i] + g.pads_end[i];
    if (padded < span) {
      return absl::InvalidArgumentError(
          "axis " + std::to_string(i) + ": padded input " + std::to_string(padded) +
          " is smaller than the kernel extent " + std::to_string(span));
    }
    int64_t out = ceil_mode ? (padded - span + g.strides[i] - 1) / g.strides[i] + 1
                            : (padded - span) / g.strides[i] + 1;
    // A window may not start inside the end padding only (PyTorch/ORT rule).
    if (ceil_mode && (out - 1) * g.strides[i] >= in[i] + g.pads_begin[i]) --out;
    g.out[i] = out;
  }
  return g;
}

}  // namespace slimpack::calibration
