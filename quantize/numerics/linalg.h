// Dense symmetric-positive-definite helpers for GPTQ (row-major, double).
// Blocked so a 4096-wide Hessian stays cache friendly; every sum runs in a
// fixed order, so results do not depend on anything but the input.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_
#define SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_

#include <cstdint>
#include <vector>

namespace slimpack::quant::internal {

// In-place Cholesky A = L L^T of the n x n matrix `a` (lower triangle read,
// L written there; the strict upper triangle is left unspecified). Returns
// -1 on success, else the first pivot index whose pivot is not positive.
int64_t CholeskyLowerInPlace(double* a, int64_t n);

// Inverse of the lower-triangular n x n `l` (upper triangle ignored) into
// `out` (n*n, lower; upper set to 0).
void InvertLowerTriangular(const double* l, int64_t n, double* out);

// Strip-major storage of a matrix with `cols` columns: columns [8s, 8s+8)
// of all rows form strip s, row k of it at strip + 8k, strips `sstride`
// doubles apart (>= 8 * rows); the last strip is padded to 8 columns.
// Loops over a strip then read contiguous memory whatever the matrix width
// (a power-of-two row stride would map a column strip onto one L1 set).
constexpr int64_t kStripWidth = 8;
inline int64_t StripCount(int64_t cols) {
  return (cols + kStripWidth - 1) / kStripWidth;
}

// out[r * ldo + c] -= coef[r * ldc + k] * src(k, c) for r < rows, c < cols,
// src strip-major (above): every element takes k = 0 .. count-1 in that
// order, one multiply and one subtraction each (no FMA), so the result
// equals the plain triple loop bit for bit. Register-blocked 4 rows x 8
// columns: a pass over a strip serves four rows (GPTQ's lazy update, the
// triangular inverse).
void SubtractProducts(double* out, int64_t ldo, const double* coef,
                      int64_t ldc, const double* src, int64_t sstride,
                      int64_t rows, int64_t count, int64_t cols);

// Upper-triangular U with U^T U = A^-1 for SPD `a` (n x n, overwritten).
// Returns -1 on success or the failing pivot (in the original order).
int64_t UpperCholeskyOfInverse(std::vector<double>& a, int64_t n,
                               std::vector<double>* u);

}  // namespace slimpack::quant::internal

#endif  // SLIMPACK_QUANTIZE_NUMERICS_LINALG_H_
