// GPTQ (Frantar et al., "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers", arXiv 2210.17323): quantizes the
// columns of W one at a time and spreads each column's rounding error over
// the columns not yet quantized, weighted by the inverse Hessian of the
// layer's squared output error, H = 2 X^T X / n.
//
// As the reference implementation (IST-DASLab/gptq, gptq.py):
// - dead columns (H_ii == 0: the input feature is always 0) get H_ii = 1 and
//   their weights zeroed;
// - damping adds `percdamp` * mean(diag H) to the diagonal;
// - U = upper Cholesky factor of H^-1 drives the updates;
// - columns go in lazy blocks of `block_size`: in-block updates at once,
//   the rest of the row once per block;
// - group grids (quant_types.h MakeGrid) are computed when a group starts,
//   from the weights as updated by previous blocks only (the reference reads
//   W, not the in-block copy); per-channel grids come from the original W;
// - act-order processes columns by descending H_ii. With groups it always
//   uses static groups (grids from the original column order before the
//   permutation), so the stored layout needs no runtime permutation.
// Here U is computed as J M^-1 J with M = chol(J H J) (J reverses the
// index order), the same factor with one factorisation instead of two.
// Every row is independent given U, so rows run in parallel and results do
// not depend on the thread count. All Hessian and update arithmetic is in
// double; grids and codes use the f32 arithmetic RTN uses.
// Not handled: true-sequential / layer-by-layer input propagation (the
// caller feeds X^T X collected on already-quantized inputs).
#ifndef SLIMPACK_QUANTIZE_NUMERICS_GPTQ_H_
#define SLIMPACK_QUANTIZE_NUMERICS_GPTQ_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quantize/numerics/quant_types.h"

namespace slimpack::quant {

struct GptqStats {
  double damp = 0;           // value added to the diagonal
  int64_t dead_columns = 0;  // H_ii == 0
  // sum over rows/cols of (w - q)^2 / U_ii^2 / 2: GPTQ's proxy loss.
  double proxy_loss = 0;
};

struct GptqOptions {
  double percdamp = 0.01;   // of mean(diag H)
  int64_t block_size = 128;
  bool act_order = false;
  // Grids fixed from the original W before quantizing (implied by
  // act_order with groups).
  bool static_groups = false;
  int threads = 1;
  GptqStats* stats = nullptr;  // filled when non-null
};

// w: row-major [rows, cols]; xtx: row-major cols x cols sum over n
// calibration rows of x x^T (calibration/linear_stats.h XtX()).
// InvalidArgument for bad sizes/options/scheme, n == 0, non-finite weights
// (naming row/col) or non-finite / asymmetric xtx; FailedPrecondition when
// the damped Hessian is not positive definite (naming its size, the damping
// and the failing pivot).
absl::StatusOr<QuantizedMatrix> QuantizeGptq(const float* w, int64_t rows,
                                             int64_t cols, const Scheme& scheme,
                                             const std::vector<double>& xtx,
                                             uint64_t n,
                                             const GptqOptions& options);

// A grid GPTQ rounds onto that Scheme does not describe, such as ggml's
// block types, whose scales an encoder searches per block (the converter's
// GGUF GPTQ). Columns come in blocks of block(); when GPTQ reaches a block's
// first column in a row it calls Fix with the row's weights there as
// updated so far, then Round for each of the block's columns in order.
// Rows run on several threads at once (never one row on two), and one
// thread takes a tile of rows column by column, so calls for different
// rows interleave: an implementation keeps per-row state, not per-thread.
class GptqGrid {
 public:
  virtual ~GptqGrid() = default;
  virtual int64_t block() const = 0;
  // values[0 .. len): columns [c0, c0 + len) of `row`; len < block() only
  // for a last partial block.
  virtual absl::Status Fix(int64_t row, int64_t c0, const float* values, int64_t len) = 0;
  // Records the code for v at (row, col) and returns the value it decodes to.
  virtual float Round(int64_t row, int64_t col, float v) = 0;
};

// GPTQ as QuantizeGptq, rounding onto `grid`; the codes are the grid's to
// keep. Errors as QuantizeGptq's, InvalidArgument for act_order or
// static_groups (a grid fixed from updated weights has no static form), and
// the first error a Fix returned (by row tile, then the column it was
// returned at).
absl::Status QuantizeGptqOnGrid(const float* w, int64_t rows, int64_t cols,
                                const std::vector<double>& xtx, uint64_t n,
                                const GptqOptions& options, GptqGrid& grid);

// sum over rows of (w - w_hat) H' (w - w_hat)^T with H' = X^T X (xtx): the
// squared output error ||X W^T - X W_hat^T||_F^2 without X. In double.
double OutputError(const float* w, const float* w_hat, int64_t rows,
                   int64_t cols, const std::vector<double>& xtx);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_GPTQ_H_
