// Per-layer pruning rules (`--prune-rules FILE`, the recipe's prune.rules):
// an ordered list of {match, target, ratio | keep}; for each decoder layer
// and each group kind the first rule that matches decides how many groups
// that layer keeps.
#ifndef SLIMPACK_PRUNE_DECODER_PRUNE_RULES_H_
#define SLIMPACK_PRUNE_DECODER_PRUNE_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "prune/decoder/prune_groups.h"

namespace slimpack::prune {

enum class Target { kMlp, kHeads, kBoth };

// One rule. `match` is an ECMAScript regex searched (std::regex_search) in
// the layer's HF module prefix "model.layers.<L>." (e.g. "layers\\.(0|7)\\."
// for the first and last layer of an 8-layer model). Exactly one of
// `ratio` (fraction of the layer's groups removed, [0, 1)) and `keep`
// (fraction kept, (0, 1]) is set.
struct PruneRule {
  std::string match;
  Target target = Target::kBoth;
  std::optional<double> ratio, keep;
};

// The layer name rules are matched against.
std::string LayerMatchName(int64_t layer);

// Whether `t` covers groups of `kind`.
bool TargetCovers(Target t, GroupKind kind);

// Groups removed out of `n` for a rule: ratio -> min(round(ratio n), n - 1);
// keep -> n - max(round(keep n), 1).
int64_t RuleDrop(const PruneRule& r, int64_t n);

// The first rule matching `layer` whose target covers `kind`, or null.
const PruneRule* FirstRule(const std::vector<PruneRule>& rules, int64_t layer, GroupKind kind);

// A JSON array of rule objects, strictly: InvalidArgument
// "<file>: <where>[<i>].<key>: <what>, found <value>" for an unknown key, a
// wrong type, an invalid regex, a value out of range, or a rule with both
// or neither of ratio / keep. `where` names the list ("rules" for a
// --prune-rules file, "prune.rules" in a recipe).
absl::StatusOr<std::vector<PruneRule>> ParsePruneRules(const nlohmann::json& j,
                                                       const std::string& file,
                                                       const std::string& where);
// Reads and parses a --prune-rules file: a JSON array, or an object
// {"rules": [...]}. NotFound / InvalidArgument naming the file.
absl::StatusOr<std::vector<PruneRule>> LoadPruneRulesFile(const std::string& path);
nlohmann::json PruneRulesToJson(const std::vector<PruneRule>& rules);

absl::StatusOr<Target> ParseTarget(std::string_view s);  // mlp|heads|both
std::string_view TargetName(Target t);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_DECODER_PRUNE_RULES_H_
