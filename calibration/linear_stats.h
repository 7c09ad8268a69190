// Input statistics of linear layers (MatMul/Gemm with a constant 2-D weight)
// that weight quantizers need: X^T X (GPTQ Hessian), per-input-channel mean
// |x| (AWQ / SmoothQuant scales) and mean x^2 (channel importance).
// Accumulated in double, row by row in order, so results are reproducible
// (X^T X takes rows in batches whose kernel keeps that per-entry order).
#ifndef SLIMPACK_CALIBRATION_LINEAR_STATS_H_
#define SLIMPACK_CALIBRATION_LINEAR_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "runtime/rt_tensor.h"
#include "runtime/thread_pool.h"

namespace slimpack::calibration {

struct LinearLayer {
  std::string node;
  std::string op_type;
  std::string input;    // the activation X
  std::string weight;   // the constant initializer
  int64_t in_features = 0;
  bool trans_a = false;  // Gemm transA: X is stored [K, M]
};

// Every MatMul/Gemm in `graph` (top level) whose second input is a rank-2
// initializer, in node order.
std::vector<LinearLayer> FindLinearLayers(const ir::Graph& graph);

class LinearStatsAccumulator {
 public:
  // `hessian` allocates K*K doubles for X^T X.
  LinearStatsAccumulator(LinearLayer layer, bool hessian);
  // Adds every row of `x` (f32; [..., K], or [K, M] when trans_a).
  // InvalidArgument naming the node when the feature dim is not K. With a
  // pool, features (means) and 8-row bands of X^T X are split across its
  // threads; every sum keeps its row order, so the bits do not change.
  absl::Status Add(const runtime::RtTensor& x, runtime::ThreadPool* pool = nullptr);

  const LinearLayer& layer() const { return layer_; }
  uint64_t rows() const { return rows_; }
  std::vector<double> MeanAbs() const;
  std::vector<double> MeanSquare() const;
  // Row-major K x K sum over rows of x x^T (not normalised, symmetric);
  // empty when not collected.
  std::vector<double> XtX() const;

 private:
  // Adds `rows` rows to the means and the batch buffers, features
  // [f0, f1) only: row r, feature i is x[r * row_step + i * feature_step].
  void GatherFeatures(const float* x, int64_t rows, int64_t row_step,
                      int64_t feature_step, int64_t f0, int64_t f1);
  // Adds the gathered rows (batch after batch) to bands [b0, b1) of X^T X.
  void FlushBands(int64_t rows, int64_t b0, int64_t b1);
  LinearLayer layer_;
  bool hessian_;
  uint64_t rows_ = 0;
  std::vector<double> sum_abs_, sum_sq_, xtx_;
  // Up to ChunkRows(K) pending rows twice (scratch), per batch of kBatch:
  // negated and transposed, K x kBatch, and strip-major
  // (support/ordered_products.h).
  std::vector<double> batch_neg_t_, batch_strips_;
};

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_LINEAR_STATS_H_
