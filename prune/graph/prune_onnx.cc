// PruneGraph: groups, calibration capture, selection, apply, verify.
#include "prune/graph/prune_onnx.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "calibration/dataset.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "ir/verifier.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/status_macros.h"

namespace slimpack::prune {
namespace {

// Refit solves a K x K system per consumer; beyond this the X^T X
// accumulation (K^2 per row) and memory (8 K^2 bytes) are not worth it.
constexpr int64_t kMaxRefitFeatures = 4096;

uint64_t CountParams(const ir::Graph& g) {
  uint64_t n = 0;
  for (const ir::Tensor& t : g.initializers()) {
    auto e = t.NumElements();
    if (e.ok()) n += *e;
  }
  return n;
}

const ir::Node* FindNode(const ir::Graph& g, size_t index) {
  return index < g.nodes.size() ? &g.nodes[index] : nullptr;
}

// Per-feature sum of squares (and optionally X^T X) of one data input.
// Features: axis 1 of a Conv input (rows = batch x positions), the last
// axis otherwise.
struct Accumulator {
  bool conv = false;
  bool want_xtx = false;
  std::string node;
  std::vector<double> sum_sq, xtx;
  uint64_t rows = 0;

  absl::Status Add(const runtime::RtTensor& t) {
    if (t.dtype() != ir::DType::kF32 || t.rank() < (conv ? 2u : 1u)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node, "': input statistics need an f32 input of rank >= ", conv ? 2 : 1));
    }
    const int64_t f = conv ? t.dim(1) : t.dim(t.rank() - 1);
    const int64_t inner = conv ? t.num_elements() / std::max<int64_t>(1, t.dim(0) * f) : 1;
    const int64_t outer = conv ? t.dim(0) : t.num_elements() / std::max<int64_t>(1, f);
    if (sum_sq.empty()) {
      sum_sq.assign(f, 0.0);
      want_xtx = want_xtx && f <= kMaxRefitFeatures;
      if (want_xtx) xtx.assign(f * f, 0.0);
    }
    if (static_cast<int64_t>(sum_sq.size()) != f) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node, "': input has ", f,
                                                     " features, earlier runs ", sum_sq.size()));
    }
    const float* x = t.data<float>();
    std::vector<double> row(f);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t p = 0; p < inner; ++p) {
        for (int64_t j = 0; j < f; ++j) {
          row[j] = conv ? x[(o * f + j) * inner + p] : x[o * f + j];
          sum_sq[j] += row[j] * row[j];
        }
        if (want_xtx) {
          for (int64_t i = 0; i < f; ++i) {
            if (row[i] == 0) continue;
            double* dst = &xtx[i * f];
            for (int64_t j = 0; j < f; ++j) dst[j] += row[i] * row[j];
          }
        }
        ++rows;
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

nlohmann::json GraphPruneResult::ToJson() const {
  nlohmann::json gs = nlohmann::json::array();
  for (const GraphGroupStats& g : groups) {
    gs.push_back({{"group", g.name},
                  {"channels", g.channels},
                  {"kept", g.kept},
                  {"prunable", g.prunable}});
  }
  nlohmann::json j = {{"changed", changed},
                      {"groups", std::move(gs)},
                      {"parameters_before", params_before},
                      {"parameters_after", params_after}};
  if (!refit.empty()) j["refit"] = refit;
  return j;
}

absl::StatusOr<WeightInputs> CaptureWeightInputs(const ir::Model& model,
                                                 const ChannelGroups& groups,
                                                 const std::vector<std::string>& weights,
                                                 const std::vector<std::string>& xtx_weights,
                                                 const std::vector<std::string>& calib_paths,
                                                 int64_t max_runs, int threads) {
  const std::set<std::string> want_xtx(xtx_weights.begin(), xtx_weights.end());
  std::map<std::string, Accumulator> acc;                     // by weight
  std::map<std::string, std::vector<std::string>> by_value;  // data input -> weights
  for (const std::string& w : weights) {
    auto it = groups.weight_nodes.find(w);
    const ir::Node* n =
        it == groups.weight_nodes.end() ? nullptr : FindNode(model.graph, it->second);
    if (n == nullptr || n->inputs.empty()) {
      return absl::InternalError("weight '" + w + "' has no weight node");
    }
    Accumulator& a = acc[w];
    a.conv = n->op_type == "Conv" || n->op_type == "FusedConv";
    a.node = n->name;
    a.want_xtx = want_xtx.count(w) > 0;
    by_value[n->inputs[0]].push_back(w);
  }
  calibration::DatasetOptions dopts;
  dopts.max_batch = 32;
  dopts.vocab_size = calibration::KnownVocabSize(model);
  dopts.max_positions = calibration::KnownMaxPositions(model);
  ASSIGN_OR_RETURN(calibration::Dataset data,
                   calibration::Dataset::Open(calib_paths, calibration::FeedInputs(model.graph),
                                              dopts));
  runtime::InterpreterOptions options;
  options.num_threads = threads;
  ASSIGN_OR_RETURN(runtime::Interpreter interp,
                   runtime::Interpreter::Create(model, options));
  auto feed = [&](const std::string& value, const runtime::RtTensor& t) -> absl::Status {
    auto it = by_value.find(value);
    if (it == by_value.end()) return absl::OkStatus();
    for (const std::string& w : it->second) RETURN_IF_ERROR(acc[w].Add(t));
    return absl::OkStatus();
  };
  // The observer runs on the calling thread after each node, so sums
  // accumulate in dataset order whatever the thread count.
  interp.SetObserver([&](const ir::Node& node, const std::vector<runtime::RtTensor>& outs) {
    for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i)
      RETURN_IF_ERROR(feed(node.outputs[i], outs[i]));
    return absl::OkStatus();
  });
  int64_t runs = 0;
  while (runs < max_runs) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) break;
    for (const auto& [name, t] : sample->inputs) RETURN_IF_ERROR(feed(name, t));
    auto r = interp.Run(sample->inputs);
    if (!r.ok()) return Annotate(r.status(), "calibration sample " + sample->source);
    ++runs;
  }
  WeightInputs out;
  for (auto& [w, a] : acc) {
    if (a.rows == 0) {
      return absl::FailedPreconditionError(absl::StrCat("node '", a.node, "' (weight '", w,
                                                        "') saw no calibration rows in ", runs,
                                                        " runs"));
    }
    WeightInput& wi = out[w];
    wi.rms.resize(a.sum_sq.size());
    for (size_t i = 0; i < a.sum_sq.size(); ++i) wi.rms[i] = std::sqrt(a.sum_sq[i] / a.rows);
    wi.xtx = std::move(a.xtx);
  }
  return out;
}

