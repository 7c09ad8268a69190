#include "passes/prune_structured.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "calibration/datasets/dataset.h"
#include "converter/llama/llama_graph_builder.h"
#include "passes/linear_capture.h"
#include "passes/weight_matrix.h"
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

// f32 values of the named initializers, loaded once.
class WeightCache {
 public:
  explicit WeightCache(const ir::Model& m) : m_(m) {}
  absl::StatusOr<const std::vector<float>*> Get(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return &it->second;
    const ir::Tensor* t = m_.graph.FindInitializer(name);
    if (t == nullptr) return absl::NotFoundError("no tensor '" + name + "'");
    ASSIGN_OR_RETURN(std::vector<float> v, ToF32(*t));
    return &cache_.emplace(name, std::move(v)).first->second;
  }

 private:
  const ir::Model& m_;
  std::map<std::string, std::vector<float>> cache_;
};

int64_t Cols(const ir::Model& m, const std::string& name) {
  const ir::Tensor* t = m.graph.FindInitializer(name);
  return t->dims.size() == 2 ? t->dims[1] : 1;
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

absl::StatusOr<std::string> WriteConfig(const std::string& text, const std::string& dir_in,
                                        std::string* created) {
  std::string dir = dir_in;
  if (dir.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "slimpack-prune-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError("cannot create a directory for the pruned config.json: " +
                                 tmpl);
    }
    dir = tmpl;
    *created = dir;
  }
  const std::string path = dir + "/config.json";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return absl::InternalError("cannot write " + path);
  return path;
}

}  // namespace

absl::StatusOr<Criterion> ParseCriterion(std::string_view s) {
  if (s == "l1") return Criterion::kL1;
  if (s == "l2") return Criterion::kL2;
  if (s == "activation") return Criterion::kActivation;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pruning criterion '", std::string(s), "' (l1, l2, activation)"));
}

absl::StatusOr<Target> ParseTarget(std::string_view s) {
  if (s == "mlp") return Target::kMlp;
  if (s == "heads") return Target::kHeads;
  if (s == "both") return Target::kBoth;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pruning target '", std::string(s), "' (mlp, heads, both)"));
}

std::string_view CriterionName(Criterion c) {
  switch (c) {
    case Criterion::kL1: return "l1";
    case Criterion::kL2: return "l2";
    case Criterion::kActivation: return "activation";
  }
  return "?";
}

std::string_view TargetName(Target t) {
  switch (t) {
    case Target::kMlp: return "mlp";
    case Target::kHeads: return "heads";
    case Target::kBoth: return "both";
  }
  return "?";
}

nlohmann::json PruneOptionsToJson(const PruneOptions& o) {
  nlohmann::json j = {{"ratio", o.ratio},
                      {"criterion", std::string(CriterionName(o.criterion))},
                      {"target", std::string(TargetName(o.target))},
                      {"refit", o.refit}};
  if (o.criterion == Criterion::kActivation || o.refit) {
    j["calib_samples"] = o.calib_samples;
    if (o.refit) j["damp"] = o.damp;
  }
  return j;
}

absl::StatusOr<PruneOptions> ParsePruneJson(const nlohmann::json& j, const std::string& file) {
  auto bad = [&](const std::string& key, const std::string& what) {
    return absl::InvalidArgumentError(file + ": prune." + key + ": " + what);
  };
  if (!j.is_object()) return absl::InvalidArgumentError(file + ": prune: expected an object");
  PruneOptions o;
  bool has_ratio = false;
  for (const auto& [k, v] : j.items()) {
    if (k == "ratio") {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1)) {
        return bad(k, "expected a ratio in [0, 1), found " + v.dump());
      }
      o.ratio = v.get<double>();
      has_ratio = true;
    } else if (k == "criterion" || k == "target") {
      if (!v.is_string()) return bad(k, "expected a string, found " + v.dump());
      if (k == "criterion") {
        auto c = ParseCriterion(v.get<std::string>());
        if (!c.ok()) return bad(k, std::string(c.status().message()));
        o.criterion = *c;
      } else {
        auto t = ParseTarget(v.get<std::string>());
        if (!t.ok()) return bad(k, std::string(t.status().message()));
        o.target = *t;
      }
    } else if (k == "refit") {
      if (!v.is_boolean()) return bad(k, "expected true or false, found " + v.dump());
      o.refit = v.get<bool>();
    } else if (k == "calib_samples") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        return bad(k, "expected a positive integer, found " + v.dump());
      }
      o.calib_samples = v.get<int64_t>();
    } else if (k == "damp") {
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
        return bad(k, "expected a number in (0, 1], found " + v.dump());
      }
      o.damp = v.get<double>();
    } else {
      return bad(k, "unknown key (known: calib_samples, criterion, damp, ratio, refit, target)");
    }
  }
  if (!has_ratio) return absl::InvalidArgumentError(file + ": prune: \"ratio\" is required");
  return o;
}

