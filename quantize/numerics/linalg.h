// Dense symmetric-positive-definite helpers for GPTQ (row-major, double).
// Blocked so a 4096-wide Hessian stays cache friendly; every sum runs in a
// fixed order, so results do not depend on anything but the input. With
// `threads` > 1 the independent pieces (column groups of a trailing update,
// column panels of the inverse) are shared out; each element is still
// computed by one thread in the same order, so the bits do not depend on
// the thread count either.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_
#define SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_

#include <cstdint>

namespace slimpack::quant::internal {

// In-place Cholesky A = L L^T of the n x n matrix `a` (lower triangle read,
// L written there; the strict upper triangle is left unspecified). Returns
// -1 on success, else the first pivot index whose pivot is not positive.
int64_t CholeskyLowerInPlace(double* a, int64_t n, int threads = 1);

// Inverse of the lower-triangular n x n `l` (upper triangle ignored) into
// `out` (n*n, lower; upper set to 0).
void InvertLowerTriangular(const double* l, int64_t n, double* out, int threads = 1);

// Upper-triangular U with U^T U = A^-1 for SPD `a` (n x n, overwritten)
// into `u` (n x n, lower triangle set to 0). Returns -1 on success or the
// failing pivot (in the original order; `u` is then unspecified).
int64_t UpperCholeskyOfInverse(double* a, int64_t n, double* u, int threads = 1);

}  // namespace slimpack::quant::internal

#endif  // SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_
