// Kernels by (domain, op_type). One explicit table (BuiltinKernels) lists
// every kernel this library has; there is no static self-registration, so
// a registry is an ordinary value that callers may copy and extend (e.g. a
// quantized MatMul registered under its own domain beside the float one).
#ifndef SLIMPACK_RUNTIME_KERNEL_REGISTRY_H_
#define SLIMPACK_RUNTIME_KERNEL_REGISTRY_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "runtime/kernel.h"

namespace slimpack::runtime {

class KernelRegistry {
 public:
  // AlreadyExists if (domain, op_type) is taken. "ai.onnx" is the default
  // domain "".
  absl::Status Register(const std::string& domain, const std::string& op_type,
                        KernelFn fn);
  // Null when there is no kernel.
  KernelFn Find(const std::string& domain, const std::string& op_type) const;
  // Sorted op names; ops outside the default domain as "domain:op".
  std::vector<std::string> SupportedOps() const;

 private:
  std::map<std::pair<std::string, std::string>, KernelFn> kernels_;
};

// Every built-in kernel: the ONNX float/integer set plus the slimpack.*
// fused and packed-weight ops (runtime/kernels/fused_kernels.h).
KernelRegistry BuiltinKernels();

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNEL_REGISTRY_H_
