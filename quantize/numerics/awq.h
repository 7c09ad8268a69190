// AWQ scale search (Lin et al., "AWQ: Activation-aware Weight Quantization
// for LLM Compression and Acceleration", arXiv 2306.00978; as
// mit-han-lab/llm-awq auto_scale.py does it) for a group of linears that
// share one input X [n, cols]:
//   s(alpha) = max(mean|x|^alpha, 1e-4), normalised s / sqrt(max s * min s)
//   err(alpha) = sum over linears ||X W^T - (X diag(1/s)) Q(W diag(s))^T||^2
// for alpha in {0, 1/grid, ..., (grid-1)/grid}; the least error wins (first
// on ties). Salient input channels (large mean|x|) get larger s, so their
// weights are quantized with finer relative steps.
// The caller folds diag(1/s) into the op producing X (norm or linear) and
// stores Q(W diag(s)); this file does neither.
// Optional clip search: the final Q(W diag(s)) uses RTN's per-group clip
// search weighted by mean (x/s)^2 (a diagonal stand-in for AWQ's output-error
// clip search), kept only if it lowers the measured error.
// alpha = 0 gives s = 1 exactly, so it reproduces plain RTN bit for bit.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_AWQ_H_
#define SLIMPACK_QUANTIZE_NUMERICS_AWQ_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "quantize/numerics/quant_types.h"

namespace slimpack::quant {

struct AwqLinear {
  const float* w = nullptr;  // row-major [rows, cols]
  int64_t rows = 0;
};

struct AwqOptions {
  int grid = 20;
  bool clip_search = false;
  int threads = 1;
};

struct AwqResult {
  std::vector<float> scales;   // cols; multiply W's columns, divide X's
  float alpha = 0;
  std::vector<double> errors;  // per grid point (alpha = k / grid)
  double error_before = 0;     // plain RTN (alpha = 0)
  double error_after = 0;      // chosen alpha (and clip, if it won)
  bool clipped = false;        // the clip search was kept
  // Q(W diag(s)) per linear at the chosen scales.
  std::vector<QuantizedMatrix> quantized;
};

// x: row-major [n, cols] sample of the shared input; mean_abs_x: cols
// per-channel mean |x| (calibration/linear_stats.h MeanAbs(),
// possibly over more rows than the sample). InvalidArgument for empty
// linears, sizes that disagree, grid < 1, or non-finite inputs (naming the
// linear / row / column); errors of QuantizeRtn otherwise.
absl::StatusOr<AwqResult> SearchAwqScales(const std::vector<AwqLinear>& linears,
                                          int64_t cols, const float* x,
                                          int64_t n,
                                          const std::vector<float>& mean_abs_x,
                                          const Scheme& scheme,
                                          const AwqOptions& options);

// Rounds a linear's weights [rows, cols] (row-major) onto the grid they will
// be stored on and writes what that grid decodes them to: ggml's blocks for
// a GGUF export (converter/gguf_awq.h). Called from one thread at a time.
using AwqRoundTrip =
    std::function<absl::Status(const float* w, int64_t rows, int64_t cols, float* decoded)>;

struct AwqGridResult {
  std::vector<float> scales;   // cols; multiply W's columns, divide X's
  float alpha = 0;
  std::vector<double> errors;  // per grid point (alpha = k / grid)
  double error_before = 0;     // alpha = 0: the grid's own rounding
  double error_after = 0;
};

// The same search with each linear rounded by its own round trip (linears
// of one group may be stored in different types) instead of our RTN. The
// error sum is SearchAwqScales's, so an RTN round trip gives its errors and
// alpha exactly. Errors as SearchAwqScales, plus a round trip's, annotated
// with the linear; InvalidArgument when the counts of linears and round
// trips differ. (No clip search: the grid's encoder clips as it does.)
absl::StatusOr<AwqGridResult> SearchAwqScalesOnGrids(const std::vector<AwqLinear>& linears,
                                                     int64_t cols, const float* x, int64_t n,
                                                     const std::vector<float>& mean_abs_x,
                                                     const std::vector<AwqRoundTrip>& round_trips,
                                                     const AwqOptions& options);

// AWQ's scale vector for one alpha (normalised as above).
std::vector<float> AwqScales(const std::vector<float>& mean_abs_x,
                             double alpha);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_AWQ_H_
