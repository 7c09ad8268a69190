#include "quantize/awq_fold.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "quantize/float_walk.h"
#include "quantize/linear_capture.h"
#include "quantize/numerics/awq.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

using ir::WeightRole;

// A member stored as it is (a float type): no rounding to measure.
absl::Status Unrounded(const float* w, int64_t rows, int64_t cols, float* decoded) {
  std::copy(w, w + rows * cols, decoded);
  return absl::OkStatus();
}

struct Group {
  std::string label;                   // "layer 3 attn"
  std::vector<std::string> members;    // weights scaled by columns
  std::string input_of;                // member whose captured input is X
  std::string fold_into;               // 1-D gain, or a weight whose rows take 1/s
  std::string fold_bias;               // bias scaled with fold_into's rows, or ""
  bool fold_rows = false;              // fold_into is a [out, in] weight

  // Whether options.written asks for this group's scales.
  bool Searched(const AwqFoldOptions& o) const {
    if (!o.written) return true;
    for (const std::string& m : members) {
      if (!m.empty() && o.written->count(m)) return true;
    }
    return o.written->count(fold_into) > 0 ||
           (!fold_bias.empty() && o.written->count(fold_bias) > 0);
  }
};

// The AWQ groups of a checkpoint (reads only).
class GroupFinder {
 public:
  explicit GroupFinder(const ir::Model& ckpt) : ckpt_(ckpt) {}

  std::string Find(int layer, WeightRole role) const {
    for (const ir::Tensor& t : ckpt_.graph.initializers()) {
      if (t.layer == layer && t.role == role) return t.name;
    }
    return "";
  }
  // Qwen2 biases carry role kBias; find v_proj's by name.
  std::string FindBias(const std::string& weight) const {
    const std::string suffix = ".weight";
    if (weight.size() < suffix.size()) return "";
    const std::string b = weight.substr(0, weight.size() - suffix.size()) + ".bias";
    return ckpt_.graph.FindInitializer(b) ? b : "";
  }

  std::vector<Group> Groups(const std::set<std::string>& awq) const {
    const ir::ArchitectureInfo& a = *ckpt_.architecture;
    std::vector<Group> out;
    for (int l = 0; l < a.num_layers; ++l) {
      const std::string q = Find(l, WeightRole::kQProj), k = Find(l, WeightRole::kKProj),
                        v = Find(l, WeightRole::kVProj), o = Find(l, WeightRole::kOProj),
                        gate = Find(l, WeightRole::kGateProj), up = Find(l, WeightRole::kUpProj),
                        down = Find(l, WeightRole::kDownProj);
      auto any = [&](std::initializer_list<std::string> ws) {
        for (const auto& w : ws) {
          if (!w.empty() && awq.count(w)) return true;
        }
        return false;
      };
      if (any({q, k, v})) {
        out.push_back({absl::StrCat("layer ", l, " q/k/v"), {q, k, v}, q,
                       Find(l, WeightRole::kAttnNorm), "", false});
      }
      if (any({gate, up})) {
        out.push_back({absl::StrCat("layer ", l, " gate/up"), {gate, up}, gate,
                       Find(l, WeightRole::kMlpNorm), "", false});
      }
      if (any({down})) {
        out.push_back({absl::StrCat("layer ", l, " down"), {down}, down, up, "", true});
      }
      if (any({o}) && a.num_heads == a.num_kv_heads) {
        out.push_back({absl::StrCat("layer ", l, " o"), {o}, o, v, FindBias(v), true});
      }
    }
    return out;
  }

 private:
  const ir::Model& ckpt_;
};

class Folder {
 public:
  Folder(ir::Model& ckpt, const AwqFoldOptions& o) : ckpt_(ckpt), opts_(o) {}

  // options.lazy: what each rescaled weight's values go through.
  std::map<std::string, ValueFold>& folds() { return folds_; }

