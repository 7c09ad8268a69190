// Criterion names, the recipe's "prune" object and the PruneResult stats
// (prune_structured.h): kept apart from the pruning itself so the option
// surface can change without touching the numerics.
#include "prune/decoder/prune_structured.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace slimpack::prune {

absl::StatusOr<Criterion> ParseCriterion(std::string_view s) {
  if (s == "l1") return Criterion::kL1;
  if (s == "l2") return Criterion::kL2;
  if (s == "activation") return Criterion::kActivation;
  if (s == "loss") return Criterion::kLoss;
  return absl::InvalidArgumentError(absl::StrCat("unknown pruning criterion '", std::string(s),
                                                 "' (l1, l2, activation, loss)"));
}

std::string_view CriterionName(Criterion c) {
  switch (c) {
    case Criterion::kL1: return "l1";
    case Criterion::kL2: return "l2";
    case Criterion::kActivation: return "activation";
    case Criterion::kLoss: return "loss";
  }
  return "?";
}

nlohmann::json PruneOptionsToJson(const PruneOptions& o) {
  nlohmann::json j = {{"criterion", std::string(CriterionName(o.criterion))},
                      {"target", std::string(TargetName(o.target))},
                      {"refit", o.refit}};
  if (o.budget_params > 0) {
    j["budget_params"] = o.budget_params;
  } else if (o.ratio > 0 || o.rules.empty()) {
    j["ratio"] = o.ratio;
  }
  if (!o.rules.empty()) j["rules"] = PruneRulesToJson(o.rules);
  if (o.criterion == Criterion::kActivation || o.criterion == Criterion::kLoss || o.refit) {
    j["calib_samples"] = o.calib_samples;
    if (o.refit) j["damp"] = o.damp;
  }
  return j;
}

absl::StatusOr<PruneOptions> ParsePruneJson(const nlohmann::json& j, const std::string& file) {
  auto bad = [&](const std::string& key, const std::string& what) {
    return absl::InvalidArgumentError(file + ": prune." + key + ": " + what);
  };
  if (!j.is_object()) return absl::InvalidArgumentError(file + ": prune: expected an object");
  PruneOptions o;
  bool has_ratio = false, has_rules = false, has_budget = false;
  for (const auto& [k, v] : j.items()) {
    if (k == "ratio") {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1)) {
        return bad(k, "expected a ratio in [0, 1), found " + v.dump());
      }
      o.ratio = v.get<double>();
      has_ratio = true;
    } else if (k == "criterion" || k == "target") {
      if (!v.is_string()) return bad(k, "expected a string, found " + v.dump());
      if (k == "criterion") {
        auto c = ParseCriterion(v.get<std::string>());
        if (!c.ok()) return bad(k, std::string(c.status().message()));
        o.criterion = *c;
      } else {
        auto t = ParseTarget(v.get<std::string>());
        if (!t.ok()) return bad(k, std::string(t.status().message()));
        o.target = *t;
      }
    } else if (k == "rules") {
      auto rules = ParsePruneRules(v, file, "prune.rules");
      if (!rules.ok()) return rules.status();
      o.rules = *std::move(rules);
      has_rules = true;
    } else if (k == "budget_params") {
      if (!v.is_number() || !(v.get<double>() > 0) ||
          (v.get<double>() >= 1 && !v.is_number_integer())) {
        return bad(k, "expected a fraction of the parameters kept in (0, 1) or a parameter "
                      "count (integer >= 1), found " + v.dump());
      }
      o.budget_params = v.get<double>();
      has_budget = true;
    } else if (k == "refit") {
      if (!v.is_boolean()) return bad(k, "expected true or false, found " + v.dump());
      o.refit = v.get<bool>();
    } else if (k == "calib_samples") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        return bad(k, "expected a positive integer, found " + v.dump());
      }
      o.calib_samples = v.get<int64_t>();
    } else if (k == "damp") {
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
        return bad(k, "expected a number in (0, 1], found " + v.dump());
      }
      o.damp = v.get<double>();
    } else {
      return bad(k, "unknown key (known: budget_params, calib_samples, criterion, damp, ratio, "
                    "refit, rules, target)");
    }
  }
  if (!has_ratio && !has_rules && !has_budget) {
    return absl::InvalidArgumentError(file +
                                      ": prune: needs \"ratio\", \"rules\" or \"budget_params\"");
  }
  if (has_ratio && has_budget) {
    return absl::InvalidArgumentError(
        file + ": prune: \"ratio\" and \"budget_params\" exclude each other (the budget "
               "chooses the per-layer counts)");
  }
  return o;
}

nlohmann::json PruneResult::ToJson() const {
  nlohmann::json layers_json = nlohmann::json::array();
  for (const LayerStats& l : layers) {
    layers_json.push_back({{"layer", l.layer},
                           {"intermediate_kept", l.mlp_kept},
                           {"intermediate_size", l.mlp_total},
                           {"kv_heads_kept", l.kv_heads_kept},
                           {"num_key_value_heads", l.kv_heads_total},
                           {"heads_kept", l.heads_kept},
                           {"num_attention_heads", l.heads_total},
                           {"parameters_removed", l.params_removed},
                           {"bytes_removed", l.bytes_removed}});
  }
  return {{"changed", changed},
          {"layers", std::move(layers_json)},
          {"parameters_before", params_before},
          {"parameters_after", params_after},
          {"bytes_removed", bytes_removed},
          {"per_layer_config", per_layer_config}};
}

}  // namespace slimpack::prune
