// Hybrid models share the weights' bytes with the originals (TensorData is
// reference-counted), so a hybrid per layer costs a graph copy, not a
// weight copy.
#include "report/sensitivity.h"

#include <algorithm>
#include <map>
#include <set>

#include "runtime/interpreter.h"
#include "report/weight_diff.h"
#include "support/status_macros.h"

namespace slimpack::report {
namespace {

using runtime::Interpreter;
using runtime::RtTensor;
using TensorMap = std::map<std::string, RtTensor>;

absl::StatusOr<Interpreter> MakeInterpreter(const ir::Model& m, const ReportOptions& options) {
  runtime::InterpreterOptions o;
  o.num_threads = options.num_threads;
  o.kernels = options.kernels;
  return Interpreter::Create(m, o);
}

// Damage of `cand` outputs vs `ref` outputs in the sensitivity metric:
// mean KLD for LMs, relative L2 of all float outputs otherwise.
double Damage(const std::string& task, const std::vector<TensorMap>& inputs,
              const std::vector<std::vector<RtTensor>>& ref,
              const std::vector<std::vector<RtTensor>>& cand) {
  if (task == "lm") {
    NextTokenStats s;
    for (size_t r = 0; r < ref.size(); ++r) {
      const RtTensor& ids = inputs[r].at("input_ids");
      const RtTensor& a = ref[r][0];
      const RtTensor& b = cand[r][0];
      const int64_t w = a.dim(1), v = a.dim(2);
      for (int64_t i = 0; i < a.dim(0); ++i) {
        s.AddWindow(a.data<float>() + i * w * v, b.data<float>() + i * w * v,
                    ids.data<int64_t>() + i * w, w, v);
      }
    }
    return s.Summarize().mean_kld;
  }
  TensorErrorStats e;
  for (size_t r = 0; r < ref.size(); ++r) {
    for (size_t o = 0; o < ref[r].size(); ++o) {
      if (ref[r][o].dtype() != ir::DType::kF32) continue;
      e.Add(ref[r][o].data<float>(), cand[r][o].data<float>(), ref[r][o].num_elements());
    }
  }
  return e.RelativeL2();
}

absl::StatusOr<std::vector<std::vector<RtTensor>>> RunAll(const ir::Model& m,
                                                          const std::vector<TensorMap>& inputs,
                                                          const ReportOptions& options) {
  ASSIGN_OR_RETURN(Interpreter interp, MakeInterpreter(m, options));
  std::vector<std::vector<RtTensor>> out;
  for (const TensorMap& in : inputs) {
    ASSIGN_OR_RETURN(std::vector<RtTensor> o, interp.Run(in));
    out.push_back(std::move(o));
  }
  return out;
}

// `target` with each named initializer replaced by `source`'s tensor of the
// same name (kept when absent there or shaped differently). Returns how
// many were replaced.
int SwapWeights(ir::Model& target, const ir::Graph& source, const std::vector<std::string>& names) {
  int swapped = 0;
  for (const std::string& n : names) {
    ir::Tensor* t = target.graph.FindMutableInitializer(n);
    const ir::Tensor* s = source.FindInitializer(n);
    if (t == nullptr || s == nullptr || s->dims != t->dims) continue;
    ir::Tensor copy = *s;
    if (s->quant.quantized()) {
      // The target graph has no scale tensors for it: carry the values.
      absl::StatusOr<ir::Tensor> d = DequantizedWeight(*s, source);
      if (!d.ok()) continue;
      copy = *std::move(d);
    }
    copy.name = t->name;
    *t = std::move(copy);
    ++swapped;
  }
  return swapped;
}

}  // namespace

// Sensitivity: the reference with one layer's weights from the candidate,
// scored against the plain reference on the first runs of the data.
absl::Status RankLayers(const ir::Model& ref, const ir::Model& cand, calibration::Dataset& data,
                        const ReportOptions& options, Report& report) {
  if (options.sensitivity_runs <= 0) return absl::OkStatus();
  std::set<std::string> changed;
  for (const WeightReport& w : report.weights) {
    if (!w.compared || w.error.RelativeL2() > 0) changed.insert(w.name);
  }
  std::vector<size_t> todo;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    if (report.layers[i].weights_folded) continue;  // no reference counterpart to swap
    for (const std::string& w : report.layers[i].weights) {
      if (changed.count(w) > 0) {
        todo.push_back(i);
        break;
      }
    }
  }
  if (todo.empty()) return absl::OkStatus();
  data.Rewind();
  std::vector<TensorMap> inputs;
  while (static_cast<int64_t>(inputs.size()) < options.sensitivity_runs) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> s, data.Next());
    if (!s) break;
    inputs.push_back(std::move(s->inputs));
  }
  const std::string& task = report.end_to_end.task;
  report.sensitivity_metric = task == "lm" ? "mean_kld" : "output_rel_l2";
  report.sensitivity_runs = static_cast<int64_t>(inputs.size());
  ASSIGN_OR_RETURN(auto ref_out, RunAll(ref, inputs, options));
  size_t limit = todo.size();
  if (options.sensitivity_layers > 0) {
    limit = std::min(limit, static_cast<size_t>(options.sensitivity_layers));
  }
  const auto layers_total = static_cast<int64_t>(limit);
  if (options.progress) options.progress({"sensitivity", 0, layers_total, "layers", ""});
  for (size_t k = 0; k < limit; ++k) {
    LayerReport& layer = report.layers[todo[k]];
    ir::Model hybrid = ref;
    if (SwapWeights(hybrid, cand.graph, layer.weights) == 0) continue;
    ASSIGN_OR_RETURN(auto out, RunAll(hybrid, inputs, options));
    layer.sensitivity = Damage(task, inputs, ref_out, out);
    if (options.progress) {
      options.progress(
          {"sensitivity", static_cast<int64_t>(k + 1), layers_total, "layers", layer.node});
    }
  }
  std::vector<LayerReport*> ranked;
  for (LayerReport& l : report.layers) {
    if (l.sensitivity) ranked.push_back(&l);
  }
  // Stable order on ties (depth), so reports are reproducible.
  std::stable_sort(ranked.begin(), ranked.end(), [](const LayerReport* a, const LayerReport* b) {
    return *a->sensitivity > *b->sensitivity;
  });
  for (size_t i = 0; i < ranked.size(); ++i) ranked[i]->sensitivity_rank = i + 1;

  // Fallback: the most harmful layers until they hold half of the summed
  // sensitivity (at most max_fallback_layers), measured together.
  double total = 0;
  for (const LayerReport* l : ranked) total += std::max(0.0, *l->sensitivity);
  if (total <= 0 || options.max_fallback_layers <= 0) return absl::OkStatus();
  FallbackAdvice advice;
  advice.metric = report.sensitivity_metric;
  double acc = 0;
  for (const LayerReport* l : ranked) {
    if (static_cast<int64_t>(advice.layers.size()) >= options.max_fallback_layers ||
        acc >= 0.5 * total || *l->sensitivity <= 0) {
      break;
    }
    acc += *l->sensitivity;
    advice.layers.push_back(l->node);
    for (const std::string& w : l->weights) {
      // Only what the candidate changed: unchanged tensors need no rule.
      if (changed.count(w) > 0 &&
          std::find(advice.weights.begin(), advice.weights.end(), w) == advice.weights.end()) {
        advice.weights.push_back(w);
      }
    }
  }
  ASSIGN_OR_RETURN(auto cand_out, RunAll(cand, inputs, options));
  advice.before = Damage(task, inputs, ref_out, cand_out);
  ir::Model restored = cand;
  SwapWeights(restored, ref.graph, advice.weights);
  ASSIGN_OR_RETURN(auto restored_out, RunAll(restored, inputs, options));
  advice.after = Damage(task, inputs, ref_out, restored_out);
  for (const WeightReport& w : report.weights) {
    if (std::find(advice.weights.begin(), advice.weights.end(), w.name) != advice.weights.end()) {
      advice.extra_bytes +=
          (w.reference_bits_per_weight - w.bits_per_weight) * static_cast<double>(w.elements) / 8;
    }
  }
  report.fallback = std::move(advice);
  return absl::OkStatus();
}

}  // namespace slimpack::report