absl::StatusOr<GraphPruneResult> PruneGraph(ir::Model& model, const PruneOptions& o) {
  if (!(o.ratio >= 0 && o.ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prune ", o.ratio, ": the ratio must be in [0, 1)"));
  }
  if (o.criterion != Criterion::kL1 && o.criterion != Criterion::kL2 &&
      o.criterion != Criterion::kActivation) {
    return absl::UnimplementedError(absl::StrCat(
        "--prune-criterion ", std::string(CriterionName(o.criterion)),
        " is not supported for ONNX graphs (supported: l1, l2, activation)"));
  }
  if (!o.rules.empty() || o.budget_params > 0) {
    return absl::UnimplementedError(
        "per-layer prune rules and parameter budgets apply to decoder checkpoints only; ONNX "
        "graphs take a global --prune ratio");
  }
  GraphPruneResult result;
  result.params_before = result.params_after = CountParams(model.graph);
  ASSIGN_OR_RETURN(ChannelGroups groups, BuildChannelGroups(model.graph));
  std::map<int, std::vector<int64_t>> removed;
  // Which groups lose channels depends only on the ratio, not the scores.
  for (size_t i = 0; i < groups.groups.size(); ++i) {
    const ChannelGroup& g = groups.groups[i];
    if (!g.prunable()) {
      for (const std::string& r : g.unprunable)
        result.unprunable.push_back("group " + g.name + ": " + r);
    }
  }
  std::vector<int> cut_groups;
  for (size_t i = 0; i < groups.groups.size(); ++i) {
    const ChannelGroup& g = groups.groups[i];
    const int64_t drop = std::min<int64_t>(static_cast<int64_t>(std::floor(o.ratio * g.channels)),
                                           g.channels - 1);
    if (g.prunable() && drop > 0) cut_groups.push_back(static_cast<int>(i));
  }
  auto fill_stats = [&]() {
    result.groups.clear();
    for (size_t i = 0; i < groups.groups.size(); ++i) {
      const ChannelGroup& g = groups.groups[i];
      auto it = removed.find(static_cast<int>(i));
      const int64_t gone = it == removed.end() ? 0 : static_cast<int64_t>(it->second.size());
      result.groups.push_back({g.name, g.channels, g.channels - gone, g.prunable()});
    }
  };
  fill_stats();
  if (cut_groups.empty()) return result;  // exact no-op

  WeightInputs inputs;
  if (o.criterion == Criterion::kActivation || o.refit) {
    if (o.calib_paths.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "prune: ", o.criterion == Criterion::kActivation ? "--prune-criterion activation"
                                                            : "--prune-refit",
          " needs calibration data: pass --calib FILES (model inputs as .npz/.npy/.safetensors)"));
    }
    std::set<std::string> weights, xtx;
    for (int gi : cut_groups) {
      for (const ChannelMember& m : groups.groups[gi].members) {
        if (m.role == ChannelMember::Role::kVector) continue;
        if (o.criterion == Criterion::kActivation) weights.insert(m.tensor);
        if (o.refit && m.role == ChannelMember::Role::kInput) {
          const ir::Node* n = FindNode(model.graph, groups.weight_nodes.at(m.tensor));
          if (n != nullptr && IsRefitConsumer(*n, *model.graph.FindInitializer(m.tensor))) {
            weights.insert(m.tensor);
            xtx.insert(m.tensor);
          }
        }
      }
    }
    ASSIGN_OR_RETURN(inputs, CaptureWeightInputs(
                                 model, groups, {weights.begin(), weights.end()},
                                 {xtx.begin(), xtx.end()}, o.calib_paths, o.calib_samples,
                                 o.threads));
  }
  for (int gi : cut_groups) {
    ASSIGN_OR_RETURN(std::vector<double> score,
                     ChannelImportance(model.graph, groups, gi, o.criterion, inputs));
    removed[gi] = SelectRemoved(score, o.ratio);
  }
  ASSIGN_OR_RETURN(ApplyReport applied,
                   ApplyChannelPruning(model.graph, groups, removed, o.refit, inputs, o.damp));
  absl::Status verified = ir::VerifyGraph(model.graph);
  if (!verified.ok()) return Annotate(absl::InternalError(verified.message()), "pruned graph");
  result.changed = true;
  result.refit = std::move(applied.refit);
  result.params_after = CountParams(model.graph);
  fill_stats();
  return result;
}

}  // namespace slimpack::prune
