// Calibration driver: interpreter observer -> TensorObserver per value name,
// LinearStatsAccumulator per MatMul/Gemm with a constant weight.
#include "calibration/calibrator.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "runtime/interpreter.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Calls `visit(name, tensor, node, pool)` for each graph input of a sample,
// then for every node output, over the whole dataset; `pool` is the
// interpreter's, idle while visit runs.
template <typename Visit>
absl::Status RunAll(const ir::Model& model, Dataset& data, int num_threads,
                    int64_t* runs, int64_t* rows, Visit visit,
                    const std::function<void(int64_t)>& progress = nullptr,
                    std::shared_ptr<const runtime::KernelRegistry> kernels = nullptr,
                    const std::function<void(const std::string&)>& note = nullptr) {
  runtime::InterpreterOptions io;
  io.num_threads = num_threads;
  io.kernels = std::move(kernels);
  ASSIGN_OR_RETURN(runtime::Interpreter interp, runtime::Interpreter::Create(model, io));
  if (note && interp.f16_widening().changed()) {
    note("graph '" + model.graph.name + "' " + interp.f16_widening().Summary());
  }
  absl::Status visit_error;
  interp.SetObserver([&](const ir::Node& node, const std::vector<runtime::RtTensor>& outs) {
    for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || !outs[i].defined()) continue;
      RETURN_IF_ERROR(visit(node.outputs[i], outs[i], &node, interp.thread_pool()));
    }
    return absl::OkStatus();
  });
  *runs = 0;
  *rows = 0;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<Sample> sample, data.Next());
    if (!sample.has_value()) break;
    for (const auto& [name, t] : sample->inputs) {
      RETURN_IF_ERROR(Annotate(visit(name, t, nullptr, interp.thread_pool()), sample->source));
    }
    auto out = interp.Run(sample->inputs);
    if (!out.ok()) return Annotate(out.status(), "sample " + sample->source);
    ++*runs;
    *rows += sample->rows;
    if (progress) progress(*runs);
  }
  if (*runs == 0) return absl::InvalidArgumentError("the dataset has no samples");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalibrationTable> Calibrate(const ir::Model& model, Dataset& data,
                                           const CalibrateOptions& options) {
  const ObserverOptions& o = options.observer;
  if (o.num_bins < 4 || o.num_bins % 4 != 0 || o.num_bins > (1 << 20)) {
    return absl::InvalidArgumentError("num_bins must be a multiple of 4 in [4, 1048576], got " +
                                      std::to_string(o.num_bins));
  }
  if (!(o.percentile > 50 && o.percentile <= 100)) {
    return absl::InvalidArgumentError("percentile must be in (50, 100], got " +
                                      std::to_string(o.percentile));
  }
  if (o.entropy_levels < 2 || o.mse_levels < 1) {
    return absl::InvalidArgumentError("entropy_levels must be >= 2 and mse_levels >= 1");
  }
  std::map<std::string, TensorObserver> observers;
  std::map<std::string, std::pair<std::string, std::string>> producers;
  std::vector<LinearStatsAccumulator> linears;
  std::multimap<std::string, size_t> linear_by_input;
  for (LinearLayer& l : FindLinearLayers(model.graph)) {
    linear_by_input.emplace(l.input, linears.size());
    linears.emplace_back(std::move(l), options.collect_xtx);
  }
  auto visit = [&](const std::string& name, const runtime::RtTensor& t,
                   const ir::Node* node, runtime::ThreadPool* pool) -> absl::Status {
    if (t.dtype() != ir::DType::kF32) return absl::OkStatus();
    auto it = observers.find(name);
    if (it == observers.end()) {
      it = observers.emplace(name, TensorObserver(o)).first;
      producers[name] = node ? std::make_pair(node->name, node->op_type)
                             : std::make_pair(std::string(), std::string());
    }
    RETURN_IF_ERROR(it->second.Observe(name, t));
    auto [lo, hi] = linear_by_input.equal_range(name);
    for (auto l = lo; l != hi; ++l) RETURN_IF_ERROR(linears[l->second].Add(t, pool));
    return absl::OkStatus();
  };
  CalibrationTable table;
  RETURN_IF_ERROR(RunAll(model, data, options.num_threads, &table.runs, &table.samples,
                         visit, options.progress, options.kernels, options.note));
  table.model_name = BaseName(model.source_path);
  table.method = o;
  table.random_data = data.is_random();
  table.seed = data.is_random() ? data.seed() : 0;
  table.files = data.files();
  for (const auto& [name, obs] : observers) {
    TensorCalibration tc;
    std::tie(tc.producer, tc.op_type) = producers[name];
    tc.range = obs.Finish();
    table.tensors.emplace(name, std::move(tc));
  }
  // An explicit axis that no tensor has would record per-tensor ranges only,
  // while the table says per-channel: refuse instead of writing that.
  if (o.per_channel && o.channel_axis >= 0) {
    size_t max_rank = 0;
    bool any = false;
    for (const auto& [name, tc] : table.tensors) {
      max_rank = std::max(max_rank, tc.range.last_dims.size());
      any = any || !tc.range.channel_ranges.empty();
    }
    if (!any) {
      return absl::InvalidArgumentError(
          "per-channel axis " + std::to_string(o.channel_axis) +
          " exists in no calibrated tensor (the highest rank is " + std::to_string(max_rank) +
          ", so axes run 0.." + std::to_string(max_rank == 0 ? 0 : max_rank - 1) + ")");
    }
  }
  for (const LinearStatsAccumulator& acc : linears) {
    LinearCalibration lc;
    lc.layer = acc.layer();
    lc.rows = acc.rows();
    lc.mean_abs = acc.MeanAbs();
    lc.mean_sq = acc.MeanSquare();
    lc.xtx = acc.XtX();
    table.linears.emplace(acc.layer().node, std::move(lc));
  }
  return table;
}

absl::StatusOr<std::vector<CoverageIssue>> CheckCoverage(const ir::Model& model,
                                                         const CalibrationTable& table,
                                                         Dataset& data, int num_threads) {
  std::map<std::string, CoverageIssue> seen;
  auto visit = [&](const std::string& name, const runtime::RtTensor& t,
                   const ir::Node*, runtime::ThreadPool*) -> absl::Status {
    if (t.dtype() != ir::DType::kF32) return absl::OkStatus();
    auto cal = table.tensors.find(name);
    if (cal == table.tensors.end()) return absl::OkStatus();
    auto [it, fresh] = seen.try_emplace(name);
    CoverageIssue& c = it->second;
    if (fresh) {
      c.tensor = name;
      c.calibrated_lo = cal->second.range.lo;
      c.calibrated_hi = cal->second.range.hi;
      c.observed_min = INFINITY;
      c.observed_max = -INFINITY;
    }
    const float* v = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (!std::isfinite(v[i])) continue;
      ++c.elements;
      c.observed_min = std::min<double>(c.observed_min, v[i]);
      c.observed_max = std::max<double>(c.observed_max, v[i]);
      if (v[i] < c.calibrated_lo || v[i] > c.calibrated_hi) ++c.outside;
    }
    return absl::OkStatus();
  };
  int64_t runs = 0, rows = 0;
  RETURN_IF_ERROR(RunAll(model, data, num_threads, &runs, &rows, visit));
  std::vector<CoverageIssue> out;
  for (auto& [name, c] : seen) {
    if (c.outside == 0) continue;
    c.fraction_outside = static_cast<double>(c.outside) / c.elements;
    out.push_back(c);
  }
  return out;
}

}  // namespace slimpack::calibration
