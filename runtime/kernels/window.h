// Sliding-window geometry shared by Conv and the pooling kernels: strides,
// dilations and pads (explicit or auto_pad) to output sizes.
#ifndef SLIMPACK_RUNTIME_KERNELS_WINDOW_H_
#define SLIMPACK_RUNTIME_KERNELS_WINDOW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/kernel.h"

namespace slimpack::runtime {

struct WindowGeometry {
  std::vector<int64_t> kernel;  // per spatial axis
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> out;  // output spatial sizes
};

// InvalidArgument "<name>[i] = <v>, must be >= <minimum>" naming the first
// value of `values` below `minimum`. The window kernels divide by strides
// and dilations, so a graph built in memory (not through the importer's
// checks) must not reach them with a zero.
absl::Status CheckAtLeast(const std::vector<int64_t>& values, int64_t minimum,
                          const std::string& name);

// Reads auto_pad/strides/dilations/pads from the node for `in` (spatial
// input sizes) and `kernel`. `ceil_mode` rounds output sizes up (pools).
// InvalidArgument when an attribute has the wrong length, a kernel size,
// stride or dilation is below 1, a pad is negative, an extent overflows
// int64, or the output would be empty.
absl::StatusOr<WindowGeometry> ComputeWindow(const KernelContext& ctx,
                                             const std::vector<int64_t>& in,
                                             const std::vector<int64_t>& kernel,
                                             bool ceil_mode);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_WINDOW_H_
