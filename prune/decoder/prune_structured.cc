// PruneDecoder (prune_structured.h): chooses the groups each layer loses
// (rules, ratio or budget), slices the checkpoint's tensors, optionally
// refits the consumers, and rewrites config.json. Scoring, refit numerics
// and option parsing are in the prune_structured_*.cc files beside this one.
#include "prune/decoder/prune_structured.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "calibration/dataset.h"
#include "calibration/token_ids.h"
#include "hf/layer_sizes.h"
#include "hf/llama_graph_builder.h"
#include "quantize/float_walk.h"
#include "prune/decoder/prune_budget.h"
#include "prune/decoder/prune_loss.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::prune {
namespace {

using quantize::ToF32;

uint64_t CountParams(const ir::Model& m) {
  uint64_t n = 0;
  for (const ir::Tensor& t : m.graph.initializers()) {
    auto e = t.NumElements();
    if (e.ok()) n += *e;
  }
  return n;
}

// Kept indices: the `keep` most important, in ascending index order; ties
// keep the lower index.
std::vector<int64_t> TopIndices(const std::vector<double>& score, int64_t keep) {
  std::vector<int64_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  idx.resize(keep);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<float> KeepRows(const std::vector<float>& w, int64_t cols,
                            const std::vector<int64_t>& rows) {
  std::vector<float> out;
  out.reserve(rows.size() * cols);
  for (int64_t r : rows) out.insert(out.end(), w.begin() + r * cols, w.begin() + (r + 1) * cols);
  return out;
}

std::vector<float> KeepCols(const std::vector<float>& w, int64_t rows, int64_t cols,
                            const std::vector<int64_t>& keep) {
  std::vector<float> out;
  out.reserve(rows * keep.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c : keep) out.push_back(w[r * cols + c]);
  return out;
}

// Expands kept KV heads into kept row/column indices of width `width` each.
std::vector<int64_t> Expand(const std::vector<int64_t>& heads, int64_t width) {
  std::vector<int64_t> out;
  for (int64_t h : heads)
    for (int64_t i = 0; i < width; ++i) out.push_back(h * width + i);
  return out;
}

absl::Status Replace(ir::Model& m, const std::string& name, const std::vector<float>& values,
                     std::vector<int64_t> dims) {
  const ir::Tensor* old = m.graph.FindInitializer(name);
  ir::Tensor t = quantize::F32Like(*old, values);
  t.dims = std::move(dims);
  return quantize::ReplaceInitializer(m.graph, std::move(t));
}

// Parameters and source bytes of `name` that `new_numel` elements leave.
void CountRemoved(const ir::Model& m, const std::string& name, int64_t new_numel,
                  LayerStats& st) {
  const ir::Tensor* t = m.graph.FindInitializer(name);
  auto n = t->NumElements();
  if (!n.ok() || *n < static_cast<uint64_t>(new_numel)) return;
  const uint64_t gone = *n - new_numel;
  st.params_removed += gone;
  auto bytes = ir::DTypeByteSize(t->dtype, gone);
  if (bytes) st.bytes_removed += *bytes;
}

}  // namespace

namespace {

constexpr int kMlp = 0, kKv = 1;
constexpr GroupKind kKinds[2] = {GroupKind::kMlpChannel, GroupKind::kKvHead};

// Parameters one group of `kind` holds in a layer.
uint64_t GroupParams(const DecoderGroups& g, GroupKind kind, bool has_bias) {
  const uint64_t h = g.hidden_size, d = g.head_dim, r = g.num_heads / g.num_kv_heads;
  if (kind == GroupKind::kMlpChannel) return 3 * h;
  return 2 * r * d * h + 2 * d * h + (has_bias ? r * d + 2 * d : 0);
}

// The configured parameter budget as a count.
uint64_t BudgetCount(double budget, uint64_t params_before) {
  if (budget < 1) return static_cast<uint64_t>(std::llround(budget * params_before));
  return static_cast<uint64_t>(budget);
}

// Importance of every group of `kind` in layer `lt` under `o.criterion`.
absl::StatusOr<std::vector<double>> Scores(
    const ir::Model& m, const DecoderGroups& g, const LayerTensors& lt, GroupKind kind,
    const PruneOptions& o, const InputNorms& norms,
    const std::map<std::string, quantize::CapturedInput>& captured) {
  if (o.criterion != Criterion::kLoss) {
    return GroupImportance(m, g, lt.layer, kind, o.criterion, norms);
  }
  const bool mlp = kind == GroupKind::kMlpChannel;
  const std::string& consumer = mlp ? lt.down : lt.o;
  ASSIGN_OR_RETURN(std::vector<float> w, ToF32(*m.graph.FindInitializer(consumer)));
  const int64_t n = mlp ? g.intermediate_size : g.num_heads * g.head_dim;
  const int64_t width = mlp ? 1 : (g.num_heads / g.num_kv_heads) * g.head_dim;
  return RemovalErrors(w, g.hidden_size, n, captured.at(consumer).xtx, width);
}

}  // namespace

absl::StatusOr<PruneResult> PruneDecoder(ir::Model& m, const PruneOptions& o) {
  if (!(o.ratio >= 0 && o.ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prune ", o.ratio, ": the ratio must be in [0, 1)"));
  }
  if (!(o.budget_params >= 0) || !std::isfinite(o.budget_params)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--prune-budget-params ", o.budget_params, ": expected a fraction in (0, 1) or a count"));
  }
  if (o.budget_params > 0 && o.ratio > 0) {
    return absl::InvalidArgumentError(
        "--prune and --prune-budget-params exclude each other: the budget chooses the counts");
  }
  PruneResult result;
  result.params_before = result.params_after = CountParams(m);
  ASSIGN_OR_RETURN(DecoderGroups g, BuildDecoderGroups(m));
  result.unprunable = g.unprunable;
  const int64_t r = g.num_heads / g.num_kv_heads;
  const int64_t h = g.hidden_size, d = g.head_dim, num_layers = g.num_layers;
  const int64_t totals[2] = {g.intermediate_size, g.num_kv_heads};
  const bool budget = o.budget_params > 0;

  // Per layer and kind: groups removed, and whether the budget chooses it.
  std::vector<std::array<int64_t, 2>> drop(num_layers, {0, 0});
  std::vector<std::array<bool, 2>> free(num_layers, {false, false});
  bool any = budget;
  bool kind_active[2] = {false, false};
  for (int64_t l = 0; l < num_layers; ++l) {
    for (int k : {kMlp, kKv}) {
      if (const PruneRule* rule = FirstRule(o.rules, l, kKinds[k])) {
        drop[l][k] = RuleDrop(*rule, totals[k]);
      } else if (TargetCovers(o.target, kKinds[k])) {
        if (budget) {
          free[l][k] = true;
        } else {
          drop[l][k] = std::min<int64_t>(std::llround(o.ratio * totals[k]), totals[k] - 1);
        }
      }
      any |= drop[l][k] > 0;
      kind_active[k] |= drop[l][k] > 0 || free[l][k];
    }
  }
  for (int64_t l = 0; l < num_layers; ++l) {
    LayerStats st;
    st.layer = l;
    st.mlp_kept = st.mlp_total = g.intermediate_size;
    st.kv_heads_kept = st.kv_heads_total = g.num_kv_heads;
    st.heads_kept = st.heads_total = g.num_heads;
    result.layers.push_back(st);
  }
  if (!any) return result;  // exact no-op

  const bool scored_by_calib =
      o.criterion == Criterion::kActivation || o.criterion == Criterion::kLoss;
  const bool need_calib = scored_by_calib || o.refit;
  std::map<std::string, quantize::CapturedInput> captured;
  if (need_calib) {
    if (o.calib_paths.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "prune: ",
          scored_by_calib ? "--prune-criterion " + std::string(CriterionName(o.criterion))
                          : std::string("--prune-refit"),
          " needs calibration data: pass --calib FILES (e.g. token windows as .npy)"));
    }
    ASSIGN_OR_RETURN(ir::Model runnable, hf::BuildDecoderGraph(m));
    calibration::DatasetOptions dopts;
    dopts.max_batch = 8;
    dopts.vocab_size = calibration::KnownVocabSize(runnable);
    dopts.max_positions = calibration::KnownMaxPositions(runnable);
    ASSIGN_OR_RETURN(calibration::Dataset data,
                     calibration::Dataset::Open(o.calib_paths,
                                                calibration::FeedInputs(runnable.graph), dopts));
    std::vector<std::string> weights;
    for (const LayerTensors& lt : g.layers) {
      if (kind_active[kMlp]) weights.insert(weights.end(), {lt.gate, lt.down});
      if (kind_active[kKv]) weights.insert(weights.end(), {lt.q, lt.o});
    }
    // Layer by layer (quantize/float_walk.h): one layer's weights widened
    // at a time; the statistics are the float model's either way.
    quantize::FloatWalkOptions walk;
    walk.max_runs = o.calib_samples;
    walk.threads = o.threads;
    walk.capture.hessian = o.refit || o.criterion == Criterion::kLoss;
    walk.stage = "prune";
    RETURN_IF_ERROR(quantize::WalkFloatModel(
        m, weights, data, walk, [&captured](const std::string& w, quantize::CapturedInput& c) {
          captured[w] = std::move(c);
          return absl::OkStatus();
        }));
  }
  InputNorms norms;
  for (const auto& [name, c] : captured) {
    std::vector<double> v(c.mean_sq.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sqrt(c.mean_sq[i]);
    norms[name] = std::move(v);
  }

  // Scores of every (layer, kind) that loses groups or that the budget
  // may prune.
  std::vector<std::array<std::vector<double>, 2>> scores(num_layers);
  for (const LayerTensors& lt : g.layers) {
    for (int k : {kMlp, kKv}) {
      if (drop[lt.layer][k] == 0 && !free[lt.layer][k]) continue;
      ASSIGN_OR_RETURN(scores[lt.layer][k], Scores(m, g, lt, kKinds[k], o, norms, captured));
    }
  }

  if (budget) {
    const bool bias = !g.layers.empty() && !g.layers[0].q_bias.empty();
    const uint64_t target = BudgetCount(o.budget_params, result.params_before);
    uint64_t fixed = 0;
    std::vector<BudgetSlot> slots;
    std::vector<std::pair<int64_t, int>> where;
    for (int64_t l = 0; l < num_layers; ++l) {
      for (int k : {kMlp, kKv}) {
        const uint64_t gp = GroupParams(g, kKinds[k], bias);
        fixed += gp * drop[l][k];
        if (!free[l][k]) continue;
        slots.push_back({l, kKinds[k], scores[l][k], gp});
        where.push_back({l, k});
      }
    }
    const uint64_t want =
        result.params_before > target ? result.params_before - target : 0;
    const uint64_t to_remove = want > fixed ? want - fixed : 0;
    const std::vector<int64_t> chosen = ChooseBudgetDrops(slots, to_remove);
    uint64_t removed = fixed;
    for (size_t i = 0; i < slots.size(); ++i) {
      drop[where[i].first][where[i].second] = chosen[i];
      removed += slots[i].group_params * chosen[i];
    }
    if (removed < want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--prune-budget-params ", o.budget_params, ": the budget of ", target,
          " parameters is below the ", result.params_before - removed,
          " left when every prunable layer keeps one group of each kind (model: ",
          result.params_before, " parameters)"));
    }
  }

  for (const LayerTensors& lt : g.layers) {
    LayerStats& st = result.layers[lt.layer];
    const int64_t drop_mlp = drop[lt.layer][kMlp], drop_kv = drop[lt.layer][kKv];
    if (drop_mlp > 0) {
      const std::vector<int64_t> keep =
          TopIndices(scores[lt.layer][kMlp], g.intermediate_size - drop_mlp);
      const int64_t k = static_cast<int64_t>(keep.size()), ff = g.intermediate_size;
      ASSIGN_OR_RETURN(std::vector<float> gate, ToF32(*m.graph.FindInitializer(lt.gate)));
      ASSIGN_OR_RETURN(std::vector<float> up, ToF32(*m.graph.FindInitializer(lt.up)));
      ASSIGN_OR_RETURN(std::vector<float> down, ToF32(*m.graph.FindInitializer(lt.down)));
      std::vector<float> down_kept = o.refit ? RefitColumns(down, h, ff, captured.at(lt.down).xtx,
                                                            keep, o.damp)
                                             : KeepCols(down, h, ff, keep);
      for (const std::string* name : {&lt.gate, &lt.up, &lt.down}) {
        CountRemoved(m, *name, k * h, st);
      }
      RETURN_IF_ERROR(Replace(m, lt.gate, KeepRows(gate, h, keep), {k, h}));
      RETURN_IF_ERROR(Replace(m, lt.up, KeepRows(up, h, keep), {k, h}));
      RETURN_IF_ERROR(Replace(m, lt.down, down_kept, {h, k}));
      st.mlp_kept = k;
      result.removed_mlp += drop_mlp;
    }
    if (drop_kv > 0) {
      const std::vector<int64_t> keep =
          TopIndices(scores[lt.layer][kKv], g.num_kv_heads - drop_kv);
      const std::vector<int64_t> q_rows = Expand(keep, r * d), kv_rows = Expand(keep, d);
      const int64_t qd = static_cast<int64_t>(q_rows.size()),
                    kvd = static_cast<int64_t>(kv_rows.size());
      for (const std::string* name : {&lt.q, &lt.k, &lt.v}) {
        ASSIGN_OR_RETURN(std::vector<float> w, ToF32(*m.graph.FindInitializer(*name)));
        const bool is_q = name == &lt.q;
        CountRemoved(m, *name, (is_q ? qd : kvd) * h, st);
        RETURN_IF_ERROR(Replace(m, *name, KeepRows(w, h, is_q ? q_rows : kv_rows),
                                {is_q ? qd : kvd, h}));
      }
      for (const std::string* name : {&lt.q_bias, &lt.k_bias, &lt.v_bias}) {
        if (name->empty()) continue;
        ASSIGN_OR_RETURN(std::vector<float> b, ToF32(*m.graph.FindInitializer(*name)));
        const bool is_q = name == &lt.q_bias;
        CountRemoved(m, *name, is_q ? qd : kvd, st);
        RETURN_IF_ERROR(Replace(m, *name, KeepRows(b, 1, is_q ? q_rows : kv_rows),
                                {is_q ? qd : kvd}));
      }
      ASSIGN_OR_RETURN(std::vector<float> ow, ToF32(*m.graph.FindInitializer(lt.o)));
      const int64_t on = g.num_heads * d;
      std::vector<float> o_kept = o.refit ? RefitColumns(ow, h, on, captured.at(lt.o).xtx,
                                                         q_rows, o.damp)
                                          : KeepCols(ow, h, on, q_rows);
      CountRemoved(m, lt.o, h * qd, st);
      RETURN_IF_ERROR(Replace(m, lt.o, o_kept, {h, qd}));
      st.kv_heads_kept = static_cast<int64_t>(keep.size());
      st.heads_kept = st.kv_heads_kept * r;
      result.removed_kv += drop_kv;
    }
    result.bytes_removed += st.bytes_removed;
  }
  if (result.removed_mlp == 0 && result.removed_kv == 0) {
    return result;  // a budget the model already meets: nothing removed
  }

  // Architecture and config.json: one value per field when every layer
  // agrees; otherwise the largest value plus per-layer lists
  // (hf/layer_sizes.h), which stock HF transformers cannot load.
  ir::ArchitectureInfo& a = *m.architecture;
  int64_t max_ff = 0, max_kv = 0;
  nlohmann::json ff_list = nlohmann::json::array(), kv_list = nlohmann::json::array(),
                 heads_list = nlohmann::json::array();
  for (const LayerStats& st : result.layers) {
    max_ff = std::max(max_ff, st.mlp_kept);
    max_kv = std::max(max_kv, st.kv_heads_kept);
    result.per_layer_config |= st.mlp_kept != result.layers[0].mlp_kept ||
                               st.kv_heads_kept != result.layers[0].kv_heads_kept;
    ff_list.push_back(st.mlp_kept);
    kv_list.push_back(st.kv_heads_kept);
    heads_list.push_back(st.heads_kept);
  }
  a.intermediate_size = max_ff;
  a.num_kv_heads = max_kv;
  a.num_heads = max_kv * r;
  a.head_dim = d;
  nlohmann::json cfg = nlohmann::json::parse(a.config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    return absl::InvalidArgumentError(m.source_path +
                                      ": config.json is not a JSON object; cannot rewrite it");
  }
  cfg["intermediate_size"] = a.intermediate_size;
  cfg["num_attention_heads"] = a.num_heads;
  cfg["num_key_value_heads"] = a.num_kv_heads;
  // HF derives head_dim from hidden_size / num_attention_heads when the
  // field is absent, which would be wrong once heads are removed.
  cfg["head_dim"] = d;
  if (result.per_layer_config) {
    cfg[hf::kIntermediateSizePerLayer] = ff_list;
    cfg[hf::kNumKeyValueHeadsPerLayer] = kv_list;
    cfg[hf::kNumAttentionHeadsPerLayer] = heads_list;
    result.warnings.push_back(
        "prune: layers keep different sizes, so config.json holds per-layer lists (" +
        std::string(hf::kIntermediateSizePerLayer) + ", " +
        hf::kNumKeyValueHeadsPerLayer + ", " + hf::kNumAttentionHeadsPerLayer +
        "): slimpack builds and evaluates it, stock Hugging Face transformers cannot load it");
  }
  a.config_json = cfg.dump(2) + "\n";
  // Replaces the carried config.json in the artifact (or adds one).
  m.carried_overrides["config.json"] = a.config_json;

  result.changed = true;
  result.params_after = CountParams(m);
  return result;
}

}  // namespace slimpack::prune
