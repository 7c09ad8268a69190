#include "quantize/size_planner.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "quantize/numerics/rtn.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

struct Option {
  size_t candidate = 0;
  uint64_t bytes = 0;
  double error = 0;
  std::vector<float> approx;  // the stored values, [rows, cols]
};

// Error of `scheme` on matrix m (see the header for the unit).
absl::StatusOr<Option> Measure(const Matrix& m, const WeightScheme& scheme, const float* imp,
                               bool embedding, int threads) {
  Option o;
  const uint64_t n = static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols);
  std::vector<float> approx(n);
  if (scheme.kind == WeightScheme::Kind::kKeep || scheme.kind == WeightScheme::Kind::kFloat) {
    // Float storage: f32 exact; f16/bf16 rounding is tiny next to 8 bits.
    const ir::DType d = scheme.kind == WeightScheme::Kind::kKeep ? ir::DType::kF32 : scheme.float_dtype;
    o.bytes = n * (ir::DTypeBits(d) / 8);
    std::vector<uint8_t> stored(o.bytes);
    RETURN_IF_ERROR(ir::ConvertFloats(ir::DType::kF32,
                                             reinterpret_cast<const uint8_t*>(m.w.data()), d,
                                             stored.data(), n));
    RETURN_IF_ERROR(ir::ConvertFloats(d, stored.data(), ir::DType::kF32,
                                             reinterpret_cast<uint8_t*>(approx.data()), n));
  } else {
    const quant::Scheme q = scheme.Numerics();
    quant::RtnOptions ro;
    ro.threads = threads;
    ro.importance = imp;
    ro.mse_clip = true;
    ASSIGN_OR_RETURN(quant::QuantizedMatrix qm, quant::QuantizeRtn(m.w.data(), m.rows, m.cols, q, ro));
    quant::Dequantize(qm, approx.data());
    o.bytes = qm.StorageBytes();
  }
  double err = 0;
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) {
      const double d = static_cast<double>(m.w[r * m.cols + c]) - approx[r * m.cols + c];
      err += (imp != nullptr ? imp[c] : 1.0) * d * d;
    }
  }
  if (embedding && m.rows > 0) err /= static_cast<double>(m.rows);
  o.error = err;
  o.approx = std::move(approx);
  return o;
}

// Lower convex hull of (bytes, error), smallest bytes first; dominated
// options (more bytes, no less error) are dropped.
std::vector<Option> Hull(std::vector<Option> opts) {
  std::sort(opts.begin(), opts.end(), [](const Option& a, const Option& b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.error < b.error;
  });
  std::vector<Option> pareto;
  for (const Option& o : opts) {
    if (!pareto.empty() && o.error >= pareto.back().error) continue;
    if (!pareto.empty() && o.bytes == pareto.back().bytes) continue;
    pareto.push_back(o);
  }
  std::vector<Option> hull;
  for (const Option& o : pareto) {
    while (hull.size() >= 2) {
      const Option& a = hull[hull.size() - 2];
      const Option& b = hull.back();
      // Drop b when it lies on or above the segment a-o.
      const double lhs = (b.error - a.error) * static_cast<double>(o.bytes - a.bytes);
      const double rhs = (o.error - a.error) * static_cast<double>(b.bytes - a.bytes);
      if (lhs >= rhs) {
        hull.pop_back();
      } else {
        break;
      }
    }
    hull.push_back(o);
  }
  return hull;
}

bool IsCandidateFor(const WeightScheme& s, const WeightUse& use) {
  // The group-wise layouts cannot group a spatial kernel.
  return !(use.op == "Conv" && s.kind == WeightScheme::Kind::kInt &&
           (s.bits < 8 || s.group_size > 0));
}

}  // namespace

absl::StatusOr<uint64_t> ParseTargetSize(std::string_view text) {
  const std::string shown(text);
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string number(text.substr(0, i));
  const std::string unit(text.substr(i));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "TB") mult = 1e12;
  else if (unit == "K" || unit == "KiB") mult = 1024.0;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  char* end = nullptr;
  const double v = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (mult == 0 || number.empty() || end != number.c_str() + number.size() || !(v > 0) ||
      v * mult > 9.0e15) {
    return absl::InvalidArgumentError(
        "size '" + shown + "' is not a positive size (e.g. 3.8GB = 3.8e9 bytes, 3.5GiB, 900MB)");
  }
  return static_cast<uint64_t>(std::llround(v * mult));
}

std::vector<WeightScheme> DefaultCandidates() {
  std::vector<WeightScheme> out;
  for (const char* n : {"int8", "int4-g128", "int4-g64", "int4-g32"}) {
    out.push_back(*ParseWeightScheme(n));
  }
  return out;
}