  // `scheme` is read only without round trips. Null `x`: unit scales, no
  // search (a group another part writes: AwqFoldOptions::written).
  absl::StatusOr<std::string> Apply(const Group& g, const CapturedInput* x,
                                    const std::optional<WeightScheme>& scheme) {
    std::vector<Matrix> ws;
    for (const std::string& name : g.members) {
      const ir::Tensor* t = ckpt_.graph.FindInitializer(name);
      if (t == nullptr) return absl::NotFoundError("AWQ group " + g.label + ": no tensor " + name);
      ASSIGN_OR_RETURN(Matrix m, AsMatrix(*t, false));
      ws.push_back(std::move(m));
    }
    const int64_t cols = ws[0].cols;
    std::vector<quant::AwqLinear> views;
    for (const Matrix& m : ws) {
      if (m.cols != cols) {
        return absl::InvalidArgumentError("AWQ group " + g.label + ": members disagree on input width");
      }
      views.push_back({m.w.data(), m.rows});
    }
    Scales found;
    if (x == nullptr) {
      found.scales.assign(cols, 1.0f);  // x * 1 and x / 1 are exact: only the dtype changes
    } else {
      ASSIGN_OR_RETURN(found, Search(g, *x, views, cols, scheme));
    }
    const std::vector<float>& s = found.scales;
    // Members: W[:, c] *= s[c].
    for (size_t i = 0; i < ws.size(); ++i) {
      const ir::Tensor* t = ckpt_.graph.FindInitializer(g.members[i]);
      if (opts_.lazy) {
        ValueFold& fold = folds_[g.members[i]];
        // ValueFold scales columns before it divides rows, as the groups'
        // order does (q/k/v before o, gate/up before down).
        if (!fold.col_scale.empty() || !fold.row_divisor.empty()) {
          return absl::InternalError("AWQ group " + g.label + ": " + g.members[i] +
                                     " was rescaled by an earlier group");
        }
        fold.col_scale = s;
        ir::Tensor same = *t;  // moved to the end, as the eager fold moves it
        RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, std::move(same)));
        continue;
      }
      Matrix& m = ws[i];
      for (int64_t r = 0; r < m.rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) m.w[r * cols + c] *= s[c];
      }
      RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, F32Like(*t, m.w)));
    }
    // The producer of the shared input divides by s.
    const ir::Tensor* f = ckpt_.graph.FindInitializer(g.fold_into);
    if (f == nullptr) return absl::NotFoundError("AWQ group " + g.label + ": no tensor " + g.fold_into);
    if (g.fold_rows && (f->dims.size() != 2 || f->dims[0] != cols)) {
      return absl::InvalidArgumentError("AWQ group " + g.label + ": " + g.fold_into +
                                        " rows do not match the scaled input width");
    }
    if (g.fold_rows && opts_.lazy) {
      ValueFold& fold = folds_[g.fold_into];
      if (!fold.row_divisor.empty()) {
        return absl::InternalError("AWQ group " + g.label + ": " + g.fold_into +
                                   " rows were divided by an earlier group");
      }
      fold.row_divisor = s;
      ir::Tensor same = *f;
      RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, std::move(same)));
    } else if (g.fold_rows) {
      ASSIGN_OR_RETURN(std::vector<float> fv, ToF32(*f));
      const int64_t in = f->dims[1];
      for (int64_t r = 0; r < cols; ++r) {
        for (int64_t c = 0; c < in; ++c) fv[r * in + c] /= s[r];
      }
      RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, F32Like(*f, fv)));
    } else {
      ASSIGN_OR_RETURN(std::vector<float> fv, ToF32(*f));
      if (static_cast<int64_t>(fv.size()) != cols) {
        return absl::InvalidArgumentError("AWQ group " + g.label + ": " + g.fold_into +
                                          " length does not match the scaled input width");
      }
      for (int64_t c = 0; c < cols; ++c) fv[c] /= s[c];
      RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, F32Like(*f, fv)));
    }
    if (!g.fold_bias.empty()) {
      const ir::Tensor* b = ckpt_.graph.FindInitializer(g.fold_bias);
      ASSIGN_OR_RETURN(std::vector<float> bv, ToF32(*b));
      for (int64_t r = 0; r < cols && r < static_cast<int64_t>(bv.size()); ++r) bv[r] /= s[r];
      RETURN_IF_ERROR(ReplaceInitializer(ckpt_.graph, F32Like(*b, bv)));
    }
    if (x == nullptr) return absl::StrCat(g.label, ": not searched (another part writes it)");
    return absl::StrCat(g.label, ": alpha ", found.alpha, ", output error ", found.before,
                        " -> ", found.after, " on ", x->kept, " rows");
  }

 private:
  // What a search chose: the scales, its alpha and its output errors at
  // alpha 0 and at the chosen one.
  struct Scales {
    std::vector<float> scales;
    float alpha = 0;
    double before = 0, after = 0;
  };

  absl::StatusOr<Scales> Search(const Group& g, const CapturedInput& x,
                                const std::vector<quant::AwqLinear>& views, int64_t cols,
                                const std::optional<WeightScheme>& scheme) const {
    if (static_cast<int64_t>(x.mean_abs.size()) != cols ||
        static_cast<int64_t>(x.samples.size()) != x.kept * cols) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AWQ group ", g.label, ": the input of '", g.input_of, "' has ", x.mean_abs.size(),
          " columns and ", x.samples.size(), " values over ", x.kept, " rows; the weights have ",
          cols, " input columns"));
    }
    std::vector<float> mean_abs(x.mean_abs.begin(), x.mean_abs.end());
    quant::AwqOptions ao;
    ao.grid = opts_.grid;
    ao.threads = opts_.threads;
    if (!opts_.round_trips.empty()) {
      std::vector<quant::AwqRoundTrip> trips;
      for (const std::string& name : g.members) {
        auto it = opts_.round_trips.find(name);
        trips.push_back(it != opts_.round_trips.end() ? it->second : Unrounded);
      }
      auto found = quant::SearchAwqScalesOnGrids(views, cols, x.samples.data(), x.kept, mean_abs,
                                                 trips, ao);
      if (!found.ok()) return Annotate(found.status(), "AWQ group " + g.label);
      return Scales{std::move(found->scales), found->alpha, found->error_before,
                    found->error_after};
    }
    auto found = quant::SearchAwqScales(views, cols, x.samples.data(), x.kept, mean_abs,
                                        scheme->Numerics(), ao);
    if (!found.ok()) return Annotate(found.status(), "AWQ group " + g.label);
    return Scales{std::move(found->scales), found->alpha, found->error_before,
                  found->error_after};
  }

  ir::Model& ckpt_;
  const AwqFoldOptions& opts_;
  std::map<std::string, ValueFold> folds_;  // options.lazy
};

