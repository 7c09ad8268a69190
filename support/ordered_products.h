// Dense double-precision products with a fixed summation order: the
// results do not depend on the CPU (the AVX2 clone and the baseline build
// run the same multiplies and subtractions; no FMA), the blocking or the
// thread count. Used by GPTQ's updates, its Cholesky's trailing updates and
// triangular inverse (quantize/numerics) and by calibration's X^T X
// (calibration/linear_stats).
#ifndef SLIMPACK_SUPPORT_ORDERED_PRODUCTS_H_
#define SLIMPACK_SUPPORT_ORDERED_PRODUCTS_H_

#include <cstdint>

namespace slimpack::support {

// Strip-major storage of a matrix with `cols` columns: columns [8s, 8s+8)
// of all rows form strip s, row k of it at strip + 8k, strips `sstride`
// doubles apart (>= 8 * rows); the last strip is padded to 8 columns.
// Loops over a strip then read contiguous memory whatever the matrix width
// (a power-of-two row stride would map a column strip onto one L1 set).
constexpr int64_t kStripWidth = 8;
inline int64_t StripCount(int64_t cols) {
  return (cols + kStripWidth - 1) / kStripWidth;
}
// Offset of (row, col) in a strip-major matrix whose strips are `sstride`
// doubles apart.
inline int64_t StripIndex(int64_t row, int64_t col, int64_t sstride) {
  return (col / kStripWidth) * sstride + row * kStripWidth + col % kStripWidth;
}

// out[r * ldo + c] -= coef[r * ldc + k] * src(k, c) for r < rows, c < cols,
// src strip-major (above): every element takes k = 0 .. count-1 in that
// order, one multiply and one subtraction each (no FMA), so the result
// equals the plain triple loop bit for bit. Register-blocked 4 rows x 8
// columns (8 rows, one ZMM register each, where the CPU has AVX-512; there
// the first 8-row pass over a strip also prefetches the next strip when 16
// or more rows follow): a pass over a strip serves several rows. With coef negated it adds
// the products instead, with the same bits as `+=` (x - (-y) == x + y).
void SubtractProducts(double* out, int64_t ldo, const double* coef,
                      int64_t ldc, const double* src, int64_t sstride,
                      int64_t rows, int64_t count, int64_t cols);

// out[j] -= scale * src[j] for j < n: one multiply and one subtraction
// per element, as the plain loop (vector width does not change the bits).
void SubtractScaled(double* out, const double* src, double scale, int64_t n);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_ORDERED_PRODUCTS_H_