absl::StatusOr<SizePlan> PlanForSize(const ir::Model& model, const std::vector<WeightUse>& uses,
                                     const std::map<std::string, std::vector<float>>& importance,
                                     const SizeTarget& target, int threads) {
  if (!target.bytes && !target.bpw) {
    return absl::InvalidArgumentError("size planner: set a target size or bits per weight");
  }
  const std::vector<WeightScheme> cands =
      target.candidates.empty() ? DefaultCandidates() : target.candidates;
  // Candidates first, then the schemes rules fixed.
  std::vector<WeightScheme> all = cands;
  for (const auto& [name, s] : target.fixed) {
    if (std::find(all.begin(), all.end(), s) == all.end()) all.push_back(s);
  }
  SizePlan plan;
  std::set<std::string> planned;
  std::vector<std::vector<Option>> hulls;
  support::ProgressEvent measured_tensors{"planner", 0, static_cast<int64_t>(uses.size()),
                                          "tensors", ""};
  const bool report = target.output_error && target.progress;
  if (report) target.progress(measured_tensors);
  for (const WeightUse& use : uses) {
    planned.insert(use.tensor);
    const ir::Tensor* t = model.graph.FindInitializer(use.tensor);
    ASSIGN_OR_RETURN(Matrix m, AsMatrix(*t, use.transposed));
    plan.parameters += m.w.size();
    auto imp = importance.find(use.tensor);
    const float* ip = imp != importance.end() && static_cast<int64_t>(imp->second.size()) == m.cols
                          ? imp->second.data()
                          : nullptr;
    std::vector<Option> opts;
    auto fixed = target.fixed.find(use.tensor);
    for (size_t c = 0; c < all.size(); ++c) {
      if (fixed != target.fixed.end() ? !(all[c] == fixed->second)
                                      : (c >= cands.size() || !IsCandidateFor(all[c], use))) {
        continue;
      }
      auto o = Measure(m, all[c], ip, use.op == "Gather", threads);
      if (!o.ok()) return Annotate(o.status(), "size planner, tensor '" + use.tensor + "'");
      o->candidate = c;
      opts.push_back(*std::move(o));
    }
    if (target.output_error && !opts.empty()) {
      // Measured sensitivity: the smallest option's end-to-end output error
      // fixes this tensor's scale; the proxy orders its other options.
      const Option* small = &opts[0];
      for (const Option& o : opts) {
        if (o.bytes < small->bytes) small = &o;
      }
      auto measured = target.output_error(
          use, InTensorOrder(small->approx, m.rows, m.cols, use.transposed));
      if (!measured.ok()) return Annotate(measured.status(), "size planner, tensor '" + use.tensor + "'");
      const double gain = small->error > 0 ? *measured / small->error : 0;
      for (Option& o : opts) o.error = small->error > 0 ? o.error * gain : 0;
    }
    if (report) {
      ++measured_tensors.done;
      measured_tensors.context = use.tensor;
      target.progress(measured_tensors);
    }
    for (Option& o : opts) o.approx = {};
    if (opts.empty()) {
      return absl::InvalidArgumentError("size planner: no candidate scheme fits tensor '" +
                                        use.tensor + "' (" + use.op + ")");
    }
    hulls.push_back(Hull(std::move(opts)));
  }
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (!planned.count(t.name)) plan.other_bytes += t.data.size();
  }
  uint64_t budget = 0;
  if (target.bytes) {
    if (*target.bytes <= plan.other_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target size ", *target.bytes, " bytes is not above the ", plan.other_bytes,
          " bytes of tensors that are not quantized"));
    }
    budget = *target.bytes - plan.other_bytes;
  } else {
    budget = static_cast<uint64_t>(std::floor(*target.bpw * static_cast<double>(plan.parameters) / 8));
  }
  std::vector<size_t> at(hulls.size(), 0);
  uint64_t used = 0;
  for (const auto& h : hulls) used += h[0].bytes;
  if (used > budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target is below the smallest plan: the quantized tensors need at least ", used,
        " bytes with these candidates, the target leaves ", budget,
        " (add smaller candidates or raise the target)"));
  }
  // Best upgrade first: largest error drop per byte, then tensor order.
  struct Upgrade {
    double gain_per_byte;
    size_t tensor;
  };
  auto worse = [](const Upgrade& a, const Upgrade& b) {
    return a.gain_per_byte != b.gain_per_byte ? a.gain_per_byte < b.gain_per_byte
                                              : a.tensor > b.tensor;
  };
  std::priority_queue<Upgrade, std::vector<Upgrade>, decltype(worse)> queue(worse);
  auto push = [&](size_t i) {
    if (at[i] + 1 >= hulls[i].size()) return;
    const Option& a = hulls[i][at[i]];
    const Option& b = hulls[i][at[i] + 1];
    queue.push({(a.error - b.error) / static_cast<double>(b.bytes - a.bytes), i});
  };
  for (size_t i = 0; i < hulls.size(); ++i) push(i);
  while (!queue.empty()) {
    const Upgrade u = queue.top();
    queue.pop();
    const Option& a = hulls[u.tensor][at[u.tensor]];
    const Option& b = hulls[u.tensor][at[u.tensor] + 1];
    if (used - a.bytes + b.bytes > budget) continue;  // this tensor stays
    used = used - a.bytes + b.bytes;
    ++at[u.tensor];
    push(u.tensor);
  }
  for (size_t i = 0; i < hulls.size(); ++i) {
    const Option& o = hulls[i][at[i]];
    plan.choices.push_back({uses[i].tensor, all[o.candidate], o.bytes, o.error});
    plan.planned_bytes += o.bytes;
    plan.error += o.error;
  }
  plan.budget = budget;
  plan.bpw = plan.parameters ? 8.0 * static_cast<double>(plan.planned_bytes) /
                                   static_cast<double>(plan.parameters)
                             : 0;
  return plan;
}

}  // namespace slimpack::quantize
