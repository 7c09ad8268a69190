// BuildReport: one streaming pass over the data (reference run, then the
// candidate run with each layer also run alone on the reference's
// activations), then the sensitivity subset. Only one run's activations
// are held at a time, so memory does not grow with the dataset.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "runtime/interpreter.h"
#include "report/layer_match.h"
#include "report/report.h"
#include "report/sensitivity.h"
#include "report/single_node.h"
#include "report/weight_diff.h"
#include "support/status_macros.h"

namespace slimpack::report {
namespace {

using runtime::Interpreter;
using runtime::RtTensor;
using TensorMap = std::map<std::string, RtTensor>;

// The interpreter recycles buffers after the observer returns: keep a copy.
absl::StatusOr<RtTensor> Copy(const RtTensor& t) {
  ASSIGN_OR_RETURN(RtTensor c, RtTensor::Allocate(t.dtype(), t.dims()));
  if (t.byte_size() > 0) std::memcpy(c.mutable_raw(), t.raw(), t.byte_size());
  return c;
}

int64_t Opset(const ir::Model& m) {
  auto it = m.opset_imports.find("");
  return it == m.opset_imports.end() ? 17 : it->second;
}

absl::StatusOr<Interpreter> MakeInterpreter(const ir::Model& m, const ReportOptions& options) {
  runtime::InterpreterOptions o;
  o.num_threads = options.num_threads;
  o.kernels = options.kernels;
  return Interpreter::Create(m, o);
}

absl::Status CheckSameInterface(const ir::Model& ref, const ir::Model& cand) {
  std::set<std::string> ri, ci;
  for (const auto& v : calibration::FeedInputs(ref.graph)) ri.insert(v.name);
  for (const auto& v : calibration::FeedInputs(cand.graph)) ci.insert(v.name);
  if (ri != ci) {
    auto join = [](const std::set<std::string>& s) {
      std::string o;
      for (const auto& n : s) o += (o.empty() ? "" : ", ") + n;
      return o;
    };
    return absl::InvalidArgumentError("mismatched models: reference inputs [" + join(ri) +
                                      "] vs candidate inputs [" + join(ci) + "]");
  }
  if (ref.graph.outputs.size() != cand.graph.outputs.size()) {
    return absl::InvalidArgumentError(
        "mismatched models: reference has " + std::to_string(ref.graph.outputs.size()) +
        " outputs, candidate " + std::to_string(cand.graph.outputs.size()));
  }
  return absl::OkStatus();
}

absl::Status CheckSameOutputs(const std::vector<RtTensor>& r, const std::vector<RtTensor>& c,
                              const ir::Graph& g, const std::string& source) {
  for (size_t i = 0; i < r.size() && i < c.size(); ++i) {
    if (r[i].dtype() != c[i].dtype() || r[i].dims() != c[i].dims()) {
      return absl::InvalidArgumentError(
          "mismatched models on " + source + ": output '" + g.outputs[i].name + "' is " +
          r[i].DebugString() + " in the reference, " + c[i].DebugString() + " in the candidate");
    }
  }
  return absl::OkStatus();
}

// What the task-specific end-to-end numbers are computed from.
std::string DetectTask(const TensorMap& inputs, const std::vector<RtTensor>& outputs) {
  if (outputs.empty() || outputs[0].dtype() != ir::DType::kF32) return "generic";
  auto ids = inputs.find("input_ids");
  if (ids != inputs.end() && ids->second.rank() == 2 && outputs[0].rank() == 3 &&
      outputs[0].dim(0) == ids->second.dim(0) && outputs[0].dim(1) == ids->second.dim(1)) {
    return "lm";
  }
  if (outputs[0].rank() == 2) return "classifier";
  return "generic";
}

// The real values a node output stands for: f32 as is; the u8/i8 output of
// a QLinearConv / QLinearMatMul dequantized with its per-tensor y_scale /
// y_zero_point (inputs 6 and 7), so integer layers of a W8A8 candidate are
// compared with the reference's float layer outputs. nullopt otherwise.
std::optional<std::vector<float>> RealValues(const ir::Graph& g, const ir::Node& n,
                                             const RtTensor& t) {
  const int64_t count = t.num_elements();
  if (t.dtype() == ir::DType::kF32) {
    return std::vector<float>(t.data<float>(), t.data<float>() + count);
  }
  const bool u8 = t.dtype() == ir::DType::kU8;
  if ((!u8 && t.dtype() != ir::DType::kI8) || n.inputs.size() < 8 || !n.domain.empty() ||
      (n.op_type != "QLinearConv" && n.op_type != "QLinearMatMul")) {
    return std::nullopt;
  }
  const ir::Tensor* s = g.FindInitializer(n.inputs[6]);
  const ir::Tensor* z = n.inputs[7].empty() ? nullptr : g.FindInitializer(n.inputs[7]);
  if (s == nullptr || s->dtype != ir::DType::kF32 || s->data.size() != 4 ||
      (z != nullptr && z->data.size() != 1)) {
    return std::nullopt;
  }
  float scale;
  std::memcpy(&scale, s->data.data(), 4);
  int32_t zero = 0;
  if (z != nullptr) {
    zero = u8 ? static_cast<int32_t>(z->data.data()[0])
              : static_cast<int32_t>(static_cast<int8_t>(z->data.data()[0]));
  }
  std::vector<float> out(count);
  const uint8_t* q = t.raw();
  for (int64_t i = 0; i < count; ++i) {
    const int32_t v = u8 ? static_cast<int32_t>(q[i]) : static_cast<int32_t>(static_cast<int8_t>(q[i]));
    out[i] = static_cast<float>(v - zero) * scale;
  }
  return out;
}

// How to make an integer input of a candidate layer from the reference's
// float value: the value "<base>_quantized" produced by a QuantizeLinear
// (y_scale, y_zero_point = inputs 1, 2) or a QLinearConv / QLinearMatMul
// (inputs 6, 7) with per-tensor parameters.
struct Requantize {
  std::string base;
  float scale = 1;
  int32_t zero = 0;
  ir::DType dtype = ir::DType::kU8;
};

std::optional<Requantize> RequantizeOf(const ir::Graph& g, const std::string& value) {
  const std::string kSuffix = "_quantized";
  if (value.size() <= kSuffix.size() ||
      value.compare(value.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return std::nullopt;
  }
  for (const ir::Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] != value || !n.domain.empty()) continue;
    size_t si = 0;
    if (n.op_type == "QuantizeLinear") {
      si = 1;
    } else if (n.op_type == "QLinearConv" || n.op_type == "QLinearMatMul") {
      si = 6;
    } else {
      return std::nullopt;
    }
    if (n.inputs.size() < si + 2) return std::nullopt;
    const ir::Tensor* s = g.FindInitializer(n.inputs[si]);
    const ir::Tensor* z = g.FindInitializer(n.inputs[si + 1]);
    if (s == nullptr || z == nullptr || s->dtype != ir::DType::kF32 || s->data.size() != 4 ||
        z->data.size() != 1 || (z->dtype != ir::DType::kU8 && z->dtype != ir::DType::kI8)) {
      return std::nullopt;
    }
    Requantize r;
    r.base = value.substr(0, value.size() - kSuffix.size());
    std::memcpy(&r.scale, s->data.data(), 4);
    r.dtype = z->dtype;
    r.zero = r.dtype == ir::DType::kU8 ? static_cast<int32_t>(z->data.data()[0])
                                       : static_cast<int32_t>(static_cast<int8_t>(z->data.data()[0]));
    return r;
  }
  return std::nullopt;
}

// ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero).
absl::StatusOr<RtTensor> QuantizeLike(const RtTensor& x, const Requantize& q) {
  ASSIGN_OR_RETURN(RtTensor out, RtTensor::Allocate(q.dtype, x.dims()));
  const float* in = x.data<float>();
  uint8_t* o = out.mutable_raw();
  const float lo = q.dtype == ir::DType::kU8 ? 0.f : -128.f;
  const float hi = q.dtype == ir::DType::kU8 ? 255.f : 127.f;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float v = std::nearbyint(in[i] / q.scale) + static_cast<float>(q.zero);
    v = std::min(hi, std::max(lo, v));
    o[i] = q.dtype == ir::DType::kU8 ? static_cast<uint8_t>(v)
                                     : static_cast<uint8_t>(static_cast<int8_t>(v));
  }
  return out;
}

