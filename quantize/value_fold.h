// A rescaling of a weight's values applied as they are read instead of
// stored (AWQ's folded scales, kept lazily: quantize/awq_fold.h): value
// (r, c) is w[r][c] * col_scale[c], then divided by row_divisor[r], in f32,
// each step only where its vector is set. These are the operations, in the
// order, that folding the scales into the stored tensor performs (a
// member's columns are scaled by its group before a later group divides its
// rows), so the values are bit for bit the folded tensor's.
#ifndef SLIMPACK_QUANTIZE_VALUE_FOLD_H_
#define SLIMPACK_QUANTIZE_VALUE_FOLD_H_

#include <cstdint>
#include <vector>

namespace slimpack::quantize {

struct ValueFold {
  std::vector<float> col_scale;    // empty, or one per column
  std::vector<float> row_divisor;  // empty, or one per row of the matrix

  // Rescales rows [first_row, first_row + rows) of a row-major matrix with
  // `cols` columns, held at `w` (its first row is first_row). The caller
  // checked the lengths.
  void Apply(float* w, int64_t first_row, int64_t rows, int64_t cols) const {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = w + r * cols;
      if (!col_scale.empty()) {
        for (int64_t c = 0; c < cols; ++c) row[c] *= col_scale[static_cast<size_t>(c)];
      }
      if (!row_divisor.empty()) {
        const float d = row_divisor[static_cast<size_t>(first_row + r)];
        for (int64_t c = 0; c < cols; ++c) row[c] /= d;
      }
    }
  }
};

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_VALUE_FOLD_H_
