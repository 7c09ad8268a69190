// PassContext: defaults for the kernel registry and the opset bookkeeping.
#include "passes/pass.h"

#include <algorithm>

#include "runtime/kernel_registry.h"

namespace slimpack::passes {

PassContext::PassContext(
    int64_t opset,
    std::shared_ptr<const runtime::KernelRegistry> kernels)
    : opset_(opset), kernels_(std::move(kernels)) {
  if (kernels_ == nullptr) {
    kernels_ = std::make_shared<const runtime::KernelRegistry>(runtime::BuiltinKernels());
  }
}

void PassContext::RequireOpset(int64_t opset) {
  required_opset_ = std::max(required_opset_, opset);
}

}  // namespace slimpack::passes
