// CI gate rules for `slimpack report --gate`: a comma-separated list of
// "METRIC OP NUMBER" with OP one of <=, >=, <, >. METRIC is e2e.NAME (a
// bare NAME means e2e.NAME), layer.NAME (must hold for every layer) or
// weight.NAME (for every compared weight). Example:
//   e2e.kld<=0.03,layer.sqnr>=20,top1>=0.99
#ifndef SLIMPACK_REPORT_GATE_H_
#define SLIMPACK_REPORT_GATE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "report/report.h"

namespace slimpack::report {

struct GateRule {
  std::string text;    // as written, trimmed
  std::string scope;   // "e2e" | "layer" | "weight"
  std::string metric;  // without the scope
  std::string op;      // "<=", ">=", "<", ">"
  double threshold = 0;
};

// Every metric name a rule may use, "scope.name", sorted.
std::vector<std::string> GateMetricNames();

// InvalidArgument naming the rule for: an empty rule, no operator, a
// number that does not parse, an unknown metric (listing the known ones).
absl::StatusOr<std::vector<GateRule>> ParseGateRules(std::string_view text);

// Evaluates `rules` on `report`. InvalidArgument naming the rule when its
// metric does not exist for this report (e.g. e2e.kld on a classifier,
// e2e.accuracy_delta without labels). Layer offenders are listed with the
// layers that introduce error first (lowest quant-only SQNR), then depth.
absl::StatusOr<std::vector<GateRuleResult>> EvaluateGate(const std::vector<GateRule>& rules,
                                                         const Report& report);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_GATE_H_