nlohmann::json PruneResult::ToJson() const {
  nlohmann::json layers_json = nlohmann::json::array();
  for (const LayerStats& l : layers) {
    layers_json.push_back({{"layer", l.layer},
                           {"intermediate_kept", l.mlp_kept},
                           {"kv_heads_kept", l.kv_heads_kept},
                           {"heads_kept", l.heads_kept}});
  }
  return {{"changed", changed},
          {"layers", std::move(layers_json)},
          {"parameters_before", params_before},
          {"parameters_after", params_after}};
}

absl::StatusOr<std::vector<double>> GroupImportance(const ir::Model& m, const DecoderGroups& g,
                                                    int64_t layer, GroupKind kind, Criterion c,
                                                    const InputNorms& norms) {
  const int64_t n = kind == GroupKind::kMlpChannel ? g.intermediate_size : g.num_kv_heads;
  const LayerTensors& lt = g.layers[layer];
  // Input norms per weight: k/v/q share q's input, up shares gate's.
  auto norm_of = [&](const std::string& w) -> const std::vector<double>* {
    if (c != Criterion::kActivation) return nullptr;
    std::string key = w;
    if (w == lt.k || w == lt.v) key = lt.q;
    if (w == lt.up) key = lt.gate;
    auto it = norms.find(key);
    return it == norms.end() ? nullptr : &it->second;
  };
  WeightCache cache(m);
  std::vector<double> score(n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const PruneGroup grp = kind == GroupKind::kMlpChannel ? MlpChannelGroup(g, layer, i)
                                                          : KvHeadGroup(g, layer, i);
    double acc = 0;
    for (const TensorSlice& s : grp.members) {
      ASSIGN_OR_RETURN(const std::vector<float>* w, cache.Get(s.tensor));
      const int64_t cols = Cols(m, s.tensor);
      const int64_t rows = static_cast<int64_t>(w->size()) / cols;
      const bool is_bias = m.graph.FindInitializer(s.tensor)->dims.size() == 1;
      const std::vector<double>* norm = is_bias ? nullptr : norm_of(s.tensor);
      if (c == Criterion::kActivation && !is_bias && norm == nullptr) {
        return absl::InternalError("no calibration input norms for '" + s.tensor + "'");
      }
      auto add = [&](int64_t r, int64_t col) {
        const double v = (*w)[r * cols + col];
        switch (c) {
          case Criterion::kL1: acc += std::fabs(v); break;
          case Criterion::kL2: acc += v * v; break;
          case Criterion::kActivation: acc += std::fabs(v) * (norm ? (*norm)[col] : 1.0); break;
        }
      };
      if (s.axis == 0) {
        for (int64_t r = s.begin; r < s.end; ++r)
          for (int64_t col = 0; col < cols; ++col) add(r, col);
      } else {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t col = s.begin; col < s.end; ++col) add(r, col);
      }
    }
    score[i] = c == Criterion::kL2 ? std::sqrt(acc) : acc;
  }
  return score;
}

