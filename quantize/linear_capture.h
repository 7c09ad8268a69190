// Runs a model on calibration samples and captures what weight quantizers
// need about the inputs of chosen linear layers: X^T X (GPTQ), mean |x| and
// mean x^2 (AWQ, imatrix), and the first rows of X themselves (AWQ's search
// measures the layer output error on them).
//
// Samples run one after another and the observer runs on the calling thread
// after each node, so every statistic accumulates in dataset order and is
// bit-identical whatever the interpreter's thread count.
#ifndef SLIMPACK_QUANTIZE_LINEAR_CAPTURE_H_
#define SLIMPACK_QUANTIZE_LINEAR_CAPTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "calibration/linear_stats.h"
#include "ir/graph.h"
#include "support/progress.h"

namespace slimpack::quantize {

struct CaptureRequest {
  bool hessian = false;    // collect X^T X
  int64_t keep_rows = 0;   // rows of X to keep (the first ones seen)
  // Stage "calibration", one event per run; `context` says what for.
  support::ProgressSink progress;
  std::string context;
  // Values fed to run i beside its sample, (*fed)[i]; null: none. A graph
  // sliced to start from them (ir/graph_slice.h) reads only some of a
  // sample's inputs: with `fed` set, only those the graph declares are fed.
  const std::vector<std::map<std::string, runtime::RtTensor>>* fed = nullptr;
  // The linears to capture: those of the graph `model`'s was sliced from,
  // when the slice stops at their inputs (float_walk.h). Null: those of
  // model.graph.
  const std::vector<calibration::LinearLayer>* layers = nullptr;
  // Graph outputs handed back per run in (*kept)[i] (a float walk's next
  // cached values, quantize/float_walk.h), set when `kept` is. Once they
  // pass `keep_max_bytes` none are kept: *kept becomes nullopt.
  std::vector<std::string> keep;
  uint64_t keep_max_bytes = 0;
  std::optional<std::vector<std::map<std::string, runtime::RtTensor>>>* kept = nullptr;
};

struct CapturedInput {
  calibration::LinearLayer layer;
  uint64_t rows = 0;
  std::vector<double> mean_abs, mean_sq;  // per input feature
  std::vector<double> xtx;                // K*K sum (not normalised) or empty
  std::vector<float> samples;             // kept rows, [kept, K] row-major
  int64_t kept = 0;
};

// Runs `model` on up to `max_runs` runs of `data` (from its start) and
// returns, keyed by weight name, the captured inputs of every linear layer
// of model.graph whose weight is in `weights`. NotFound naming a weight
// that is not the constant B of a MatMul/Gemm; FailedPrecondition when a
// layer saw no rows; run errors name the sample; InvalidArgument when
// `request.fed` holds fewer runs than the data gives.
absl::StatusOr<std::map<std::string, CapturedInput>> CaptureLinearInputs(
    const ir::Model& model, const std::vector<std::string>& weights,
    calibration::Dataset& data, int64_t max_runs, const CaptureRequest& request,
    int threads);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_LINEAR_CAPTURE_H_
