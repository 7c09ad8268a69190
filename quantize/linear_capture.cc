#include "quantize/linear_capture.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/interpreter.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

// One per distinct input: q/k/v (and gate/up) read the same normed
// activations, whose X^T X is accumulated once and copied to each.
struct Collector {
  calibration::LinearStatsAccumulator stats;
  CapturedInput* out;                   // the first layer reading the input
  std::vector<CapturedInput*> sharers;  // the others
  int64_t keep_rows;
};

// Keeps the first rows of x ([..., K], or [K, M] for transA) until full.
void KeepRows(const runtime::RtTensor& x, Collector& c) {
  const int64_t k = c.stats.layer().in_features;
  if (c.out->kept >= c.keep_rows || x.dtype() != ir::DType::kF32 || k <= 0) return;
  const float* p = reinterpret_cast<const float*>(x.raw());
  const int64_t rows = x.num_elements() / k;
  for (int64_t r = 0; r < rows && c.out->kept < c.keep_rows; ++r) {
    const size_t at = c.out->samples.size();
    c.out->samples.resize(at + k);
    if (c.stats.layer().trans_a) {
      for (int64_t j = 0; j < k; ++j) c.out->samples[at + j] = p[j * rows + r];
    } else {
      std::memcpy(&c.out->samples[at], p + r * k, sizeof(float) * k);
    }
    ++c.out->kept;
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, CapturedInput>> CaptureLinearInputs(
    const ir::Model& model, const std::vector<std::string>& weights,
    calibration::Dataset& data, int64_t max_runs, const CaptureRequest& request,
    int threads) {
  std::map<std::string, CapturedInput> out;
  std::vector<std::unique_ptr<Collector>> collectors;
  std::map<std::string, std::vector<Collector*>> by_input;
  const std::set<std::string> wanted(weights.begin(), weights.end());
  const std::vector<calibration::LinearLayer> layers =
      request.layers != nullptr ? *request.layers : calibration::FindLinearLayers(model.graph);
  for (const calibration::LinearLayer& l : layers) {
    if (!wanted.count(l.weight) || out.count(l.weight)) continue;
    CapturedInput& ci = out[l.weight];
    ci.layer = l;
    std::vector<Collector*>& readers = by_input[l.input];
    auto same = std::find_if(readers.begin(), readers.end(), [&](const Collector* c) {
      return c->stats.layer().trans_a == l.trans_a &&
             c->stats.layer().in_features == l.in_features;
    });
    if (same != readers.end()) {
      (*same)->sharers.push_back(&ci);
      continue;
    }
    collectors.push_back(std::make_unique<Collector>(
        Collector{calibration::LinearStatsAccumulator(l, request.hessian), &ci, {},
                  request.keep_rows}));
    readers.push_back(collectors.back().get());
  }
  for (const std::string& w : weights) {
    if (!out.count(w)) {
      return absl::NotFoundError(absl::StrCat(
          "weight '", w, "' is not the constant B input of a MatMul/Gemm in the graph, "
          "so its input statistics cannot be captured"));
    }
  }
  runtime::InterpreterOptions options;
  options.num_threads = threads;
  // Graphs the fusion passes rewrote hold slimpack-domain ops.
  ASSIGN_OR_RETURN(runtime::Interpreter interp,
                   runtime::Interpreter::Create(model, options));
  auto feed = [&](const std::string& value, const runtime::RtTensor& t) -> absl::Status {
    auto it = by_input.find(value);
    if (it == by_input.end()) return absl::OkStatus();
    for (Collector* c : it->second) {
      RETURN_IF_ERROR(c->stats.Add(t, interp.thread_pool()));
      KeepRows(t, *c);
    }
    return absl::OkStatus();
  };
  interp.SetObserver([&](const ir::Node& node, const std::vector<runtime::RtTensor>& outs) {
    for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i) {
      RETURN_IF_ERROR(feed(node.outputs[i], outs[i]));
    }
    return absl::OkStatus();
  });
  support::ProgressEvent event{"calibration", 0, 0, "runs", request.context};
  if (request.progress) {
    // The run count is known only by reading the samples (files are opened
    // lazily); reading is cheap next to the forward passes.
    data.Rewind();
    while (event.total < max_runs) {
      ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
      if (!sample) break;
      ++event.total;
    }
    request.progress(event);
  }
  data.Rewind();
  // Where each kept value is among the run's outputs.
  std::vector<size_t> keep_at;
  if (request.kept != nullptr) {
    const std::vector<std::string>& outs = interp.output_names();
    for (const std::string& name : request.keep) {
      auto it = std::find(outs.begin(), outs.end(), name);
      if (it == outs.end()) {
        return absl::InternalError("value '" + name + "' to keep is not an output of the graph");
      }
      keep_at.push_back(static_cast<size_t>(it - outs.begin()));
    }
    request.kept->emplace();
  }
  uint64_t kept_bytes = 0;
  int64_t runs = 0;
  while (runs < max_runs) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) break;
    std::map<std::string, runtime::RtTensor> inputs;
    if (request.fed == nullptr) {
      inputs = std::move(sample->inputs);
    } else {
      if (static_cast<size_t>(runs) >= request.fed->size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calibration sample ", sample->source, ": ", request.fed->size(),
            " runs' values were cached, the data has more"));
      }
      inputs = (*request.fed)[runs];
      for (const std::string& name : interp.input_names()) {
        auto it = sample->inputs.find(name);
        if (it != sample->inputs.end()) inputs.emplace(name, it->second);
      }
    }
    for (const auto& [name, t] : inputs) RETURN_IF_ERROR(feed(name, t));
    auto r = interp.Run(inputs);
    if (!r.ok()) return Annotate(r.status(), "calibration sample " + sample->source);
    if (request.kept != nullptr && request.kept->has_value()) {
      std::map<std::string, runtime::RtTensor>& values = (*request.kept)->emplace_back();
      for (size_t k = 0; k < keep_at.size(); ++k) {
        kept_bytes += (*r)[keep_at[k]].byte_size();
        values.emplace(request.keep[k], std::move((*r)[keep_at[k]]));
      }
      if (kept_bytes > request.keep_max_bytes) request.kept->reset();
    }
    ++runs;
    if (request.progress) {
      event.done = runs;
      request.progress(event);
    }
  }
  for (auto& c : collectors) {
    CapturedInput& ci = *c->out;
    ci.rows = c->stats.rows();
    if (ci.rows == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "linear layer '", ci.layer.node, "' (weight '", ci.layer.weight,
          "') saw no calibration rows in ", runs, " runs"));
    }
    ci.mean_abs = c->stats.MeanAbs();
    ci.mean_sq = c->stats.MeanSquare();
    ci.xtx = c->stats.XtX();
    for (CapturedInput* s : c->sharers) {
      calibration::LinearLayer own = s->layer;
      *s = ci;
      s->layer = std::move(own);
    }
  }
  return out;
}

}  // namespace slimpack::quantize
