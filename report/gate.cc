// Rules are parsed before any model runs, so a typo fails in milliseconds.
#include "report/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

namespace slimpack::report {
namespace {

using LayerFn = std::function<std::optional<double>(const LayerReport&)>;
using WeightFn = std::function<std::optional<double>(const WeightReport&)>;
using E2eFn = std::function<absl::StatusOr<double>(const EndToEndReport&)>;

std::optional<double> IfCount(const TensorErrorStats& s, double v) {
  return s.count() > 0 ? std::optional<double>(v) : std::nullopt;
}

const std::map<std::string, LayerFn>& LayerMetrics() {
  static const auto* m = new std::map<std::string, LayerFn>{
      {"sqnr", [](const LayerReport& l) { return IfCount(l.propagated, l.propagated.Sqnr()); }},
      {"cosine", [](const LayerReport& l) { return IfCount(l.propagated, l.propagated.Cosine()); }},
      {"rel_l2",
       [](const LayerReport& l) { return IfCount(l.propagated, l.propagated.RelativeL2()); }},
      {"max_abs",
       [](const LayerReport& l) { return IfCount(l.propagated, l.propagated.MaxAbs()); }},
      {"overflow_rate",
       [](const LayerReport& l) {
         return l.propagated.has_clip_range() ? IfCount(l.propagated, l.propagated.OverflowRate())
                                              : std::nullopt;
       }},
      {"quant_sqnr",
       [](const LayerReport& l) {
         return l.has_quant_only ? IfCount(l.quant_only, l.quant_only.Sqnr()) : std::nullopt;
       }},
      {"quant_rel_l2",
       [](const LayerReport& l) {
         return l.has_quant_only ? IfCount(l.quant_only, l.quant_only.RelativeL2()) : std::nullopt;
       }},
  };
  return *m;
}

const std::map<std::string, WeightFn>& WeightMetrics() {
  static const auto* m = new std::map<std::string, WeightFn>{
      {"sqnr", [](const WeightReport& w) { return IfCount(w.error, w.error.Sqnr()); }},
      {"rel_l2", [](const WeightReport& w) { return IfCount(w.error, w.error.RelativeL2()); }},
      {"max_abs", [](const WeightReport& w) { return IfCount(w.error, w.error.MaxAbs()); }},
  };
  return *m;
}

absl::StatusOr<double> NeedLm(const EndToEndReport& e, const char* what,
                              std::function<double(const NextTokenStats::Summary&)> f) {
  if (!e.lm) {
    return absl::InvalidArgumentError(std::string(what) +
                                      " needs a language model (input_ids -> logits); this "
                                      "report's task is " +
                                      e.task);
  }
  return f(*e.lm);
}

const std::map<std::string, E2eFn>& E2eMetrics() {
  static const auto* m = new std::map<std::string, E2eFn>{
      {"sqnr", [](const EndToEndReport& e) -> absl::StatusOr<double> { return e.output.Sqnr(); }},
      {"cosine",
       [](const EndToEndReport& e) -> absl::StatusOr<double> { return e.output.Cosine(); }},
      {"rel_l2",
       [](const EndToEndReport& e) -> absl::StatusOr<double> { return e.output.RelativeL2(); }},
      {"max_abs",
       [](const EndToEndReport& e) -> absl::StatusOr<double> { return e.output.MaxAbs(); }},
      {"kld",
       [](const EndToEndReport& e) {
         return NeedLm(e, "kld", [](const auto& s) { return s.mean_kld; });
       }},
      {"ppl_delta",
       [](const EndToEndReport& e) {
         return NeedLm(e, "ppl_delta", [](const auto& s) { return s.ppl_delta; });
       }},
      {"ppl_ratio",
       [](const EndToEndReport& e) {
         return NeedLm(e, "ppl_ratio", [](const auto& s) { return s.ppl_ratio; });
       }},
      {"rms_dp",
       [](const EndToEndReport& e) {
         return NeedLm(e, "rms_dp", [](const auto& s) { return s.rms_dp; });
       }},
      {"top1",
       [](const EndToEndReport& e) -> absl::StatusOr<double> {
         if (e.lm) return e.lm->top1_agreement;
         if (e.classifier) return e.classes.Top1Agreement();
         return absl::InvalidArgumentError(
             "top1 needs a language model or a classifier; this report's task is " + e.task);
       }},
      {"accuracy_delta",
       [](const EndToEndReport& e) -> absl::StatusOr<double> {
         if (!e.classifier || !e.classes.labelled()) {
           return absl::InvalidArgumentError(
               "accuracy_delta needs a classifier and labels (--labels); this report's task is " +
               e.task + (e.classifier ? " without labels" : ""));
         }
         return e.classes.AccuracyDelta();
       }},
  };
  return *m;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

bool Holds(double v, const std::string& op, double t) {
  if (op == "<=") return v <= t;
  if (op == ">=") return v >= t;
  if (op == "<") return v < t;
  return v > t;
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::vector<std::string> GateMetricNames() {
  std::vector<std::string> out;
  for (const auto& [k, v] : E2eMetrics()) out.push_back("e2e." + k);
  for (const auto& [k, v] : LayerMetrics()) out.push_back("layer." + k);
  for (const auto& [k, v] : WeightMetrics()) out.push_back("weight." + k);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<GateRule>> ParseGateRules(std::string_view text) {
  std::vector<GateRule> rules;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    GateRule r;
    r.text = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (r.text.empty()) {
      return absl::InvalidArgumentError("gate: empty rule in '" + std::string(text) +
                                        "' (rules are comma-separated, e.g. e2e.kld<=0.03)");
    }
    size_t pos = r.text.find_first_of("<>");
    if (pos == std::string::npos) {
      return absl::InvalidArgumentError("gate rule '" + r.text +
                                        "': no comparison (use <=, >=, < or >)");
    }
    r.op = r.text.substr(pos, 1);
    if (pos + 1 < r.text.size() && r.text[pos + 1] == '=') r.op += "=";
    std::string metric = Trim(r.text.substr(0, pos));
    const std::string number = Trim(r.text.substr(pos + r.op.size()));
    char* end = nullptr;
    r.threshold = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(r.threshold)) {
      return absl::InvalidArgumentError("gate rule '" + r.text + "': '" + number +
                                        "' is not a finite number");
    }
    const size_t dot = metric.find('.');
    r.scope = dot == std::string::npos ? "e2e" : metric.substr(0, dot);
    r.metric = dot == std::string::npos ? metric : metric.substr(dot + 1);
    const bool known = (r.scope == "e2e" && E2eMetrics().count(r.metric) > 0) ||
                       (r.scope == "layer" && LayerMetrics().count(r.metric) > 0) ||
                       (r.scope == "weight" && WeightMetrics().count(r.metric) > 0);
    if (!known) {
      std::string names;
      for (const auto& n : GateMetricNames()) names += (names.empty() ? "" : ", ") + n;
      return absl::InvalidArgumentError("gate rule '" + r.text + "': unknown metric '" + metric +
                                        "' (known: " + names + ")");
    }
    rules.push_back(std::move(r));
    if (comma == text.size()) break;
  }
  return rules;
}

absl::StatusOr<std::vector<GateRuleResult>> EvaluateGate(const std::vector<GateRule>& rules,
                                                         const Report& report) {
  std::vector<GateRuleResult> out;
  for (const GateRule& r : rules) {
    GateRuleResult g;
    g.rule = r.text;
    if (r.scope == "e2e") {
      absl::StatusOr<double> v = E2eMetrics().at(r.metric)(report.end_to_end);
      if (!v.ok()) {
        return absl::InvalidArgumentError("gate rule '" + r.text +
                                          "': " + std::string(v.status().message()));
      }
      g.value = *v;
      g.passed = Holds(*v, r.op, r.threshold);
      g.message =
          (g.passed ? "passed " : "FAILED ") + r.text + ": e2e." + r.metric + " = " + Num(*v);
    } else if (r.scope == "layer") {
      const LayerFn& f = LayerMetrics().at(r.metric);
      std::vector<const LayerReport*> bad;
      int64_t checked = 0;
      for (const LayerReport& l : report.layers) {
        std::optional<double> v = f(l);
        if (!v) continue;
        ++checked;
        if (!Holds(*v, r.op, r.threshold)) bad.push_back(&l);
      }
      auto introduced = [](const LayerReport* l) {
        return l->has_quant_only && l->quant_only.count() > 0
                   ? l->quant_only.Sqnr()
                   : std::numeric_limits<double>::infinity();
      };
      std::stable_sort(bad.begin(), bad.end(), [&](const LayerReport* a, const LayerReport* b) {
        return introduced(a) < introduced(b);
      });
      for (const LayerReport* l : bad) g.offenders.emplace_back(l->node, *f(*l));
      g.passed = bad.empty();
      g.message = (g.passed ? "passed " : "FAILED ") + r.text + ": " + std::to_string(bad.size()) +
                  " of " + std::to_string(checked) + " layers fail";
    } else {
      const WeightFn& f = WeightMetrics().at(r.metric);
      int64_t checked = 0;
      for (const WeightReport& w : report.weights) {
        std::optional<double> v = f(w);
        if (!v) continue;
        ++checked;
        if (!Holds(*v, r.op, r.threshold)) g.offenders.emplace_back(w.name, *v);
      }
      g.passed = g.offenders.empty();
      g.message = (g.passed ? "passed " : "FAILED ") + r.text + ": " +
                  std::to_string(g.offenders.size()) + " of " + std::to_string(checked) +
                  " weights fail";
    }
    if (!g.offenders.empty()) {
      g.message += " (worst first: ";
      for (size_t i = 0; i < g.offenders.size() && i < 5; ++i) {
        g.message += (i ? ", " : "") + g.offenders[i].first + " = " + Num(g.offenders[i].second);
      }
      if (g.offenders.size() > 5) g.message += ", ...";
      g.message += ")";
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace slimpack::report
