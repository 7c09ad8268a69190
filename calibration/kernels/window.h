// Sliding-window geometry shared by Conv and the pooling kernels: strides,
// dilations and pads (explicit or auto_pad) to output sizes.
#ifndef SLIMPACK_CALIBRATION_KERNELS_WINDOW_H_
#define SLIMPACK_CALIBRATION_KERNELS_WINDOW_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/kernel.h"

namespace slimpack::calibration {

struct WindowGeometry {
  std::vector<int64_t> kernel;  // per spatial axis
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> out;  // output spatial sizes
};

// Reads auto_pad/strides/dilations/pads from the node for `in` (spatial
// input sizes) and `kernel`. `ceil_mode` rounds output sizes up (pools);
// `use_dilations` is false for ops without that attribute. InvalidArgument
// when an attribute has the wrong length or the output would be empty.
absl::StatusOr<WindowGeometry> ComputeWindow(const KernelContext& ctx,
                                             const std::vector<int64_t>& in,
                                             const std::vector<int64_t>& kernel,
                                             bool ceil_mode);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_KERNELS_WINDOW_H_