struct MainPass {
  const ir::Model& ref;
  const ir::Model& cand;
  const ReportOptions& options;
  Report& report;
  LayerMatches matches;
  std::vector<SingleNodeRunner> runners;  // per layer (quant-only)
  std::vector<bool> runnable;
  NextTokenStats lm_stats;
  // Integer feeds of single-layer runs made from reference values.
  std::map<std::string, Requantize> requantize;

  absl::Status Run(calibration::Dataset& data);
};

absl::Status MainPass::Run(calibration::Dataset& data) {
  ASSIGN_OR_RETURN(Interpreter ref_interp, MakeInterpreter(ref, options));
  ASSIGN_OR_RETURN(Interpreter cand_interp, MakeInterpreter(cand, options));

  std::unordered_map<std::string, size_t> layer_of_node;
  std::unordered_set<std::string> ref_needed, cand_needed, ref_value_names;
  for (const ir::Node& n : ref.graph.nodes) {
    for (const auto& o : n.outputs) ref_value_names.insert(o);
  }
  for (size_t i = 0; i < matches.layers.size(); ++i) {
    const LayerMatch& m = matches.layers[i];
    const ir::Node& node = cand.graph.nodes[m.node_index];
    layer_of_node[node.name] = i;
    ref_needed.insert(m.reference_output);
    runtime::InterpreterOptions io;
    io.num_threads = options.num_threads;
    io.kernels = options.kernels;
    auto r = SingleNodeRunner::Create(node, cand.graph, Opset(cand), io);
    runnable.push_back(r.ok());
    runners.push_back(r.ok() ? *std::move(r) : SingleNodeRunner());
    report.layers[i].has_quant_only = r.ok();
    if (!r.ok()) continue;
    for (const std::string& f : runners.back().feeds()) {
      bool ref_input = false;
      for (const auto& gi : ref.graph.inputs) ref_input |= gi.name == f;
      if (ref_value_names.count(f) > 0) {
        ref_needed.insert(f);
      } else if (auto q = RequantizeOf(cand.graph, f);
                 q && !ref_input && ref.graph.FindInitializer(f) == nullptr &&
                 (ref_value_names.count(q->base) > 0 ||
                  std::any_of(ref.graph.inputs.begin(), ref.graph.inputs.end(),
                              [&](const ir::ValueInfo& v) { return v.name == q->base; }))) {
        // The reference's float value, quantized as the candidate does:
        // the layer's own error, without what earlier layers introduced.
        ref_needed.insert(q->base);
        requantize[f] = *q;
      } else if (ref.graph.FindInitializer(f) == nullptr) {
        bool graph_input = false;
        for (const auto& gi : cand.graph.inputs) graph_input |= gi.name == f;
        if (!graph_input) {
          cand_needed.insert(f);
          report.layers[i].inputs_from_candidate.push_back(f);
        }
      }
    }
  }
  if (options.calibration != nullptr) {
    for (size_t i = 0; i < matches.layers.size(); ++i) {
      auto it = options.calibration->tensors.find(matches.layers[i].reference_output);
      if (it != options.calibration->tensors.end() && it->second.range.lo <= it->second.range.hi) {
        report.layers[i].propagated.SetClipRange(static_cast<float>(it->second.range.lo),
                                                 static_cast<float>(it->second.range.hi));
      }
    }
  }

  TensorMap ref_vals, cand_vals;
  ref_interp.SetObserver(
      [&](const ir::Node& node, const std::vector<RtTensor>& outs) -> absl::Status {
        for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i) {
          if (ref_needed.count(node.outputs[i]) == 0 || !outs[i].defined()) continue;
          ASSIGN_OR_RETURN(ref_vals[node.outputs[i]], Copy(outs[i]));
        }
        return absl::OkStatus();
      });
  cand_interp.SetObserver(
      [&](const ir::Node& node, const std::vector<RtTensor>& outs) -> absl::Status {
        for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i) {
          if (cand_needed.count(node.outputs[i]) == 0 || !outs[i].defined()) continue;
          ASSIGN_OR_RETURN(cand_vals[node.outputs[i]], Copy(outs[i]));
        }
        auto li = layer_of_node.find(node.name);
        if (li == layer_of_node.end() || outs.empty()) return absl::OkStatus();
        const size_t l = li->second;
        LayerReport& lr = report.layers[l];
        auto rv = ref_vals.find(matches.layers[l].reference_output);
        if (rv == ref_vals.end()) return absl::OkStatus();
        const RtTensor& r = rv->second;
        const std::optional<std::vector<float>> got = RealValues(cand.graph, node, outs[0]);
        if (!got || r.dtype() != ir::DType::kF32 ||
            static_cast<int64_t>(got->size()) != r.num_elements()) {
          return absl::OkStatus();
        }
        lr.propagated.Add(r.data<float>(), got->data(), r.num_elements());
        if (!runnable[l]) return absl::OkStatus();
        TensorMap feeds;
        for (const std::string& f : runners[l].feeds()) {
          auto rq = requantize.find(f);
          if (auto a = ref_vals.find(f); a != ref_vals.end()) {
            feeds[f] = a->second;
          } else if (auto base = rq == requantize.end() ? ref_vals.end()
                                                         : ref_vals.find(rq->second.base);
                     base != ref_vals.end() && base->second.dtype() == ir::DType::kF32) {
            ASSIGN_OR_RETURN(feeds[f], QuantizeLike(base->second, rq->second));
          } else if (auto b = cand_vals.find(f); b != cand_vals.end()) {
            feeds[f] = b->second;
          }
        }
        auto single = runners[l].Run(feeds);
        std::optional<std::vector<float>> alone;
        if (single.ok() && !single->empty()) alone = RealValues(cand.graph, node, (*single)[0]);
        if (!alone || static_cast<int64_t>(alone->size()) != r.num_elements()) {
          // A node that cannot run alone (e.g. a feed is a graph input of the
          // candidate only) keeps its propagated numbers.
          runnable[l] = false;
          lr.has_quant_only = false;
          return absl::OkStatus();
        }
        lr.quant_only.Add(r.data<float>(), alone->data(), r.num_elements());
        return absl::OkStatus();
      });

  EndToEndReport& e2e = report.end_to_end;
  int64_t run = 0;
  if (options.progress) options.progress({"report", 0, options.max_runs, "runs", ""});
  while (options.max_runs == 0 || run < options.max_runs) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) break;
    ref_vals = sample->inputs;
    cand_vals.clear();
    ASSIGN_OR_RETURN(std::vector<RtTensor> ro, ref_interp.Run(sample->inputs));
    ASSIGN_OR_RETURN(std::vector<RtTensor> co, cand_interp.Run(sample->inputs));
    RETURN_IF_ERROR(CheckSameOutputs(ro, co, ref.graph, sample->source));
    if (run == 0) e2e.task = DetectTask(sample->inputs, ro);
    for (size_t o = 0; o < ro.size(); ++o) {
      if (ro[o].dtype() != ir::DType::kF32) continue;
      e2e.output.Add(ro[o].data<float>(), co[o].data<float>(), ro[o].num_elements());
    }
    if (e2e.task == "lm") {
      const RtTensor& ids = sample->inputs.at("input_ids");
      const int64_t b = ro[0].dim(0), w = ro[0].dim(1), v = ro[0].dim(2);
      const int64_t* id = ids.data<int64_t>();
      for (int64_t i = 0; i < ids.num_elements(); ++i) {
        if (id[i] < 0 || id[i] >= v) {
          return absl::InvalidArgumentError(
              sample->source + ": input_ids[" + std::to_string(i) + "] = " + std::to_string(id[i]) +
              " is outside the vocabulary [0, " + std::to_string(v) + ")");
        }
      }
      e2e.lm_window = w;
      for (int64_t i = 0; i < b; ++i) {
        lm_stats.AddWindow(ro[0].data<float>() + i * w * v, co[0].data<float>() + i * w * v,
                           ids.data<int64_t>() + i * w, w, v);
      }
    } else if (e2e.task == "classifier") {
      e2e.classifier = true;
      const int64_t b = ro[0].dim(0), k = ro[0].dim(1);
      const int64_t* labels = nullptr;
      if (!options.labels.empty()) {
        if (e2e.samples + b > static_cast<int64_t>(options.labels.size())) {
          return absl::InvalidArgumentError(
              "labels: " + std::to_string(options.labels.size()) + " labels for more samples (" +
              sample->source + " reaches sample " + std::to_string(e2e.samples + b) + ")");
        }
        labels = options.labels.data() + e2e.samples;
      }
      e2e.classes.AddBatch(ro[0].data<float>(), co[0].data<float>(), labels, b, k);
    }
    e2e.samples += sample->rows;
    ++run;
    if (options.progress) options.progress({"report", run, options.max_runs, "runs", sample->source});
  }
  e2e.runs = run;
  if (run == 0) return absl::InvalidArgumentError("data: no samples");
  // With max_runs the data is cut short on purpose; otherwise every label
  // must have met its sample.
  if (!options.labels.empty() && e2e.task == "classifier" && options.max_runs == 0 &&
      e2e.samples != static_cast<int64_t>(options.labels.size())) {
    return absl::InvalidArgumentError("labels: " + std::to_string(options.labels.size()) +
                                      " labels but " + std::to_string(e2e.samples) +
                                      " samples were compared");
  }
  if (e2e.task == "lm") e2e.lm = lm_stats.Summarize();
  return absl::OkStatus();
}

