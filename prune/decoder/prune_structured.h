// Structured pruning of a Hugging Face Llama-family decoder checkpoint:
// MLP intermediate channels and whole KV-head groups (prune/decoder/prune_groups.h),
// scored by a documented criterion, removed per layer by a global ratio,
// per-layer rules (prune/decoder/prune_rules.h) or a parameter budget
// (prune/decoder/prune_budget.h), with an optional least-squares refit of
// down_proj / o_proj on calibration data.
//
// Criteria (per group, deterministic; ties keep the lower index):
//   l1          sum |w| over every member row/column of the group
//   l2          sqrt(sum w^2) over the same weights
//   activation  Wanda: sum |w_ij| * sqrt(mean x_j^2) over the group, x_j the
//               calibration input feature j of the linear layer the weight
//               belongs to (gate/up/q/k/v: the normed hidden state;
//               down: the SwiGLU activation of channel c; o: the attention
//               output feature)
//   loss        calibration output error of the consumer (down_proj /
//               o_proj) when the group alone is removed, no refit
//               (prune/decoder/prune_loss.h)
// Refit: with X the calibration input of down_proj (o_proj) and S the kept
// input features, W_S' = argmin ||X W^T - X_S W_S'^T||^2
//       = W (X^T X)[:, S] ((X^T X)[S, S] + damp I)^-1,
// so the layer reconstructs its original output from the kept channels
// (inputs captured on the unpruned model).
#ifndef SLIMPACK_PRUNE_DECODER_PRUNE_STRUCTURED_H_
#define SLIMPACK_PRUNE_DECODER_PRUNE_STRUCTURED_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "prune/decoder/prune_groups.h"
#include "prune/decoder/prune_rules.h"

namespace slimpack::prune {

enum class Criterion { kL1, kL2, kActivation, kLoss };

absl::StatusOr<Criterion> ParseCriterion(std::string_view s);  // l1|l2|activation|loss
std::string_view CriterionName(Criterion c);

// How many groups each layer loses, per kind (MLP channels, KV-head
// groups): the first matching rule of `rules` decides; layers and kinds no
// rule covers follow `ratio` and `target`, or, with `budget_params`, the
// global budget selection.
struct PruneOptions {
  double ratio = 0;  // fraction of MLP channels / KV heads removed per layer
  Criterion criterion = Criterion::kL2;
  Target target = Target::kBoth;
  bool refit = false;
  std::vector<PruneRule> rules;
  // 0: no budget. In (0, 1): the fraction of the model's parameters kept;
  // >= 1: the parameter count the pruned model may hold at most.
  double budget_params = 0;
  std::vector<std::string> calib_paths;  // needed by activation, loss, refit
  int64_t calib_samples = 16;            // calibration runs
  double damp = 0.01;  // refit ridge, fraction of mean diag(X^T X)
  int threads = 1;
  bool active() const { return ratio > 0 || !rules.empty() || budget_params > 0; }
};

struct LayerStats {
  int64_t layer = 0;
  int64_t mlp_kept = 0, kv_heads_kept = 0, heads_kept = 0;
  int64_t mlp_total = 0, kv_heads_total = 0, heads_total = 0;  // before pruning
  uint64_t params_removed = 0;
  // Bytes the removed parameters occupied in the input checkpoint (their
  // source dtype; sliced tensors are stored f32 afterwards).
  uint64_t bytes_removed = 0;
};

struct PruneResult {
  bool changed = false;
  std::vector<LayerStats> layers;
  int64_t removed_mlp = 0, removed_kv = 0;  // summed over layers
  uint64_t params_before = 0, params_after = 0, bytes_removed = 0;
  // config.json holds per-layer lists (sizes differ between layers).
  bool per_layer_config = false;
  std::vector<std::string> unprunable;
  std::vector<std::string> warnings;  // e.g. stock HF cannot load the result
  nlohmann::json ToJson() const;  // stats of the producer.passes record
};

nlohmann::json PruneOptionsToJson(const PruneOptions& o);
// The recipe's "prune" object (PruneOptionsToJson's keys: "ratio",
// "rules" or "budget_params" required, "ratio" and "budget_params" not
// together), strictly: InvalidArgument naming `file`, the key (rules by
// index) and the value for an unknown key, a wrong type or a value out of
// range.
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
// nodes) in place and puts the rewritten config.json into
// checkpoint.carried_overrides (no file is written). Options that remove
// nothing (ratio 0, rules of ratio 0) change nothing. InvalidArgument for a
// ratio outside [0, 1), a budget below what one group per layer needs or
// with a ratio; FailedPrecondition naming --calib when the criterion or
// refit needs calibration data and none is given.
absl::StatusOr<PruneResult> PruneDecoder(ir::Model& checkpoint, const PruneOptions& options);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_DECODER_PRUNE_STRUCTURED_H_
