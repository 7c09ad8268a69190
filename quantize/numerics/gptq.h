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

// sum over rows of (w - w_hat) H' (w - w_hat)^T with H' = X^T X (xtx): the
// squared output error ||X W^T - X W_hat^T||_F^2 without X. In double.
double OutputError(const float* w, const float* w_hat, int64_t rows,
                   int64_t cols, const std::vector<double>& xtx);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_GPTQ_H_
