// Parsing and matching of per-layer pruning rules (prune/decoder/prune_rules.h).
#include "prune/decoder/prune_rules.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "support/regex.h"

namespace slimpack::prune {
namespace {

using nlohmann::json;

absl::Status KeyError(const std::string& file, const std::string& path, const std::string& what,
                      const json& found) {
  return absl::InvalidArgumentError(
      absl::StrCat(file, ": ", path, ": ", what, ", found ", found.dump()));
}

absl::StatusOr<PruneRule> ParseRule(const json& r, const std::string& file,
                                    const std::string& path) {
  if (!r.is_object()) return KeyError(file, path, "expected an object", r);
  PruneRule rule;
  bool has_match = false;
  for (const auto& [k, v] : r.items()) {
    const std::string kp = path + "." + k;
    if (k == "match") {
      if (!v.is_string()) return KeyError(file, kp, "expected a regex string", v);
      rule.match = v.get<std::string>();
      if (auto re = support::Regex::Compile(rule.match); !re.ok()) {
        return KeyError(file, kp, "invalid regex (" + std::string(re.status().message()) + ")", v);
      }
      has_match = true;
    } else if (k == "target") {
      if (!v.is_string()) return KeyError(file, kp, "expected mlp, heads or both", v);
      auto t = ParseTarget(v.get<std::string>());
      if (!t.ok()) return KeyError(file, kp, "expected mlp, heads or both", v);
      rule.target = *t;
    } else if (k == "ratio") {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1)) {
        return KeyError(file, kp, "expected a fraction removed in [0, 1)", v);
      }
      rule.ratio = v.get<double>();
    } else if (k == "keep") {
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
        return KeyError(file, kp, "expected a fraction kept in (0, 1]", v);
      }
      rule.keep = v.get<double>();
    } else {
      return KeyError(file, kp, "unknown key (known: keep, match, ratio, target)", json(k));
    }
  }
  if (!has_match) return KeyError(file, path, "a rule needs \"match\"", r);
  if (rule.ratio.has_value() == rule.keep.has_value()) {
    return KeyError(file, path, "a rule needs exactly one of \"ratio\" and \"keep\"", r);
  }
  return rule;
}

}  // namespace

absl::StatusOr<Target> ParseTarget(std::string_view s) {
  if (s == "mlp") return Target::kMlp;
  if (s == "heads") return Target::kHeads;
  if (s == "both") return Target::kBoth;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pruning target '", std::string(s), "' (mlp, heads, both)"));
}

std::string_view TargetName(Target t) {
  switch (t) {
    case Target::kMlp: return "mlp";
    case Target::kHeads: return "heads";
    case Target::kBoth: return "both";
  }
  return "?";
}

std::string LayerMatchName(int64_t layer) { return absl::StrCat("model.layers.", layer, "."); }

bool TargetCovers(Target t, GroupKind kind) {
  return t == Target::kBoth || (kind == GroupKind::kMlpChannel) == (t == Target::kMlp);
}

int64_t RuleDrop(const PruneRule& r, int64_t n) {
  if (r.keep) return n - std::max<int64_t>(std::llround(*r.keep * n), 1);
  return std::min<int64_t>(std::llround(r.ratio.value_or(0) * n), n - 1);
}

const PruneRule* FirstRule(const std::vector<PruneRule>& rules, int64_t layer, GroupKind kind) {
  const std::string name = LayerMatchName(layer);
  for (const PruneRule& r : rules) {
    if (!TargetCovers(r.target, kind)) continue;
    // Validated by ParsePruneRules; an unparsed rule never matches.
    auto re = support::Regex::Compile(r.match);
    if (re.ok() && re->Search(name)) return &r;
  }
  return nullptr;
}

absl::StatusOr<std::vector<PruneRule>> ParsePruneRules(const json& j, const std::string& file,
                                                       const std::string& where) {
  if (!j.is_array()) return KeyError(file, where, "expected an array of rules", j);
  std::vector<PruneRule> rules;
  for (size_t i = 0; i < j.size(); ++i) {
    auto r = ParseRule(j[i], file, absl::StrCat(where, "[", i, "]"));
    if (!r.ok()) return r.status();
    rules.push_back(*std::move(r));
  }
  return rules;
}

absl::StatusOr<std::vector<PruneRule>> LoadPruneRulesFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(path + ": cannot open the pruning rules file");
  std::stringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(path + ": not valid JSON");
  if (j.is_object()) {
    if (j.size() != 1 || !j.contains("rules")) {
      return KeyError(path, "(top level)", "expected an array or {\"rules\": [...]}", j);
    }
    return ParsePruneRules(j["rules"], path, "rules");
  }
  return ParsePruneRules(j, path, "rules");
}

json PruneRulesToJson(const std::vector<PruneRule>& rules) {
  json out = json::array();
  for (const PruneRule& r : rules) {
    json o = {{"match", r.match}, {"target", std::string(TargetName(r.target))}};
    if (r.ratio) o["ratio"] = *r.ratio;
    if (r.keep) o["keep"] = *r.keep;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace slimpack::prune
