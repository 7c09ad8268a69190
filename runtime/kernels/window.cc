#include "runtime/kernels/window.h"

#include <algorithm>
#include <optional>
#include <string>

#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

absl::Status CheckLength(const std::vector<int64_t>& v, size_t want,
                         const std::string& name) {
  if (v.size() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(name + " has " + std::to_string(v.size()) +
                                    " values, expected " + std::to_string(want));
}

std::string Axis(size_t i) { return "axis " + std::to_string(i) + ": "; }

}  // namespace

absl::Status CheckAtLeast(const std::vector<int64_t>& values, int64_t minimum,
                          const std::string& name) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < minimum) {
      return absl::InvalidArgumentError(
          name + "[" + std::to_string(i) + "] = " + std::to_string(values[i]) +
          ", must be >= " + std::to_string(minimum));
    }
  }
  return absl::OkStatus();
}

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
  // Everything below divides by strides and dilations and indexes with
  // pads, so out-of-range values are errors here, not later.
  RETURN_IF_ERROR(CheckAtLeast(kernel, 1, "kernel_shape"));
  RETURN_IF_ERROR(CheckAtLeast(g.strides, 1, "strides"));
  RETURN_IF_ERROR(CheckAtLeast(g.dilations, 1, "dilations"));
  RETURN_IF_ERROR(CheckAtLeast(pads, 0, "pads"));
  g.pads_begin.assign(pads.begin(), pads.begin() + r);
  g.pads_end.assign(pads.begin() + r, pads.end());
  g.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t s = g.strides[i];
    // Extents are computed checked: attribute values come from the model
    // file, and (kernel - 1) * dilation or in + pads can exceed int64.
    std::optional<int64_t> span = CheckedMulInt64(kernel[i] - 1, g.dilations[i]);
    if (span) span = CheckedAddInt64(*span, 1);
    if (!span) {
      return absl::InvalidArgumentError(
          Axis(i) + "kernel_shape " + std::to_string(kernel[i]) + " with dilation " +
          std::to_string(g.dilations[i]) + " spans more than int64 can hold");
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // ceil(in / s), written so that it cannot overflow.
      g.out[i] = in[i] == 0 ? 0 : (in[i] - 1) / s + 1;
      // (out - 1) * s is at most in - 1 (or -s for an empty axis), so only
      // adding the span can overflow.
      std::optional<int64_t> covered = CheckedAddInt64((g.out[i] - 1) * s, *span);
      if (!covered) {
        return absl::InvalidArgumentError(Axis(i) + "SAME padding for kernel extent " +
                                          std::to_string(*span) + " overflows int64");
      }
      const int64_t total = std::max<int64_t>(0, *covered - in[i]);
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
    std::optional<int64_t> padded = CheckedAddInt64(in[i], g.pads_begin[i]);
    if (padded) padded = CheckedAddInt64(*padded, g.pads_end[i]);
    if (!padded) {
      return absl::InvalidArgumentError(
          Axis(i) + "input " + std::to_string(in[i]) + " + pads " +
          std::to_string(g.pads_begin[i]) + " + " + std::to_string(g.pads_end[i]) +
          " overflows int64");
    }
    if (*padded < *span) {
      return absl::InvalidArgumentError(
          Axis(i) + "padded input " + std::to_string(*padded) +
          " is smaller than the kernel extent " + std::to_string(*span));
    }
    const int64_t room = *padded - *span;
    // floor or ceil of room / s, plus the first window; room + s - 1 could
    // overflow, so the rounding up is done on the remainder.
    int64_t out = room / s + 1;
    if (ceil_mode) {
      if (room % s != 0) ++out;
      // A window may not start inside the end padding only (PyTorch/ORT
      // rule). The last start is (out - 1) * s; if that product overflows it
      // is past the end anyway.
      std::optional<int64_t> last_start = CheckedMulInt64(out - 1, s);
      if (!last_start || *last_start >= in[i] + g.pads_begin[i]) --out;
    }
    g.out[i] = out;
  }
  return g;
}

}  // namespace slimpack::runtime
