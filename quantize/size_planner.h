// Size-target planner: picks each weight's scheme from a candidate list so
// that the total estimated error is least while the model fits a byte
// budget (--target-size) or an average bits-per-weight (--target-bpw).
//
// Error of tensor t under scheme s, in one unit for every tensor (expected
// squared output error per token):
//   linear layers:   sum_r sum_c imp[c] * (W[r,c] - Q_s(W)[r,c])^2, with imp
//                    the calibration mean x^2 of input column c (the diagonal
//                    of X^T X / n); without calibration imp = 1;
//   embedding rows:  sum (W - Q_s(W))^2 / rows (a token reads one row).
// Q_s is the importance-weighted RTN of the scheme (what imatrix stores;
// GPTQ/AWQ later do better, so the estimate is conservative and the sizes
// are exact).
//
// With calibration data the driver also passes a measured sensitivity
// (SizeTarget::output_error): quantizing one tensor at a time and measuring
// the model's output error turns the per-tensor proxy into one comparable
// across layers (an early-layer error is amplified by everything after it,
// the proxy cannot see that).
//
// Solver: a multiple-choice knapsack by marginal analysis. Each tensor's
// (bytes, error) options are reduced to their lower convex hull; all start at
// their smallest option and the upgrade with the largest error reduction per
// extra byte is taken while it fits, ties broken by tensor name. Exact for
// the convex relaxation, deterministic, O(T * S log T).
#ifndef SLIMPACK_QUANTIZE_SIZE_PLANNER_H_
#define SLIMPACK_QUANTIZE_SIZE_PLANNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "quantize/quant_rules.h"
#include "support/progress.h"

namespace slimpack::quantize {

struct SizeTarget {
  std::optional<uint64_t> bytes;  // all tensors of the model
  std::optional<double> bpw;      // over the planned tensors (scales included)
  std::vector<WeightScheme> candidates;
  // Tensors whose scheme a recipe rule fixed: planned with that one option.
  std::map<std::string, WeightScheme> fixed;
  // Optional measured sensitivity: the end-to-end output error of the model
  // with only `use`'s tensor replaced by `values` (its tensor order, f32).
  // When set, each tensor's option errors are rescaled so that its smallest
  // option's error equals this measurement: the proxy then only orders a
  // tensor's own options, and how much a tensor matters to the output is
  // measured rather than assumed.
  std::function<absl::StatusOr<double>(const WeightUse& use, const std::vector<float>& values)>
      output_error;
  // Stage "planner", a tensor at a time, when output_error measures.
  support::ProgressSink progress;
};

struct SizeChoice {
  std::string tensor;
  WeightScheme scheme;
  uint64_t bytes = 0;
  double error = 0;
};

struct SizePlan {
  std::vector<SizeChoice> choices;  // in the order of `uses`
  uint64_t planned_bytes = 0;       // the chosen tensors
  uint64_t other_bytes = 0;         // every other tensor as stored
  uint64_t parameters = 0;          // elements of the planned tensors
  double bpw = 0;                   // planned_bytes * 8 / parameters
  double error = 0;                 // sum of the chosen errors
  uint64_t budget = 0;              // for the planned tensors
};

// "3.8GB" (10^9), "3.5GiB" / "3.5G" (2^30), "900MB", "1200000000".
// InvalidArgument naming the text.
absl::StatusOr<uint64_t> ParseTargetSize(std::string_view text);
// Default candidates: int8, int4-g128, int4-g64, int4-g32.
std::vector<WeightScheme> DefaultCandidates();

// Plans `uses` (FindQuantizableWeights of `model`). `importance` maps a
// weight name to its per-input-column mean x^2 (may be empty). Conv
// weights only take 8-bit or float candidates. InvalidArgument when the
// target is below the smallest possible plan (naming both sizes) or when
// neither bytes nor bpw is set.
absl::StatusOr<SizePlan> PlanForSize(const ir::Model& model, const std::vector<WeightUse>& uses,
                                     const std::map<std::string, std::vector<float>>& importance,
                                     const SizeTarget& target, int threads);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_SIZE_PLANNER_H_
