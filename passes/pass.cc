// PassContext: defaults for the kernel registry and the opset bookkeeping.
#include "passes/pass.h"

#include <algorithm>

#include "passes/fused_kernels.h"

namespace slimpack::passes {

PassContext::PassContext(
    int64_t opset,
    std::shared_ptr<const calibration::KernelRegistry> kernels)
    : opset_(opset), kernels_(std::move(kernels)) {
  if (kernels_ == nullptr) kernels_ = KernelsWithFusedOps();
}

void PassContext::RequireOpset(int64_t opset) {
  required_opset_ = std::max(required_opset_, opset);
}

}  // namespace slimpack::passes