std::vector<float> RefitColumns(const std::vector<float>& w, int64_t rows, int64_t n,
                                const std::vector<double>& xtx,
                                const std::vector<int64_t>& kept, double damp) {
  const int64_t k = static_cast<int64_t>(kept.size());
  // A = H[S,S] + lambda I, Cholesky A = L L^T.
  std::vector<double> a(k * k);
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += xtx[kept[i] * n + kept[i]];
  mean_diag = k > 0 ? mean_diag / k : 0;
  const double lambda = std::max(damp * mean_diag, 1e-12);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * k + j] = xtx[kept[i] * n + kept[j]];
  for (int64_t i = 0; i < k; ++i) a[i * k + i] += lambda;
  for (int64_t j = 0; j < k; ++j) {
    double d = a[j * k + j];
    for (int64_t p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    d = std::sqrt(std::max(d, 1e-300));
    a[j * k + j] = d;
    for (int64_t i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (int64_t p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / d;
    }
  }
  std::vector<float> out(rows * k);
  std::vector<double> b(k), y(k);
  for (int64_t r = 0; r < rows; ++r) {
    // b = H[S,:] w_r
    for (int64_t i = 0; i < k; ++i) {
      const double* hrow = &xtx[kept[i] * n];
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += hrow[j] * w[r * n + j];
      b[i] = s;
    }
    for (int64_t i = 0; i < k; ++i) {  // L y = b
      double s = b[i];
      for (int64_t p = 0; p < i; ++p) s -= a[i * k + p] * y[p];
      y[i] = s / a[i * k + i];
    }
    for (int64_t i = k - 1; i >= 0; --i) {  // L^T x = y
      double s = y[i];
      for (int64_t p = i + 1; p < k; ++p) s -= a[p * k + i] * y[p];
      y[i] = s / a[i * k + i];
    }
    for (int64_t i = 0; i < k; ++i) out[r * k + i] = static_cast<float>(y[i]);
  }
  return out;
}

double OutputError(const std::vector<float>& w, int64_t rows, int64_t n,
                   const std::vector<double>& xtx, const std::vector<int64_t>& kept,
                   const std::vector<float>& w_kept) {
  const int64_t k = static_cast<int64_t>(kept.size());
  double total = 0;
  std::vector<double> e(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) e[j] = w[r * n + j];
    for (int64_t i = 0; i < k; ++i) e[kept[i]] -= w_kept[r * k + i];
    for (int64_t i = 0; i < n; ++i) {
      if (e[i] == 0) continue;
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += xtx[i * n + j] * e[j];
      total += e[i] * s;
    }
  }
  return total;
}