void AddNotes(const ReportOptions& options, Report& report) {
  auto& notes = report.notes;
  if (options.calibration == nullptr) {
    notes.push_back(
        "calibration coverage: no calibration table given (--calib), range overflow not checked");
  }
  for (const LayerReport& l : report.layers) {
    if (l.propagated.has_clip_range() && l.propagated.OverflowRate() > 0) {
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "calibration coverage: '%s' eval range [%.4g, %.4g] exceeds calibrated "
                    "[%.4g, %.4g]; %.3g%% of values would clip",
                    l.reference_output.c_str(), l.propagated.RefMin(), l.propagated.RefMax(),
                    l.propagated.clip_lo(), l.propagated.clip_hi(),
                    100 * l.propagated.OverflowRate());
      notes.push_back(buf);
    }
    if (l.propagated.nonfinite() > 0) {
      notes.push_back("range check: '" + l.node + "' produced " +
                      std::to_string(l.propagated.nonfinite()) + " non-finite values");
    }
    if (l.source_nodes.size() > 1) {
      std::string src;
      for (const auto& s : l.source_nodes) src += (src.empty() ? "" : ", ") + s;
      notes.push_back("fusion: '" + l.node + "' fuses [" + src + "] and is compared at '" +
                      l.reference_output +
                      "'; fusion changes the order of operations, so small differences are "
                      "expected even in FP32");
    }
    if (!l.inputs_from_candidate.empty()) {
      notes.push_back("quant-only: '" + l.node + "' reads " +
                      std::to_string(l.inputs_from_candidate.size()) +
                      " value(s) the reference does not have (first: '" +
                      l.inputs_from_candidate[0] + "'), fed from the candidate's own run");
    }
  }
  for (const WeightReport& w : report.weights) {
    if (!w.compared) notes.push_back("weight '" + w.name + "': " + w.note);
  }
  for (const std::string& u : report.unmatched_layers) {
    notes.push_back("unmatched: candidate layer '" + u +
                    "' has no counterpart in the reference (by name or provenance)");
  }
}

}  // namespace

