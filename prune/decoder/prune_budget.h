// Global selection of per-layer group counts under a parameter budget
// (`--prune-budget-params`): groups of every layer compete, ranked by their
// importance normalised within their layer.
//
// Normalisation: a group's score s_i is divided by the mean score of the
// groups of the same kind in the same layer, n_i = s_i / mean_j s_j (a layer
// whose scores are all zero gives n_i = 0). So 1.0 is "an average group of
// its layer", whatever the criterion's scale or the layer's depth, and a
// layer with a few unimportant groups loses them before a layer whose groups
// are all alike. Groups are removed in ascending n_i (ties: lower layer,
// MLP before heads, lower index) until the model's parameters are at most
// the budget, keeping at least one group of each kind per layer. KV-head
// groups (GQA-aware: a KV head with its r query heads) and MLP channels
// compete in one list, each costing its own parameter count.
#ifndef SLIMPACK_PRUNE_DECODER_PRUNE_BUDGET_H_
#define SLIMPACK_PRUNE_DECODER_PRUNE_BUDGET_H_

#include <cstdint>
#include <vector>

#include "prune/decoder/prune_groups.h"

namespace slimpack::prune {

// One (layer, kind) whose count the budget chooses.
struct BudgetSlot {
  int64_t layer = 0;
  GroupKind kind = GroupKind::kMlpChannel;
  std::vector<double> scores;  // per group, the criterion's importance
  uint64_t group_params = 0;   // parameters one group holds
};

// Normalised scores of one slot (see above).
std::vector<double> NormalisedScores(const std::vector<double>& scores);

// Groups to remove per slot (same order as `slots`) so that at least
// `params_to_remove` parameters go; fewer when every slot is down to one
// group. Deterministic.
std::vector<int64_t> ChooseBudgetDrops(const std::vector<BudgetSlot>& slots,
                                       uint64_t params_to_remove);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_DECODER_PRUNE_BUDGET_H_
