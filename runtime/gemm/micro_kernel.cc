#include "runtime/gemm/micro_kernel.h"

namespace slimpack::runtime::gemm {

const MicroKernel& BestMicroKernel() {
  static const MicroKernel kBest = [] {
    MicroKernel k;
    if (Avx512Kernel(&k) || Avx2Kernel(&k) || Sse2Kernel(&k)) return k;
    GenericKernel(&k);
    return k;
  }();
  return kBest;
}

}  // namespace slimpack::runtime::gemm