bool Report::gate_passed() const {
  for (const GateRuleResult& g : gate) {
    if (!g.passed) return false;
  }
  return true;
}

absl::StatusOr<Report> BuildReport(const ir::Model& reference, const ir::Model& candidate,
                                   calibration::Dataset& data, const ReportOptions& options) {
  RETURN_IF_ERROR(CheckSameInterface(reference, candidate));
  Report report;
  ASSIGN_OR_RETURN(report.reference_sha256, calibration::ModelDigest(reference));
  ASSIGN_OR_RETURN(report.candidate_sha256, calibration::ModelDigest(candidate));
  auto base = [](const std::string& p) {
    std::string s = p;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    const size_t slash = s.find_last_of('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
  };
  report.reference_name = base(reference.source_path);
  report.candidate_name = base(candidate.source_path);
  report.inputs = data.files();
  report.calibration_table = options.calibration_name;
  report.num_threads = options.num_threads;
  ASSIGN_OR_RETURN(report.weights, CompareWeights(reference.graph, candidate.graph));

  MainPass pass{
      reference, candidate, options, report, MatchLayers(reference.graph, candidate.graph),
      {},        {},        {},     {}};
  report.unmatched_layers = pass.matches.unmatched;
  for (size_t i = 0; i < pass.matches.layers.size(); ++i) {
    const LayerMatch& m = pass.matches.layers[i];
    const ir::Node& n = candidate.graph.nodes[m.node_index];
    LayerReport l;
    l.depth = static_cast<int64_t>(i);
    l.node = n.name;
    l.op_type = n.op_type;
    l.output = m.output;
    l.reference_output = m.reference_output;
    l.matched_by = m.matched_by;
    l.source_nodes = n.provenance.source_nodes;
    l.weights = m.weights;
    l.weights_folded = FoldsWeights(n, reference.graph);
    if (l.weights_folded) {
      for (WeightReport& w : report.weights) {
        if (std::find(l.weights.begin(), l.weights.end(), w.name) == l.weights.end()) continue;
        w.compared = false;
        w.error = TensorErrorStats();
        w.note = "folded by fusion into '" + n.name + "' (" + n.provenance.ToString() +
                 "): not comparable with the reference tensor of the same name";
      }
    }
    report.layers.push_back(std::move(l));
  }
  data.Rewind();
  RETURN_IF_ERROR(pass.Run(data));
  RETURN_IF_ERROR(RankLayers(reference, candidate, data, options, report));
  AddNotes(options, report);
  return report;
}

}  // namespace slimpack::report
