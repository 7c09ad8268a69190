// report.md: what a CI log or pull-request comment needs in ~40 lines:
// gate result, end-to-end numbers, worst layers, fallback advice.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "report/render.h"

namespace slimpack::report {
namespace {

std::string F(double v, const char* fmt = "%.4g") {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Layers ordered by the error they introduce (quant-only SQNR, lowest
// first), then by the error they carry.
std::vector<const LayerReport*> WorstLayers(const Report& r) {
  std::vector<const LayerReport*> v;
  for (const LayerReport& l : r.layers) {
    if (l.propagated.count() > 0) v.push_back(&l);
  }
  auto key = [](const LayerReport* l) {
    return std::make_pair(l->has_quant_only && l->quant_only.count() > 0
                              ? l->quant_only.Sqnr()
                              : std::numeric_limits<double>::infinity(),
                          l->propagated.Sqnr());
  };
  std::stable_sort(v.begin(), v.end(),
                   [&](const LayerReport* a, const LayerReport* b) { return key(a) < key(b); });
  return v;
}

// Per-layer kept ratios and what pruning removed (from the prune record).
std::string PruningMarkdown(const PruningSummary& p) {
  std::string md = "\n## Pruning (" + p.criterion + ", " + p.target +
                   (p.refit ? ", refit" : "") + ")\n\n" + std::to_string(p.params_before) +
                   " → " + std::to_string(p.params_after) + " parameters (" +
                   std::to_string(p.params_before - std::min(p.params_before, p.params_after)) +
                   " and " + std::to_string(p.bytes_removed) + " bytes removed)\n\n"
                   "| layer | MLP kept | heads kept | parameters removed | bytes removed |\n"
                   "|---|---|---|---|---|\n";
  if (!p.groups.empty()) {  // an ONNX graph: channel groups, not decoder layers
    md = md.substr(0, md.find("| layer |")) + "| channel group | kept | channels |\n|---|---|---|\n";
    for (const PrunedGroup& g : p.groups) {
      md += "| `" + g.name + "`" + (g.prunable ? "" : " (unprunable)") + " | " +
            F(100 * g.KeptRatio(), "%.1f") + "% (" + std::to_string(g.kept) + ") | " +
            std::to_string(g.channels) + " |\n";
    }
    return md;
  }
  for (const PrunedLayer& l : p.layers) {
    md += "| " + std::to_string(l.layer) + " | " + F(100 * l.MlpKeptRatio(), "%.1f") + "% (" +
          std::to_string(l.mlp_kept) + ") | " + F(100 * l.HeadsKeptRatio(), "%.1f") + "% (" +
          std::to_string(l.heads_kept) + ") | " + std::to_string(l.params_removed) + " | " +
          std::to_string(l.bytes_removed) + " |\n";
  }
  return md;
}

}  // namespace

std::string RenderMarkdown(const Report& r) {
  std::string md = "# slimpack report: " + r.candidate_name + " vs " + r.reference_name + "\n\n";
  if (!r.gate.empty()) {
    md += std::string("**Gate: ") + (r.gate_passed() ? "PASSED" : "FAILED") + "**\n\n";
    for (const GateRuleResult& g : r.gate) md += "- " + g.message + "\n";
    md += "\n";
  }
  const EndToEndReport& e = r.end_to_end;
  md += "## End to end (" + e.task + ", " + std::to_string(e.samples) + " samples in " +
        std::to_string(e.runs) + " runs)\n\n| metric | value |\n|---|---|\n";
  md += "| output SQNR (dB) | " + F(e.output.Sqnr()) + " |\n";
  md += "| output cosine | " + F(e.output.Cosine(), "%.6f") + " |\n";
  md += "| output max abs error | " + F(e.output.MaxAbs()) + " |\n";
  if (e.lm) {
    const auto& s = *e.lm;
    md += "| mean KLD (nats) | " + F(s.mean_kld, "%.6f") + " ± " + F(s.kld_stderr, "%.6f") + " |\n";
    md += "| top-1 token agreement | " + F(100 * s.top1_agreement, "%.2f") + "% |\n";
    md += "| PPL reference → candidate | " + F(s.ppl_ref, "%.4f") + " → " + F(s.ppl_cand, "%.4f") +
          " (Δ " + F(s.ppl_delta, "%+.4f") + ") |\n";
    md += "| RMS Δp | " + F(100 * s.rms_dp, "%.3f") + "% |\n";
  }
  if (e.classifier) {
    md += "| top-1 agreement | " + F(100 * e.classes.Top1Agreement(), "%.2f") + "% |\n";
    if (e.classes.labelled()) {
      md += "| accuracy reference → candidate | " + F(100 * e.classes.RefAccuracy(), "%.2f") +
            "% → " + F(100 * e.classes.CandAccuracy(), "%.2f") + "% (Δ " +
            F(100 * e.classes.AccuracyDelta(), "%+.2f") + " pts) |\n";
    }
  }
  if (r.pruning) md += PruningMarkdown(*r.pruning);
  md +=
      "\n## Worst layers (by error introduced: quant-only SQNR)\n\n"
      "| layer | op | quant-only SQNR | SQNR | cosine | sensitivity rank |\n"
      "|---|---|---|---|---|---|\n";
  auto worst = WorstLayers(r);
  for (size_t i = 0; i < worst.size() && i < 8; ++i) {
    const LayerReport& l = *worst[i];
    md += "| `" + l.node + "` | " + l.op_type + " | " +
          (l.has_quant_only ? F(l.quant_only.Sqnr(), "%.2f") : std::string("n/a")) + " | " +
          F(l.propagated.Sqnr(), "%.2f") + " | " + F(l.propagated.Cosine(), "%.5f") + " | " +
          (l.sensitivity ? std::to_string(l.sensitivity_rank) : std::string("-")) + " |\n";
  }
  if (r.fallback) {
    const FallbackAdvice& f = *r.fallback;
    md += "\n## Fallback advice\n\nKeep " + std::to_string(f.layers.size()) +
          " layer(s) at reference precision to bring " + f.metric + " from " + F(f.before, "%.5g") +
          " to " + F(f.after, "%.5g") + " at +" + F(f.extra_bytes / (1024.0 * 1024.0), "%.3f") +
          " MiB (on " + std::to_string(r.sensitivity_runs) + " runs):\n\n";
    for (const std::string& l : f.layers) md += "- `" + l + "`\n";
    md += "\nRecipe fragment (first match wins; prepend to your rules):\n\n```json\n" +
          FallbackRecipe(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
          "\n```\n";
  }
  std::vector<const WeightReport*> reencoded;
  for (const WeightReport& w : r.weights) {
    if (w.recorded_rel_l2) reencoded.push_back(&w);
  }
  if (!reencoded.empty()) {
    md += "\n## Encoded again in the candidate's file\n\nNo type of the file held these "
          "weights' grid; the relative L2 their re-encoding added, as the file records it, and "
          "their error against the reference:\n\n| weight | scheme | re-encoding rel L2 | rel L2 vs "
          "reference |\n|---|---|---|---|\n";
    for (size_t i = 0; i < reencoded.size() && i < 16; ++i) {
      const WeightReport* w = reencoded[i];
      md += "| `" + w->name + "` | " + w->scheme + " | " + F(*w->recorded_rel_l2, "%.3e") + " | " +
            (w->compared ? F(w->error.RelativeL2(), "%.3e") : std::string("-")) + " |\n";
    }
    if (reencoded.size() > 16) {
      md += "\n... " + std::to_string(reencoded.size() - 16) + " more in report.json and report.html\n";
    }
  }
  if (!r.notes.empty()) {
    md += "\n## Checklist\n\n";
    for (size_t i = 0; i < r.notes.size() && i < 12; ++i) md += "- " + r.notes[i] + "\n";
    if (r.notes.size() > 12) {
      md += "- ... " + std::to_string(r.notes.size() - 12) + " more in report.json\n";
    }
  }
  return md;
}

}  // namespace slimpack::report
