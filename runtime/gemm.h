// Single-precision GEMM with one summation order on every CPU.
//
// Each element of C is computed as
//   acc = +0; for p = 0, 1, ..., k-1: acc = fma(op(A)[i,p], op(B)[p,j], acc)
//   C[i,j] = (alpha == 1 ? acc : alpha * acc) (+ beta * C[i,j] when beta != 0)
// with every fused multiply-add rounded once (IEEE fusedMultiplyAdd) and
// the final multiply and add rounded separately. That sequence is the
// definition, so the bits of C do not depend on the instruction set
// (AVX-512, AVX2 + FMA, SSE2 with an exact FMA emulation, aarch64, plain
// C++), the vector width, the blocking, or the thread count; the direct
// convolution (kernels/conv_direct.h) follows the same order over
// (channel, kernel row, kernel column), so both convolution paths agree
// bit for bit too. Artifacts depend on this: calibration statistics come
// from these products (docs/ARCHITECTURE.md, "Same bytes on every CPU").
#ifndef SLIMPACK_RUNTIME_GEMM_H_
#define SLIMPACK_RUNTIME_GEMM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "runtime/gemm/micro_kernel.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime {

// C[m,n] = alpha * op(A) * op(B) + beta * C, all row-major. op(A) is m x k
// (A is k x m when trans_a), op(B) is k x n. With beta == 0, C is only
// written. Cut into tiles that run on `pool` (shape-determined, though no
// tiling changes a bit of the result). InvalidArgument on a negative size.
absl::Status Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc, ThreadPool* pool);

// As Sgemm, on the calling thread only, for callers that split the work
// into parallel tasks themselves.
absl::Status SgemmSingleCall(bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc);

// As SgemmSingleCall with a given micro-kernel: the tests run every kernel
// this CPU has and require the same bits.
absl::Status SgemmWithKernel(const gemm::MicroKernel& kernel, bool trans_a,
                             bool trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc);

// op(B) of a constant matrix (a weight) laid out once, for the whole depth,
// as the column panels of BestMicroKernel() that Sgemm otherwise packs from
// B on every call: a plan keeps it (runtime/node_cache.h) and each run's
// product skips the packing. Packing moves values and computes nothing, so
// products through it have Sgemm's bits.
class PackedB {
 public:
  // op(B) is k x n (B is n x k when trans_b), row-major with leading
  // dimension ldb.
  static std::shared_ptr<const PackedB> Pack(bool trans_b, int64_t k, int64_t n, const float* b,
                                             int64_t ldb);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int nr() const { return nr_; }
  // Panel jp: columns jp*nr .. jp*nr+nr-1 of op(B) (zeros past n), [k][nr].
  const float* panel(int64_t jp) const { return data_.data() + jp * k_ * nr_; }
  int64_t bytes() const { return static_cast<int64_t>(data_.size() * sizeof(float)); }

 private:
  int64_t k_ = 0, n_ = 0;
  int nr_ = 0;
  std::vector<float> data_;
};

// As Sgemm with op(B) = `b` (trans_b, ldb), whose panels `packed` holds
// (packed->k() == k, packed->n() == n; nullptr: packed per call as Sgemm
// does). A one-row product still reads B itself (the packing-free GEMV),
// and a packing made for another micro-kernel is not used.
absl::Status SgemmConstantB(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                            const PackedB* packed, float beta, float* c, int64_t ldc,
                            ThreadPool* pool);

// Extent of each tile when Sgemm cuts an output axis of length `len` for a
// product of `work` = m*n*k multiply-adds (`len` when it does not cut).
// Depends only on the shape; callers that parallelise a product themselves
// (runtime/kernels/packed_kernels.cc) use it to size their tasks.
int64_t GemmTileExtent(int64_t len, double work);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_GEMM_H_
