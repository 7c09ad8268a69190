// One-row products against a row-major B used transposed (c = a · Bᵀ: a
// classifier's Gemm, a decoder's one-token projections) without packing B.
// The general path packs B's transpose on every call, which for one row of
// A cost several times the arithmetic. Same bits as Sgemm (runtime/gemm.h):
// each output is one fused multiply-add chain over p from +0.
#ifndef SLIMPACK_RUNTIME_GEMM_GEMV_AVX2_H_
#define SLIMPACK_RUNTIME_GEMM_GEMV_AVX2_H_

#include <cstdint>

namespace slimpack::runtime::gemm {

// True when this CPU runs GemvTransBAvx2 (x86-64 with AVX2 and FMA).
bool GemvTransBAvx2Available();

// For j in [j0, j1): acc_j = fma chain over p = 0..k-1 of a[p] * b[j * ldb + p]
// from +0, then c[j] = acc_j, alpha * acc_j, or alpha * acc_j + beta * c[j]
// (beta != 0), rounded as Sgemm rounds them. k >= 1.
void GemvTransBAvx2(int64_t j0, int64_t j1, int64_t k, float alpha, const float* a,
                    const float* b, int64_t ldb, float beta, float* c);

}  // namespace slimpack::runtime::gemm

#endif  // SLIMPACK_RUNTIME_GEMM_GEMV_AVX2_H_
