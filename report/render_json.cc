// report.json and the files writer. Non-finite numbers (an SQNR of +inf
// for identical tensors) become JSON null; "identical" says which.
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "report/render.h"
#include "support/atomic_file.h"
#include "support/output_path.h"

namespace slimpack::report {
namespace {

using Json = nlohmann::ordered_json;

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json ErrorJson(const TensorErrorStats& s) {
  Json j;
  j["count"] = s.count();
  j["sqnr_db"] = Num(s.Sqnr());
  j["cosine"] = Num(s.Cosine());
  j["rel_l2"] = Num(s.RelativeL2());
  j["max_abs"] = Num(s.MaxAbs());
  j["identical"] = s.count() > 0 && s.MaxAbs() == 0;
  j["nonfinite"] = s.nonfinite();
  j["ref_range"] = s.count() > 0 ? Json::array({s.RefMin(), s.RefMax()}) : Json(nullptr);
  if (s.has_clip_range()) {
    j["calibrated_range"] = Json::array({s.clip_lo(), s.clip_hi()});
    j["overflow_rate"] = s.OverflowRate();
  }
  return j;
}

Json Percentiles(const std::vector<std::pair<double, double>>& p) {
  Json a = Json::array();
  for (const auto& [pct, v] : p) a.push_back(Json{{"percent", pct}, {"value", Num(v)}});
  return a;
}

Json Environment() {
  Json env;
  env["slimpack"] = "0.1.0";
#ifdef __VERSION__
  env["compiler"] = __VERSION__;
#endif
#ifdef NDEBUG
  env["build"] = "release";
#else
  env["build"] = "debug";
#endif
  struct utsname u;
  if (uname(&u) == 0) env["os"] = std::string(u.sysname) + " " + u.machine;
  return env;
}

// Temp + fsync + rename (support/atomic_file.h): a failed write leaves the
// old file (or none) under the final name, never a truncated one.
absl::Status WriteFile(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, {text});
}

// The candidate's pruning (docs/report-schema.md "pruning"); null if none.
Json PruningJson(const Report& r) {
  if (!r.pruning) return nullptr;
  const PruningSummary& p = *r.pruning;
  Json layers = Json::array();
  for (const PrunedLayer& l : p.layers) {
    layers.push_back(Json{{"layer", l.layer},
                          {"mlp_kept_ratio", Num(l.MlpKeptRatio())},
                          {"heads_kept_ratio", Num(l.HeadsKeptRatio())},
                          {"intermediate_kept", l.mlp_kept},
                          {"intermediate_size", l.mlp_total},
                          {"heads_kept", l.heads_kept},
                          {"num_attention_heads", l.heads_total},
                          {"kv_heads_kept", l.kv_heads_kept},
                          {"num_key_value_heads", l.kv_heads_total},
                          {"parameters_removed", l.params_removed},
                          {"bytes_removed", l.bytes_removed}});
  }
  Json groups = Json::array();
  for (const PrunedGroup& g : p.groups) {
    groups.push_back(Json{{"group", g.name},
                          {"channels", g.channels},
                          {"kept", g.kept},
                          {"kept_ratio", Num(g.KeptRatio())},
                          {"prunable", g.prunable}});
  }
  return Json{{"criterion", p.criterion},
              {"groups", std::move(groups)},
              {"target", p.target},
              {"refit", p.refit},
              {"parameters_before", p.params_before},
              {"parameters_after", p.params_after},
              {"parameters_removed", p.params_before - std::min(p.params_before, p.params_after)},
              {"bytes_removed", p.bytes_removed},
              {"layers", std::move(layers)}};
}

}  // namespace

std::string ExactNameRegex(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::strchr(".^$|?*+()[]{}\\", c) != nullptr) out += '\\';
    out += c;
  }
  return out + "$";
}

Json FallbackRecipe(const Report& report) {
  if (!report.fallback) return nullptr;
  Json rules = Json::array();
  for (const std::string& w : report.fallback->weights) {
    std::string scheme = "f32";
    for (const WeightReport& wr : report.weights) {
      if (wr.name == w && wr.reference_bits_per_weight == 16) scheme = "f16";
    }
    rules.push_back(Json{{"match", ExactNameRegex(w)},
                         {"scheme", scheme},
                         {"reason", "slimpack report fallback (" + report.fallback->metric + ")"}});
  }
  return Json{{"rules", rules}};
}

