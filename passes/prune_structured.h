// Structured pruning of a Hugging Face Llama-family decoder checkpoint:
// MLP intermediate channels and whole KV-head groups (passes/prune_groups.h),
// scored by a documented criterion, removed in equal numbers from every
// layer (so config.json keeps a single intermediate_size /
// num_key_value_heads / num_attention_heads), with an optional
// least-squares refit of down_proj / o_proj on calibration data.
//
// Criteria (per group, deterministic; ties keep the lower index):
//   l1          sum |w| over every member row/column of the group
//   l2          sqrt(sum w^2) over the same weights
//   activation  Wanda: sum |w_ij| * sqrt(mean x_j^2) over the group, x_j the
//               calibration input feature j of the linear layer the weight
//               belongs to (gate/up/q/k/v: the normed hidden state;
//               down: the SwiGLU activation of channel c; o: the attention
//               output feature)
// Refit: with X the calibration input of down_proj (o_proj) and S the kept
// input features, W_S' = argmin ||X W^T - X_S W_S'^T||^2
//       = W (X^T X)[:, S] ((X^T X)[S, S] + damp I)^-1,
// so the layer reconstructs its original output from the kept channels
// (inputs captured on the unpruned model).
#ifndef SLIMPACK_PASSES_PRUNE_STRUCTURED_H_
#define SLIMPACK_PASSES_PRUNE_STRUCTURED_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/ir/graph.h"
#include "nlohmann/json.hpp"
#include "passes/prune_groups.h"

namespace slimpack::prune {

enum class Criterion { kL1, kL2, kActivation };
enum class Target { kMlp, kHeads, kBoth };

absl::StatusOr<Criterion> ParseCriterion(std::string_view s);  // l1|l2|activation
absl::StatusOr<Target> ParseTarget(std::string_view s);        // mlp|heads|both
std::string_view CriterionName(Criterion c);
std::string_view TargetName(Target t);

struct PruneOptions {
  double ratio = 0;  // fraction of MLP channels / KV heads removed per layer
  Criterion criterion = Criterion::kL2;
  Target target = Target::kBoth;
  bool refit = false;
  std::vector<std::string> calib_paths;  // needed by activation and refit
  int64_t calib_samples = 16;            // calibration runs
  double damp = 0.01;  // refit ridge, fraction of mean diag(X^T X)
  int threads = 1;
  // Directory for the rewritten config.json the artifact carries (a fresh
  // directory under the system temp dir when empty).
  std::string config_dir;
};

struct LayerStats {
  int64_t layer = 0;
  int64_t mlp_kept = 0, kv_heads_kept = 0, heads_kept = 0;
};

struct PruneResult {
  bool changed = false;
  int64_t removed_mlp_per_layer = 0, removed_kv_per_layer = 0;
  std::vector<LayerStats> layers;
  uint64_t params_before = 0, params_after = 0;
  std::vector<std::string> unprunable;
  // The rewritten config.json now in checkpoint.carried_files, and the
  // directory created for it ("" when options.config_dir was given): the
  // caller removes it once the artifact is written.
  std::string config_path, created_dir;
  nlohmann::json ToJson() const;  // stats of the producer.passes record
};

nlohmann::json PruneOptionsToJson(const PruneOptions& o);
// The recipe's "prune" object (PruneOptionsToJson's keys, all optional but
// "ratio"), strictly: InvalidArgument naming `file`, the key and the value
// for an unknown key, a wrong type or a value out of range.
absl::StatusOr<PruneOptions> ParsePruneJson(const nlohmann::json& j, const std::string& file);

// Weight name -> sqrt(mean x_j^2) of that linear layer's input features.
using InputNorms = std::map<std::string, std::vector<double>>;

// Importance of every group of `kind` in `layer` (index = channel or KV
// head) under `c`; `norms` is read by kActivation only and must hold the
// gate, down (MLP) or q, o (heads) weights of the layer.
absl::StatusOr<std::vector<double>> GroupImportance(const ir::Model& checkpoint,
                                                    const DecoderGroups& g, int64_t layer,
                                                    GroupKind kind, Criterion c,
                                                    const InputNorms& norms);

// Least-squares refit (see above): W is [rows, n] row-major, xtx [n, n];
// returns the [rows, kept.size()] weight. Deterministic (double Cholesky).
std::vector<float> RefitColumns(const std::vector<float>& w, int64_t rows, int64_t n,
                                const std::vector<double>& xtx,
                                const std::vector<int64_t>& kept, double damp);
// sum over rows of (w_r - w'_r P) XtX (w_r - w'_r P)^T: the summed squared
// output error over the calibration rows when only `kept` inputs remain with
// weight `w_kept` ([rows, kept]).
double OutputError(const std::vector<float>& w, int64_t rows, int64_t n,
                   const std::vector<double>& xtx, const std::vector<int64_t>& kept,
                   const std::vector<float>& w_kept);

// Prunes `checkpoint` (an ImportSafetensors model: HF tensors, no graph
// nodes) in place. ratio 0 changes nothing. InvalidArgument for a ratio
// outside [0, 1); FailedPrecondition naming --calib when the criterion or
// refit needs calibration data and none is given.
absl::StatusOr<PruneResult> PruneDecoder(ir::Model& checkpoint, const PruneOptions& options);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PASSES_PRUNE_STRUCTURED_H_
