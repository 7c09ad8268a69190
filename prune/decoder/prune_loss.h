// The `loss` pruning criterion: the calibration output error of a group's
// consumer layer (down_proj for an MLP channel, o_proj for a KV-head group)
// when that group alone is removed and nothing is refit.
//
// With X [T, n] the consumer's calibration input (captured on the unpruned
// model, T tokens) and R the consumer input features the group feeds, the
// output change of removing R is -X_R W_R^T, so the score is
//   ||X_R W_R^T||_F^2 = sum over output rows r of w_{r,R} (X^T X)_{RR} w_{r,R}^T
// (a sum over the T calibration tokens, not a mean). For an MLP channel c,
// R = {c} and the score is (X^T X)_cc * sum_r W_down[r, c]^2; for KV head k,
// R = the o_proj columns of its r query heads, [k r d, (k + 1) r d).
#ifndef SLIMPACK_PRUNE_DECODER_PRUNE_LOSS_H_
#define SLIMPACK_PRUNE_DECODER_PRUNE_LOSS_H_

#include <cstdint>
#include <vector>

namespace slimpack::prune {

// The score above for the input columns [begin, end) of `w` ([rows, n]
// row-major, HF [out, in]) and the consumer's input Gram matrix `xtx`
// ([n, n]). Deterministic (fixed summation order in double).
double RemovalError(const std::vector<float>& w, int64_t rows, int64_t n,
                    const std::vector<double>& xtx, int64_t begin, int64_t end);

// RemovalError of every group of `width` consecutive columns (n / width
// groups: MLP channels with width 1, KV groups with width r * head_dim).
std::vector<double> RemovalErrors(const std::vector<float>& w, int64_t rows, int64_t n,
                                  const std::vector<double>& xtx, int64_t width);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_DECODER_PRUNE_LOSS_H_