absl::Status CheckArchitecture(const ir::Model& checkpoint) {
  if (!checkpoint.architecture || !checkpoint.architecture->known) {
    return absl::FailedPreconditionError(
        "awq needs a Hugging Face decoder checkpoint with a known architecture (config.json)");
  }
  return absl::OkStatus();
}

// The inputs of the groups `options` searches.
absl::StatusOr<std::vector<std::string>> SearchedInputs(const ir::Model& checkpoint,
                                                        const std::set<std::string>& awq_weights,
                                                        const AwqFoldOptions& options) {
  RETURN_IF_ERROR(CheckArchitecture(checkpoint));
  std::vector<std::string> inputs;
  for (const Group& g : GroupFinder(checkpoint).Groups(awq_weights)) {
    if (g.Searched(options)) inputs.push_back(g.input_of);
  }
  return inputs;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> AwqInputWeights(
    const ir::Model& checkpoint, const std::set<std::string>& awq_weights) {
  return SearchedInputs(checkpoint, awq_weights, AwqFoldOptions());
}

absl::StatusOr<AwqInputs> CaptureAwqInputs(const ir::Model& checkpoint,
                                           const std::set<std::string>& awq_weights,
                                           calibration::Dataset& data,
                                           const AwqFoldOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<std::string> inputs,
                   SearchedInputs(checkpoint, awq_weights, options));
  // A part that writes no AWQ group's tensor runs nothing.
  if (inputs.empty()) return AwqInputs();
  FloatWalkOptions walk;
  walk.max_runs = options.max_runs;
  walk.threads = options.threads;
  walk.capture.keep_rows = options.keep_rows;
  walk.stage = "awq-inputs";
  walk.progress = options.progress;
  AwqInputs out;
  RETURN_IF_ERROR(WalkFloatModel(checkpoint, inputs, data, walk,
                                 [&out](const std::string& weight, CapturedInput& c) {
                                   out[weight] = std::move(c);
                                   return absl::OkStatus();
                                 }));
  return out;
}

absl::StatusOr<AwqFoldResult> ApplyAwqScalesFrom(ir::Model& checkpoint,
                                                 const std::set<std::string>& awq_weights,
                                                 const std::map<std::string, WeightScheme>& schemes,
                                                 const AwqInputs& inputs,
                                                 const AwqFoldOptions& options) {
  RETURN_IF_ERROR(CheckArchitecture(checkpoint));
  Folder folder(checkpoint, options);
  AwqFoldResult result;
  const std::vector<Group> groups = GroupFinder(checkpoint).Groups(awq_weights);
  // The search is most of an AWQ conversion's time (minutes at width
  // 1024): stage "awq", one event per group rewritten.
  support::ProgressEvent event{"awq", 0, static_cast<int64_t>(groups.size()), "groups", ""};
  if (options.progress) options.progress(event);
  for (const Group& g : groups) {
    const bool searched = g.Searched(options);
    auto x = inputs.find(g.input_of);
    if (searched && x == inputs.end()) {
      return absl::NotFoundError("AWQ group " + g.label + ": no captured input of '" +
                                 g.input_of + "'");
    }
    // The search quantizes with the scheme of the first AWQ member.
    std::optional<WeightScheme> scheme;
    for (const std::string& m : g.members) {
      auto it = schemes.find(m);
      if (it != schemes.end() && !scheme) scheme = it->second;
    }
    if (!scheme && options.round_trips.empty()) {
      return absl::InternalError("AWQ group " + g.label + ": no member has a scheme");
    }
    ASSIGN_OR_RETURN(std::string line, folder.Apply(g, searched ? &x->second : nullptr, scheme));
    result.log.push_back(std::move(line));
    ++result.groups;
    result.searched += searched ? 1 : 0;
    ++event.done;
    event.context = g.label;
    if (options.progress) options.progress(event);
  }
  for (auto& [name, fold] : folder.folds()) {
    result.folds[name] = std::make_shared<const ValueFold>(std::move(fold));
  }
  return result;
}

absl::StatusOr<AwqFoldResult> ApplyAwqScales(ir::Model& checkpoint,
                                             const std::set<std::string>& awq_weights,
                                             const std::map<std::string, WeightScheme>& schemes,
                                             calibration::Dataset& data,
                                             const AwqFoldOptions& options) {
  ASSIGN_OR_RETURN(const AwqInputs inputs,
                   CaptureAwqInputs(checkpoint, awq_weights, data, options));
  return ApplyAwqScalesFrom(checkpoint, awq_weights, schemes, inputs, options);
}

}  // namespace slimpack::quantize