absl::StatusOr<PruneResult> PruneDecoder(ir::Model& m, const PruneOptions& o) {
  if (!(o.ratio >= 0 && o.ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prune ", o.ratio, ": the ratio must be in [0, 1)"));
  }
  PruneResult result;
  result.params_before = result.params_after = CountParams(m);
  ASSIGN_OR_RETURN(DecoderGroups g, BuildDecoderGroups(m));
  result.unprunable = g.unprunable;
  const bool mlp = o.target != Target::kHeads, heads = o.target != Target::kMlp;
  const int64_t drop_mlp =
      mlp ? std::min<int64_t>(std::llround(o.ratio * g.intermediate_size),
                              g.intermediate_size - 1)
          : 0;
  const int64_t drop_kv =
      heads ? std::min<int64_t>(std::llround(o.ratio * g.num_kv_heads), g.num_kv_heads - 1) : 0;
  result.removed_mlp_per_layer = drop_mlp;
  result.removed_kv_per_layer = drop_kv;
  const int64_t r = g.num_heads / g.num_kv_heads;
  auto fill_layers = [&](int64_t ff, int64_t kv) {
    result.layers.clear();
    for (int64_t l = 0; l < g.num_layers; ++l) result.layers.push_back({l, ff, kv, kv * r});
  };
  fill_layers(g.intermediate_size, g.num_kv_heads);
  if (drop_mlp == 0 && drop_kv == 0) return result;  // exact no-op

  const bool need_calib = o.criterion == Criterion::kActivation || o.refit;
  std::map<std::string, quantize::CapturedInput> captured;
  if (need_calib) {
    if (o.calib_paths.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "prune: ", o.criterion == Criterion::kActivation ? "--prune-criterion activation"
                                                            : "--prune-refit",
          " needs calibration data: pass --calib FILES (e.g. token windows as .npy)"));
    }
    ASSIGN_OR_RETURN(ir::Model runnable, llama::BuildDecoderGraph(m));
    calibration::DatasetOptions dopts;
    dopts.max_batch = 8;
    ASSIGN_OR_RETURN(calibration::Dataset data,
                     calibration::Dataset::Open(o.calib_paths,
                                                calibration::FeedInputs(runnable.graph), dopts));
    std::vector<std::string> weights;
    for (const LayerTensors& lt : g.layers) {
      if (mlp) weights.insert(weights.end(), {lt.gate, lt.down});
      if (heads && drop_kv > 0) weights.insert(weights.end(), {lt.q, lt.o});
    }
    quantize::CaptureRequest cr;
    cr.hessian = o.refit;
    ASSIGN_OR_RETURN(captured, quantize::CaptureLinearInputs(runnable, weights, data,
                                                             o.calib_samples, cr, o.threads));
  }
  InputNorms norms;
  for (const auto& [name, c] : captured) {
    std::vector<double> v(c.mean_sq.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sqrt(c.mean_sq[i]);
    norms[name] = std::move(v);
  }

  const int64_t h = g.hidden_size, d = g.head_dim;
  for (const LayerTensors& lt : g.layers) {
    if (drop_mlp > 0) {
      ASSIGN_OR_RETURN(std::vector<double> score,
                       GroupImportance(m, g, lt.layer, GroupKind::kMlpChannel, o.criterion, norms));
      const std::vector<int64_t> keep = TopIndices(score, g.intermediate_size - drop_mlp);
      const int64_t k = static_cast<int64_t>(keep.size()), ff = g.intermediate_size;
      ASSIGN_OR_RETURN(std::vector<float> gate, ToF32(*m.graph.FindInitializer(lt.gate)));
      ASSIGN_OR_RETURN(std::vector<float> up, ToF32(*m.graph.FindInitializer(lt.up)));
      ASSIGN_OR_RETURN(std::vector<float> down, ToF32(*m.graph.FindInitializer(lt.down)));
      std::vector<float> down_kept = o.refit ? RefitColumns(down, h, ff, captured.at(lt.down).xtx,
                                                            keep, o.damp)
                                             : KeepCols(down, h, ff, keep);
      RETURN_IF_ERROR(Replace(m, lt.gate, KeepRows(gate, h, keep), {k, h}));
      RETURN_IF_ERROR(Replace(m, lt.up, KeepRows(up, h, keep), {k, h}));
      RETURN_IF_ERROR(Replace(m, lt.down, down_kept, {h, k}));
    }
    if (drop_kv > 0) {
      ASSIGN_OR_RETURN(std::vector<double> score,
                       GroupImportance(m, g, lt.layer, GroupKind::kKvHead, o.criterion, norms));
      const std::vector<int64_t> keep = TopIndices(score, g.num_kv_heads - drop_kv);
      const std::vector<int64_t> q_rows = Expand(keep, r * d), kv_rows = Expand(keep, d);
      const int64_t qd = static_cast<int64_t>(q_rows.size()),
                    kvd = static_cast<int64_t>(kv_rows.size());
      for (const std::string* name : {&lt.q, &lt.k, &lt.v}) {
        ASSIGN_OR_RETURN(std::vector<float> w, ToF32(*m.graph.FindInitializer(*name)));
        const bool is_q = name == &lt.q;
        RETURN_IF_ERROR(Replace(m, *name, KeepRows(w, h, is_q ? q_rows : kv_rows),
                                {is_q ? qd : kvd, h}));
      }
      for (const std::string* name : {&lt.q_bias, &lt.k_bias, &lt.v_bias}) {
        if (name->empty()) continue;
        ASSIGN_OR_RETURN(std::vector<float> b, ToF32(*m.graph.FindInitializer(*name)));
        const bool is_q = name == &lt.q_bias;
        RETURN_IF_ERROR(Replace(m, *name, KeepRows(b, 1, is_q ? q_rows : kv_rows),
                                {is_q ? qd : kvd}));
      }
      ASSIGN_OR_RETURN(std::vector<float> ow, ToF32(*m.graph.FindInitializer(lt.o)));
      const int64_t on = g.num_heads * d;
      std::vector<float> o_kept = o.refit ? RefitColumns(ow, h, on, captured.at(lt.o).xtx,
                                                         q_rows, o.damp)
                                          : KeepCols(ow, h, on, q_rows);
      RETURN_IF_ERROR(Replace(m, lt.o, o_kept, {h, qd}));
    }
  }

  // Architecture and config.json: one value per field for every layer.
  ir::ArchitectureInfo& a = *m.architecture;
  a.intermediate_size = g.intermediate_size - drop_mlp;
  a.num_kv_heads = g.num_kv_heads - drop_kv;
  a.num_heads = a.num_kv_heads * r;
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
  a.config_json = cfg.dump(2) + "\n";
  ASSIGN_OR_RETURN(std::string config_path, WriteConfig(a.config_json, o.config_dir,
                                                                &result.created_dir));
  result.config_path = config_path;
  bool replaced = false;
  for (std::string& f : m.carried_files) {
    if (f.size() >= 11 && f.compare(f.size() - 11, 11, "config.json") == 0 &&
        (f.size() == 11 || f[f.size() - 12] == '/')) {
      f = config_path;
      replaced = true;
    }
  }
  if (!replaced) m.carried_files.push_back(config_path);

  result.changed = true;
  fill_layers(a.intermediate_size, a.num_kv_heads);
  result.params_after = CountParams(m);
  return result;
}

}  // namespace slimpack::prune
