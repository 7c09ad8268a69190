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
#include "runtime/rt_tensor.h"
#include "ir/graph.h"

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
  // InvalidArgument naming the node when the feature dim is not K.
  absl::Status Add(const runtime::RtTensor& x);

  const LinearLayer& layer() const { return layer_; }
  uint64_t rows() const { return rows_; }
  std::vector<double> MeanAbs() const;
  std::vector<double> MeanSquare() const;
  // Row-major K x K sum over rows of x x^T (not normalised, symmetric);
  // empty when not collected.
  std::vector<double> XtX() const;

 private:
  // Row `slot` of the pending batch; FlushBatch adds `count` pending rows
  // to X^T X.
  void AddRow(const float* x, int64_t stride, int64_t slot);
  void FlushBatch(int64_t count);
  LinearLayer layer_;
  bool hessian_;
  uint64_t rows_ = 0;
  std::vector<double> sum_abs_, sum_sq_, xtx_;
  // The pending rows twice (scratch): negated and transposed, K x kBatch,
  // and strip-major (support/ordered_products.h).
  std::vector<double> batch_neg_t_, batch_strips_;
};

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_LINEAR_STATS_H_
