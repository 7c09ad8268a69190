// Budget-driven choice of per-layer group counts (prune/decoder/prune_budget.h).
#include "prune/decoder/prune_budget.h"

#include <algorithm>
#include <tuple>

namespace slimpack::prune {

std::vector<double> NormalisedScores(const std::vector<double>& scores) {
  double sum = 0;
  for (double s : scores) sum += s;
  std::vector<double> out(scores.size(), 0.0);
  if (scores.empty() || sum <= 0) return out;
  const double mean = sum / static_cast<double>(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) out[i] = scores[i] / mean;
  return out;
}

std::vector<int64_t> ChooseBudgetDrops(const std::vector<BudgetSlot>& slots,
                                       uint64_t params_to_remove) {
  struct Candidate {
    double score;
    int64_t layer;
    int kind;
    int64_t index;
    size_t slot;
  };
  std::vector<Candidate> all;
  for (size_t s = 0; s < slots.size(); ++s) {
    const std::vector<double> n = NormalisedScores(slots[s].scores);
    for (size_t i = 0; i < n.size(); ++i) {
      all.push_back({n[i], slots[s].layer, slots[s].kind == GroupKind::kMlpChannel ? 0 : 1,
                     static_cast<int64_t>(i), s});
    }
  }
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.score, a.layer, a.kind, a.index) <
           std::tie(b.score, b.layer, b.kind, b.index);
  });
  std::vector<int64_t> drops(slots.size(), 0);
  uint64_t removed = 0;
  for (const Candidate& c : all) {
    if (removed >= params_to_remove) break;
    const int64_t n = static_cast<int64_t>(slots[c.slot].scores.size());
    if (drops[c.slot] + 1 >= n) continue;  // keep one group
    ++drops[c.slot];
    removed += slots[c.slot].group_params;
  }
  return drops;
}

}  // namespace slimpack::prune
