// Weight sparsification: zeroes weights of linear layers, unstructured (a
// ratio per output row) or 2:4 semi-structured (at most 2 nonzeros in every
// 4 consecutive input features of a row), and records the pattern on each
// tensor (ir::SparsityInfo) so the shard writer stores and describes it.
//
// Scores (per element w_ij of output row i, input feature j):
//   magnitude: |w_ij|
//   wanda:     |w_ij| * ||x_j||_2, x_j the calibration inputs of feature j
//              (Sun et al., "A Simple and Effective Pruning Approach for
//              Large Language Models", arXiv 2306.11695), compared within a
//              row as the paper does. The norms come from one capture on the
//              model before any weight is zeroed (one shot, not sequential).
// Unstructured: in each row the floor(ratio * cols) lowest scores are
// zeroed. 2:4: in each group of 4 consecutive inputs of a row the 2 highest
// scores are kept. Ties keep the lower index; NaN scores count as largest.
//
// Weights: HF checkpoints: the q/k/v/o/gate/up/down projections (by role);
// graphs: float initializers used only as MatMul/Gemm B (rank 2, either
// orientation) or Conv W (rows = output channels, inputs = the flattened
// [I, kh, kw]). Not sparsified by default: embeddings and Gather tables
// (a lookup skips no work for zeros), lm_head (the logits are the most
// sensitive layer), norms and biases (1-D, tiny). Wanda needs a capture,
// which covers MatMul/Gemm and HF projections; Conv weights fall back to
// magnitude (noted in the result).
//
// Order in `convert`: after structured pruning and graph passes, before
// quantization (formats/shard/spec.md section 5, "Sparsity").
#ifndef SLIMPACK_PRUNE_SPARSIFY_H_
#define SLIMPACK_PRUNE_SPARSIFY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/sparse.h"
#include "nlohmann/json.hpp"

namespace slimpack::sparsify {

enum class Criterion { kMagnitude, kWanda };
absl::StatusOr<Criterion> ParseCriterion(std::string_view s);  // magnitude|wanda
std::string_view CriterionName(Criterion c);

struct SparsifyOptions {
  // Unstructured: fraction of each row zeroed, in [0, 1). 2:4: 0.5 (the
  // pattern fixes it). 0 with unstructured: a no-op.
  double ratio = 0;
  ir::SparsityPattern pattern = ir::SparsityPattern::kUnstructured;
  Criterion criterion = Criterion::kMagnitude;
  std::vector<std::string> calib_paths;  // wanda
  int64_t calib_samples = 16;            // calibration runs (wanda)
  int threads = 1;                       // capture only; results do not depend on it
  // For a model that goes straight to the shard writer (convert without
  // quantization): each weight is sparsified here only to count its zeros
  // (the stats), a block of rows at a time read through the file, and is
  // replaced by an ir::TensorData::Deferred placeholder whose bytes
  // SparsifyResult::produce makes again when the writer asks. So no
  // sparsified weight waits in memory for the others. Same bytes and stats.
  bool defer = false;
};

struct TensorStats {
  std::string name;
  uint64_t numel = 0;
  uint64_t zeros = 0;  // after sparsification
  std::string note;    // e.g. "conv: magnitude (wanda needs a MatMul/Gemm capture)"
};

struct SparsifyResult {
  std::vector<TensorStats> tensors;  // in initializer order
  uint64_t numel = 0, zeros = 0;     // over the sparsified tensors
  // "name: reason" for eligible weights left dense (2:4 on a row length
  // that is not a multiple of 4).
  std::vector<std::string> skipped;
  nlohmann::json ToJson() const;     // producer.passes stats
  // With SparsifyOptions::defer, when any weight was deferred: the bytes of
  // the deferred weight named `name` (its own dtype, pruned elements zero),
  // the bytes the eager path stores. Thread-safe; each call sparsifies
  // anew and gives the source's mapped pages back. NotFound for a name that
  // was not deferred.
  std::function<absl::StatusOr<ir::TensorData>(const std::string& name)> produce;
};

// Row-level numerics, exposed for tests: zeroes entries of the row-major
// view `v` of `w` (w[v.At(r, c)]) as the options' pattern and ratio say,
// scoring |w| * col_scale[c] (col_scale empty: magnitude). Returns the
// number of entries zeroed by this call. InvalidArgument when 2:4 is asked
// of a view whose cols are not a multiple of 4, or col_scale has the wrong
// length.
absl::StatusOr<uint64_t> SparsifyMatrix(std::vector<float>& w, const ir::SparseView& v,
                                        ir::SparsityPattern pattern, double ratio,
                                        const std::vector<double>& col_scale);

// Sparsifies every eligible weight of `model` in place (new owned bytes in
// the tensor's own dtype, elements zeroed; tensor.sparsity set). Errors:
// InvalidArgument for a ratio outside [0, 1) or 2:4 with a ratio other
// than 0.5 (a 2:4 weight whose input count is not a multiple of 4 is left
// dense and listed in `skipped`); FailedPrecondition naming --calib when wanda has no
// calibration data; FailedPrecondition when the model is already quantized.
absl::StatusOr<SparsifyResult> SparsifyWeights(ir::Model& model, const SparsifyOptions& options);

// The recipe's "sparsity" object: {"ratio": R, "pattern": "unstructured" |
// "2:4", "criterion": "magnitude" | "wanda", "calib_samples": N}; unknown
// keys and wrong types are InvalidArgument naming `file` and the key.
absl::StatusOr<SparsifyOptions> ParseSparsifyJson(const nlohmann::json& j,
                                                  const std::string& file);
nlohmann::json SparsifyOptionsToJson(const SparsifyOptions& o);

}  // namespace slimpack::sparsify

#endif  // SLIMPACK_PRUNE_SPARSIFY_H_
