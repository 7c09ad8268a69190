// Single-precision GEMM through OpenBLAS. Large products are cut into tiles
// whose shape depends only on (m, n, k), never on the thread count, and each
// tile is one single-threaded BLAS call: results are bitwise identical for
// any number of threads.
#ifndef SLIMPACK_RUNTIME_GEMM_H_
#define SLIMPACK_RUNTIME_GEMM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime {

// C[m,n] = alpha * op(A) * op(B) + beta * C, all row-major. op(A) is m x k
// (A is k x m when trans_a), op(B) is k x n. InvalidArgument if a size or
// leading dimension exceeds the BLAS integer range.
absl::Status Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc, ThreadPool* pool);

// As Sgemm, but always exactly one single-threaded BLAS call on the calling
// thread, for callers that split the work into shape-determined parallel
// tasks themselves (so the result is still thread-count independent).
absl::Status SgemmSingleCall(bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc);

// Extent of each tile when Sgemm cuts an output axis of length `len` for a
// product of `work` = m*n*k multiply-adds (`len` when it does not cut).
// Depends only on the shape, never on the thread count. Callers that tile a
// product the same way (runtime/kernels/packed_kernels.cc) get the same BLAS calls,
// and so the same bits, as Sgemm.
int64_t GemmTileExtent(int64_t len, double work);

// Makes OpenBLAS run every call on the calling thread: the interpreter does
// its own threading. OpenBLAS keeps this setting process-wide.
void UseSingleThreadedBlas();

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_GEMM_H_
