// The portable micro-kernel: std::fma per step, 4 rows x 8 columns. It is
// the reference the others are tested against, and the kernel on CPUs
// without one of their own (aarch64 compiles std::fma to fmadd and may
// vectorise the column loop into fmla: same bits either way).
#include <cmath>

#include "runtime/gemm/micro_kernel.h"

namespace slimpack::runtime::gemm {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 8;

void KernelGeneric(int64_t kc, const float* a, const float* b, float* acc, bool first) {
  float c[kMr * kNr];
  for (int i = 0; i < kMr * kNr; ++i) c[i] = first ? 0.0f : acc[i];
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * kNr;
    const float* ap = a + p * kMr;
    for (int r = 0; r < kMr; ++r) {
      for (int j = 0; j < kNr; ++j) c[r * kNr + j] = std::fma(ap[r], bp[j], c[r * kNr + j]);
    }
  }
  for (int i = 0; i < kMr * kNr; ++i) acc[i] = c[i];
}

}  // namespace

bool GenericKernel(MicroKernel* k) {
  *k = MicroKernel{"generic", kMr, kNr, KernelGeneric};
  return true;
}

}  // namespace slimpack::runtime::gemm
