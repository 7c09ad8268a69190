// The GEMM micro-kernels: one per instruction set, all computing the same
// bits (see runtime/gemm.h for the summation order they implement).
//
// A micro-kernel updates one mr x nr block of accumulators from packed
// panels: for p = 0 .. kc-1, in that order, and every (r, j),
//   acc[r * nr + j] = fma(a[p * mr + r], b[p * nr + j], acc[r * nr + j])
// with one rounding per step (a fused multiply-add). `first` starts the
// block from +0 instead of reading acc. Every ISA's fused multiply-add is
// the same IEEE operation, so the kernels differ only in how many
// accumulators they hold in registers, never in the result. Their row and
// vector loops carry `#pragma GCC unroll`: at -O2 (RelWithDebInfo, the
// quick start's build) GCC does not unroll them by itself, the accumulator
// arrays then live on the stack, and the kernels run at half speed.
#ifndef SLIMPACK_RUNTIME_GEMM_MICRO_KERNEL_H_
#define SLIMPACK_RUNTIME_GEMM_MICRO_KERNEL_H_

#include <cstdint>

namespace slimpack::runtime::gemm {

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b,
                               float* acc, bool first);

struct MicroKernel {
  const char* name = "";
  int mr = 0;
  int nr = 0;
  MicroKernelFn fn = nullptr;
};

// Each returns false (and leaves *k alone) when the kernel is not built for
// this architecture or the CPU lacks its instructions.
bool Avx512Kernel(MicroKernel* k);  // AVX-512F: 8 x 32
bool Avx2Kernel(MicroKernel* k);    // AVX2 + FMA: 6 x 16
bool Sse2Kernel(MicroKernel* k);    // x86-64 baseline, FMA emulated exactly: 4 x 8
bool GenericKernel(MicroKernel* k); // std::fma, any CPU: 4 x 8

// The fastest kernel this CPU runs, picked once.
const MicroKernel& BestMicroKernel();

}  // namespace slimpack::runtime::gemm

#endif  // SLIMPACK_RUNTIME_GEMM_MICRO_KERNEL_H_