Json ReportToJson(const Report& r) {
  Json j;
  j["format"] = kReportFormatName;
  j["version"] = kReportSchemaVersion;
  j["reference"] = Json{{"name", r.reference_name}, {"sha256", r.reference_sha256}};
  j["candidate"] = Json{{"name", r.candidate_name}, {"sha256", r.candidate_sha256}};
  Json inputs = Json::array();
  for (const auto& f : r.inputs) {
    inputs.push_back(Json{{"name", f.name}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  }
  j["inputs"] = inputs;
  j["calibration_table"] = r.calibration_table.empty() ? Json(nullptr) : Json(r.calibration_table);
  j["environment"] = Environment();

  const EndToEndReport& e = r.end_to_end;
  Json e2e;
  e2e["task"] = e.task;
  e2e["runs"] = e.runs;
  e2e["samples"] = e.samples;
  e2e["output"] = ErrorJson(e.output);
  if (e.lm) {
    const auto& s = *e.lm;
    e2e["lm"] = Json{{"protocol",
                      "each data row is a window of W tokens scored on its last W-1 "
                      "positions (eval/perplexity.h)"},
                     {"window", e.lm_window},
                     {"tokens", s.tokens},
                     {"mean_kld", Num(s.mean_kld)},
                     {"kld_stderr", Num(s.kld_stderr)},
                     {"kld_percentiles", Percentiles(s.kld_percentiles)},
                     {"top1_agreement", s.top1_agreement},
                     {"mean_dp", Num(s.mean_dp)},
                     {"rms_dp", Num(s.rms_dp)},
                     {"dp_percentiles", Percentiles(s.dp_percentiles)},
                     {"ppl_reference", Num(s.ppl_ref)},
                     {"ppl_candidate", Num(s.ppl_cand)},
                     {"ppl_delta", Num(s.ppl_delta)},
                     {"ppl_ratio", Num(s.ppl_ratio)}};
  }
  if (e.classifier) {
    Json c{{"samples", e.classes.samples()}, {"top1_agreement", e.classes.Top1Agreement()}};
    if (e.classes.labelled()) {
      c["accuracy_reference"] = e.classes.RefAccuracy();
      c["accuracy_candidate"] = e.classes.CandAccuracy();
      c["accuracy_delta"] = e.classes.AccuracyDelta();
    }
    e2e["classifier"] = c;
  }
  j["end_to_end"] = e2e;

  Json layers = Json::array();
  for (const LayerReport& l : r.layers) {
    Json lj;
    lj["depth"] = l.depth;
    lj["node"] = l.node;
    lj["op_type"] = l.op_type;
    lj["output"] = l.output;
    lj["reference_output"] = l.reference_output;
    lj["matched_by"] = l.matched_by;
    lj["source_nodes"] = l.source_nodes;
    lj["weights"] = l.weights;
    lj["weights_folded"] = l.weights_folded;
    lj["propagated"] = ErrorJson(l.propagated);
    lj["quant_only"] = l.has_quant_only ? ErrorJson(l.quant_only) : Json(nullptr);
    lj["inputs_from_candidate"] = l.inputs_from_candidate;
    lj["sensitivity"] = l.sensitivity ? Num(*l.sensitivity) : Json(nullptr);
    lj["sensitivity_rank"] = l.sensitivity ? Json(l.sensitivity_rank) : Json(nullptr);
    layers.push_back(lj);
  }
  j["layers"] = layers;

  Json weights = Json::array();
  for (const WeightReport& w : r.weights) {
    weights.push_back(Json{{"name", w.name},
                           {"scheme", w.scheme},
                           {"dims", w.dims},
                           {"elements", w.elements},
                           {"bits_per_weight", w.bits_per_weight},
                           {"reference_bits_per_weight", w.reference_bits_per_weight},
                           {"compared", w.compared},
                           {"note", w.note},
                           {"error", w.compared ? ErrorJson(w.error) : Json(nullptr)},
                           {"recorded_rel_l2", w.recorded_rel_l2 ? Json(*w.recorded_rel_l2)
                                                                 : Json(nullptr)}});
  }
  j["weights"] = weights;
  j["sensitivity"] = r.sensitivity_metric.empty()
                         ? Json(nullptr)
                         : Json{{"metric", r.sensitivity_metric}, {"runs", r.sensitivity_runs}};
  if (r.fallback) {
    const FallbackAdvice& f = *r.fallback;
    j["fallback"] =
        Json{{"metric", f.metric},           {"before", Num(f.before)}, {"after", Num(f.after)},
             {"extra_bytes", f.extra_bytes}, {"layers", f.layers},      {"weights", f.weights},
             {"recipe", FallbackRecipe(r)}};
  } else {
    j["fallback"] = nullptr;
  }
  j["pruning"] = PruningJson(r);
  j["unmatched_layers"] = r.unmatched_layers;
  j["notes"] = r.notes;
  if (r.gate.empty()) {
    j["gate"] = nullptr;
  } else {
    Json rules = Json::array();
    for (const GateRuleResult& g : r.gate) {
      Json off = Json::array();
      for (const auto& [n, v] : g.offenders) off.push_back(Json{{"name", n}, {"value", Num(v)}});
      rules.push_back(Json{{"rule", g.rule},
                           {"passed", g.passed},
                           {"value", g.value ? Num(*g.value) : Json(nullptr)},
                           {"offenders", off},
                           {"message", g.message}});
    }
    j["gate"] = Json{{"passed", r.gate_passed()}, {"rules", rules}};
  }
  return j;
}

absl::Status WriteReportFiles(const Report& report, const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (mkdir(dir.c_str(), 0777) != 0) {
      return absl::NotFoundError(dir + ": cannot create the report directory (" +
                                 std::strerror(errno) + ")");
    }
  } else if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(dir + ": exists and is not a directory");
  }
  // report.json last: it is what marks the directory as a slimpack report
  // (IsSlimpackReportDirectory), so it is only there once the others are.
  if (absl::Status s = WriteFile(dir + "/report.md", RenderMarkdown(report)); !s.ok()) return s;
  if (absl::Status s = WriteFile(dir + "/report.html", RenderHtml(report)); !s.ok()) return s;
  return WriteFile(dir + "/report.json",
                   ReportToJson(report).dump(2, ' ', false,
                                             nlohmann::ordered_json::error_handler_t::replace) +
                       "\n");
}

bool IsSlimpackReportDirectory(const std::string& dir) {
  return support::JsonFileHasFormat(dir + "/report.json", kReportFormatName);
}

}  // namespace slimpack::report
