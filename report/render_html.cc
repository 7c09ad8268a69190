// report.html: one self-contained page (inline CSS, inline SVG charts, a
// few lines of inline JS for sorting); nothing is fetched, so it opens the
// same offline, in CI artifacts and in mail.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "report/render.h"

namespace slimpack::report {
namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string F(double v, const char* fmt = "%.4g") {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Sort key for the table: infinities sort past every finite value.
std::string Key(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

constexpr char kStyle[] = R"(
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #dde;padding-bottom:4px}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600}
.pass{background:#2e7d32}.fail{background:#c62828}.none{background:#607d8b}
table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #dde;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left} th{background:#f3f5fa;cursor:pointer;user-select:none}
tr.bad td{background:#fff1f0} code,pre{font:12px ui-monospace,Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:8px;border:1px solid #dde;overflow:auto}
.chart{border:1px solid #dde;background:#fcfcfe} .legend span{margin-right:16px}
.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
.muted{color:#667}
)";

constexpr char kScript[] = R"(
(function(){
  var t=document.getElementById('layers');
  document.body.setAttribute('data-ready','1');
  if(!t) return;
  var hs=t.querySelectorAll('th');
  for(var i=0;i<hs.length;i++){(function(c){hs[c].addEventListener('click',function(){
    var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
    var asc=hs[c].getAttribute('data-asc')!=='1'; hs[c].setAttribute('data-asc',asc?'1':'0');
    rows.sort(function(x,y){
      var a=x.cells[c].getAttribute('data-v'),d=y.cells[c].getAttribute('data-v');
      var na=parseFloat(a),nd=parseFloat(d),r;
      if(!isNaN(na)&&!isNaN(nd)) r=na-nd; else r=String(x.cells[c].textContent).localeCompare(String(y.cells[c].textContent));
      return asc?r:-r;});
    for(var k=0;k<rows.length;k++) b.appendChild(rows[k]);});})(i);}
})();
)";

// SQNR of a layer for the charts: +inf (identical) is drawn at the top.
double Clamp(double v, double lo, double hi) {
  if (std::isnan(v)) return lo;
  return std::max(lo, std::min(hi, v));
}

// Grid spacing in dB: round numbers, about 4-8 lines.
double TickStep(double lo, double hi) {
  const double span = hi - lo;
  return span > 160 ? 40 : span > 80 ? 20 : span > 40 ? 10 : 5;
}

void Range(const Report& r, double* lo, double* hi) {
  *lo = std::numeric_limits<double>::infinity();
  *hi = -std::numeric_limits<double>::infinity();
  auto take = [&](double v) {
    if (!std::isfinite(v)) return;
    *lo = std::min(*lo, v);
    *hi = std::max(*hi, v);
  };
  for (const LayerReport& l : r.layers) {
    if (l.propagated.count() > 0) take(l.propagated.Sqnr());
    if (l.has_quant_only && l.quant_only.count() > 0) take(l.quant_only.Sqnr());
  }
  for (const WeightReport& w : r.weights) {
    if (w.compared) take(w.error.Sqnr());
  }
  if (!std::isfinite(*lo)) {
    *lo = 0;
    *hi = 100;
  }
  const double step = TickStep(std::min(*lo, 0.0), *hi + 5);
  *lo = std::floor(std::min(*lo, 0.0) / step) * step;
  *hi = std::ceil((*hi + 5) / step) * step;
}

std::string DepthChart(const Report& r, double lo, double hi) {
  const double w = 900, h = 260, l = 50, rt = 10, top = 10, bot = 30;
  const size_t n = r.layers.size();
  auto x = [&](size_t i) { return l + (n <= 1 ? 0.0 : (w - l - rt) * i / (n - 1)); };
  auto y = [&](double v) {
    return top + (h - top - bot) * (1 - (Clamp(v, lo, hi) - lo) / (hi - lo));
  };
  std::string s =
      "<svg class=\"chart\" width=\"900\" height=\"260\" viewBox=\"0 0 900 260\" "
      "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
      "aria-label=\"per-layer SQNR along depth\">";
  for (double t = lo; t <= hi + 1e-9; t += TickStep(lo, hi)) {
    s += "<line x1=\"" + F(l) + "\" x2=\"" + F(w - rt) + "\" y1=\"" + F(y(t)) + "\" y2=\"" +
         F(y(t)) + "\" stroke=\"#e4e7ef\"/><text x=\"" + F(l - 6) + "\" y=\"" + F(y(t) + 4) +
         "\" font-size=\"11\" text-anchor=\"end\" fill=\"#667\">" + F(t, "%.0f") + "</text>";
  }
  s += "<text x=\"" + F(w / 2) + "\" y=\"" + F(h - 6) +
       "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#667\">layer depth (candidate node "
       "order); SQNR in dB, higher is better; the top line is identical</text>";
  std::string prop, quant;
  for (size_t i = 0; i < n; ++i) {
    const LayerReport& L = r.layers[i];
    if (L.propagated.count() > 0) {
      prop += F(x(i), "%.1f") + "," + F(y(L.propagated.Sqnr()), "%.1f") + " ";
    }
    if (L.has_quant_only && L.quant_only.count() > 0) {
      quant += F(x(i), "%.1f") + "," + F(y(L.quant_only.Sqnr()), "%.1f") + " ";
      s += "<circle cx=\"" + F(x(i), "%.1f") + "\" cy=\"" + F(y(L.quant_only.Sqnr()), "%.1f") +
           "\" r=\"3\" fill=\"#ef6c00\"><title>" + Esc(L.node) + ": quant-only " +
           F(L.quant_only.Sqnr(), "%.2f") + " dB</title></circle>";
    }
  }
  s += "<polyline fill=\"none\" stroke=\"#1565c0\" stroke-width=\"2\" points=\"" + prop + "\"/>";
  s += "<polyline fill=\"none\" stroke=\"#ef6c00\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" "
       "points=\"" +
       quant + "\"/>";
  return s + "</svg>";
}

// Weight SQNR (first compared weight of the layer) next to the layer's
// quant-only activation SQNR.
std::string BarsChart(const Report& r, double lo, double hi) {
  const double w = 900, h = 240, l = 50, top = 10, bot = 30;
  const size_t n = r.layers.size();
  const double slot = n == 0 ? 0 : (w - l - 10) / n;
  auto y = [&](double v) {
    return top + (h - top - bot) * (1 - (Clamp(v, lo, hi) - lo) / (hi - lo));
  };
  std::string s =
      "<svg class=\"chart\" width=\"900\" height=\"240\" viewBox=\"0 0 900 240\" "
      "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
      "aria-label=\"weight vs activation error\">";
  s += "<line x1=\"" + F(l) + "\" x2=\"" + F(w - 10) + "\" y1=\"" + F(y(lo)) + "\" y2=\"" +
       F(y(lo)) + "\" stroke=\"#99a\"/>";
  for (double t = lo; t <= hi + 1e-9; t += TickStep(lo, hi)) {
    s += "<text x=\"" + F(l - 6) + "\" y=\"" + F(y(t) + 4) +
         "\" font-size=\"11\" text-anchor=\"end\" fill=\"#667\">" + F(t, "%.0f") + "</text>";
  }
  for (size_t i = 0; i < n; ++i) {
    const LayerReport& L = r.layers[i];
    const WeightReport* wr = nullptr;
    for (const std::string& name : L.weights) {
      for (const WeightReport& c : r.weights) {
        if (c.name == name && c.compared && wr == nullptr) wr = &c;
      }
    }
    const double bw = std::max(1.0, slot * 0.4);
    const double x0 = l + slot * i + slot * 0.1;
    auto bar = [&](double x, double v, const char* color, const std::string& tip) {
      const double yt = y(v);
      s += "<rect x=\"" + F(x, "%.1f") + "\" y=\"" + F(yt, "%.1f") + "\" width=\"" + F(bw, "%.1f") +
           "\" height=\"" + F(std::max(0.0, y(lo) - yt), "%.1f") + "\" fill=\"" + color +
           "\"><title>" + Esc(tip) + "</title></rect>";
    };
    if (wr != nullptr)
      bar(x0, wr->error.Sqnr(), "#7b1fa2",
          L.node + ": weight " + wr->name + " " + F(wr->error.Sqnr(), "%.2f") + " dB");
    if (L.has_quant_only && L.quant_only.count() > 0) {
      bar(x0 + bw, L.quant_only.Sqnr(), "#ef6c00",
          L.node + ": activation (quant-only) " + F(L.quant_only.Sqnr(), "%.2f") + " dB");
    }
  }
  s += "<text x=\"" + F(w / 2) + "\" y=\"" + F(h - 6) +
       "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#667\">per layer: weight SQNR "
       "(purple) vs output SQNR of the layer alone on reference inputs (orange), dB</text>";
  return s + "</svg>";
}

std::string Td(double v, const char* fmt = "%.4g") {
  return "<td data-v=\"" + Key(v) + "\">" + F(v, fmt) + "</td>";
}

// Per-layer kept ratios and what pruning removed (from the prune record).
std::string PruningHtml(const PruningSummary& p) {
  std::string h = "<h2>Pruning</h2><p>" + Esc(p.criterion) + ", " + Esc(p.target) +
                  (p.refit ? ", refit" : "") + ": " + std::to_string(p.params_before) + " &rarr; " +
                  std::to_string(p.params_after) + " parameters (" +
                  std::to_string(p.params_before - std::min(p.params_before, p.params_after)) +
                  " and " + std::to_string(p.bytes_removed) +
                  " bytes removed)</p><table id=\"pruning\"><thead><tr><th>layer</th>"
                  "<th>MLP kept</th><th>heads kept</th><th>parameters removed</th>"
                  "<th>bytes removed</th></tr></thead><tbody>\n";
  if (!p.groups.empty()) {  // an ONNX graph: channel groups, not decoder layers
    h = h.substr(0, h.find("<table id=\"pruning\">")) +
        "<table id=\"pruning\"><thead><tr><th>channel group</th><th>kept</th><th>channels</th>"
        "</tr></thead><tbody>\n";
    for (const PrunedGroup& g : p.groups) {
      h += "<tr><td>" + Esc(g.name) + (g.prunable ? "" : " (unprunable)") + "</td>" +
           Td(g.KeptRatio(), "%.3f") + Td(static_cast<double>(g.channels), "%.0f") + "</tr>\n";
    }
    return h + "</tbody></table>\n";
  }
  for (const PrunedLayer& l : p.layers) {
    h += "<tr>" + Td(static_cast<double>(l.layer), "%.0f") + Td(l.MlpKeptRatio(), "%.3f") +
         Td(l.HeadsKeptRatio(), "%.3f") + Td(static_cast<double>(l.params_removed), "%.0f") +
         Td(static_cast<double>(l.bytes_removed), "%.0f") + "</tr>\n";
  }
  return h + "</tbody></table>\n";
}

}  // namespace

std::string RenderHtml(const Report& r) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<link rel=\"icon\" href=\"data:,\">"
      "<title>slimpack report: " +
      Esc(r.candidate_name) + " vs " + Esc(r.reference_name) + "</title><style>" + kStyle +
      "</style></head><body>\n";
  h += "<h1>slimpack report: " + Esc(r.candidate_name) + " vs " + Esc(r.reference_name) + "</h1>";
  const char* cls = r.gate.empty() ? "none" : (r.gate_passed() ? "pass" : "fail");
  const char* txt = r.gate.empty() ? "no gate" : (r.gate_passed() ? "gate passed" : "gate FAILED");
  h += "<p><span class=\"badge " + std::string(cls) + "\">" + txt +
       "</span> <span class=\"muted\">" + std::to_string(r.end_to_end.samples) + " samples, task " +
       Esc(r.end_to_end.task) + ", " + std::to_string(r.layers.size()) + " layers, " +
       std::to_string(r.weights.size()) + " weights</span></p>\n";
  if (!r.gate.empty()) {
    h += "<ul>";
    for (const GateRuleResult& g : r.gate) {
      h += "<li" + std::string(g.passed ? "" : " style=\"color:#c62828\"") + ">" + Esc(g.message) +
           "</li>";
    }
    h += "</ul>\n";
  }
  const EndToEndReport& e = r.end_to_end;
  h += "<h2>End to end</h2><table><tbody>";
  auto row = [&](const std::string& k, const std::string& v) {
    h += "<tr><td>" + Esc(k) + "</td><td>" + Esc(v) + "</td></tr>";
  };
  row("output SQNR (dB)", F(e.output.Sqnr()));
  row("output cosine", F(e.output.Cosine(), "%.6f"));
  row("output max abs error", F(e.output.MaxAbs()));
  if (e.lm) {
    row("mean KLD (nats)", F(e.lm->mean_kld, "%.6f") + " ± " + F(e.lm->kld_stderr, "%.6f"));
    row("top-1 token agreement", F(100 * e.lm->top1_agreement, "%.2f") + "%");
    row("perplexity", F(e.lm->ppl_ref, "%.4f") + " → " + F(e.lm->ppl_cand, "%.4f"));
    row("RMS Δp", F(100 * e.lm->rms_dp, "%.3f") + "%");
  }
  if (e.classifier) {
    row("top-1 agreement", F(100 * e.classes.Top1Agreement(), "%.2f") + "%");
    if (e.classes.labelled()) {
      row("accuracy", F(100 * e.classes.RefAccuracy(), "%.2f") + "% → " +
                          F(100 * e.classes.CandAccuracy(), "%.2f") + "%");
    }
  }
  h += "</tbody></table>\n";
  double lo, hi;
  Range(r, &lo, &hi);
  h += "<h2>SQNR along depth</h2><div class=\"legend\"><span><i class=\"sw\" "
       "style=\"background:#1565c0\"></i>propagated (both models end to end)</span><span><i "
       "class=\"sw\" style=\"background:#ef6c00\"></i>quant-only (layer alone on reference "
       "inputs)</span></div>" +
       DepthChart(r, lo, hi) + "\n";
  h += "<h2>Weight vs activation error</h2>" + BarsChart(r, lo, hi) + "\n";
  if (r.fallback) {
    const FallbackAdvice& f = *r.fallback;
    h += "<h2>Fallback advice</h2><p>Keep " + std::to_string(f.layers.size()) +
         " layer(s) at reference precision to bring <b>" + Esc(f.metric) + "</b> from " +
         F(f.before, "%.5g") + " to " + F(f.after, "%.5g") + " at +" +
         F(f.extra_bytes / (1024.0 * 1024.0), "%.3f") + " MiB:</p><ul>";
    for (const std::string& l : f.layers) h += "<li><code>" + Esc(l) + "</code></li>";
    h += "</ul><pre>" +
         Esc(FallbackRecipe(r).dump(2, ' ', false,
                                    nlohmann::ordered_json::error_handler_t::replace)) +
         "</pre>\n";
  }
  if (r.pruning) h += PruningHtml(*r.pruning);
  h += "<h2>Layers</h2><p class=\"muted\">Click a column to sort.</p><table id=\"layers\"><thead>"
       "<tr><th>layer</th><th>depth</th><th>op</th><th>SQNR dB</th><th>quant-only SQNR dB</th>"
       "<th>cosine</th><th>rel L2</th><th>max abs</th><th>weight SQNR dB</th><th>bits/weight</th>"
       "<th>sensitivity</th><th>rank</th></tr></thead><tbody>\n";
  for (const LayerReport& l : r.layers) {
    const WeightReport* wr = nullptr;
    for (const std::string& name : l.weights) {
      for (const WeightReport& c : r.weights) {
        if (c.name == name && wr == nullptr) wr = &c;
      }
    }
    const bool bad = l.sensitivity_rank == 1;
    h += std::string("<tr") + (bad ? " class=\"bad\"" : "") + "><td data-v=\"" + Esc(l.node) +
         "\"><code>" + Esc(l.node) + "</code></td>" + Td(static_cast<double>(l.depth), "%.0f") +
         "<td data-v=\"" + Esc(l.op_type) + "\">" + Esc(l.op_type) + "</td>" +
         Td(l.propagated.Sqnr(), "%.2f") +
         (l.has_quant_only ? Td(l.quant_only.Sqnr(), "%.2f")
                           : std::string("<td data-v=\"\">n/a</td>")) +
         Td(l.propagated.Cosine(), "%.6f") + Td(l.propagated.RelativeL2()) +
         Td(l.propagated.MaxAbs()) +
         (wr && wr->compared ? Td(wr->error.Sqnr(), "%.2f")
                             : std::string("<td data-v=\"\">-</td>")) +
         (wr ? Td(wr->bits_per_weight, "%.3g") : std::string("<td data-v=\"\">-</td>")) +
         (l.sensitivity ? Td(*l.sensitivity, "%.4g") : std::string("<td data-v=\"\">-</td>")) +
         (l.sensitivity ? Td(static_cast<double>(l.sensitivity_rank), "%.0f")
                        : std::string("<td data-v=\"\">-</td>")) +
         "</tr>\n";
  }
  h += "</tbody></table>\n";
  std::string reencoded;
  for (const WeightReport& w : r.weights) {
    if (!w.recorded_rel_l2) continue;
    reencoded += "<tr><td><code>" + Esc(w.name) + "</code></td><td>" + Esc(w.scheme) + "</td>" +
                 Td(*w.recorded_rel_l2) +
                 (w.compared ? Td(w.error.RelativeL2()) : std::string("<td data-v=\"\">-</td>")) +
                 "</tr>\n";
  }
  if (!reencoded.empty()) {
    h += "<h2>Encoded again in the candidate's file</h2><p class=\"muted\">No type of the file "
         "held these weights' grid; the relative L2 their re-encoding added, as the file records "
         "it, and their error against the reference.</p><table><thead><tr><th>weight</th>"
         "<th>scheme</th><th>re-encoding rel L2</th><th>rel L2 vs reference</th></tr></thead>"
         "<tbody>\n" + reencoded + "</tbody></table>\n";
  }
  if (!r.notes.empty()) {
    h += "<h2>Checklist</h2><ul>";
    for (const std::string& n : r.notes) h += "<li>" + Esc(n) + "</li>";
    h += "</ul>\n";
  }
  h += "<h2>Inputs</h2><ul>";
  for (const auto& f : r.inputs) {
    h += "<li><code>" + Esc(f.name) + "</code> " + std::to_string(f.bytes) + " bytes, sha256 " +
         Esc(f.sha256) + "</li>";
  }
  h += "</ul><p class=\"muted\">reference sha256 " + Esc(r.reference_sha256) +
       "<br>candidate sha256 " + Esc(r.candidate_sha256) + "</p>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace slimpack::report
