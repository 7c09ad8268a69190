// Magnitude / Wanda sparsification, unstructured and 2:4 (prune/sparsify.h).
#include "prune/sparsify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "calibration/dataset.h"
#include "calibration/token_ids.h"
#include "hf/llama_graph_builder.h"
#include "ir/float_convert.h"
#include "quantize/float_walk.h"
#include "quantize/quant_rules.h"
#include "quantize/weight_matrix.h"
#include "support/input_pages.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::sparsify {
namespace {

// NaN scores sort as the largest, so a NaN weight is kept (and surfaces in
// evaluation) rather than silently removed.
double Key(double s) { return std::isnan(s) ? std::numeric_limits<double>::infinity() : s; }

bool Eligible(const quantize::WeightUse& use, const ir::Tensor& t) {
  if (use.op == "Gather") return false;
  if (use.op == "Linear") {
    switch (t.role) {
      case ir::WeightRole::kQProj:
      case ir::WeightRole::kKProj:
      case ir::WeightRole::kVProj:
      case ir::WeightRole::kOProj:
      case ir::WeightRole::kGateProj:
      case ir::WeightRole::kUpProj:
      case ir::WeightRole::kDownProj:
        return true;
      default:
        return false;  // embeddings, lm_head
    }
  }
  return use.op == "MatMul" || use.op == "Gemm" || use.op == "Conv";
}

// Per-input-feature L2 norms of the calibration inputs of each captured
// weight (sqrt of mean x^2; the row count scales every norm alike, so the
// per-row ranking is the paper's).
absl::StatusOr<std::map<std::string, std::vector<double>>> InputNorms(
    const ir::Model& model, const std::vector<std::string>& weights,
    const SparsifyOptions& o) {
  if (o.calib_paths.empty()) {
    return absl::FailedPreconditionError(
        "sparsify: --sparsity-criterion wanda needs calibration data: pass --calib FILES "
        "(e.g. token windows as .npy)");
  }
  ir::Model runnable;
  if (model.graph.nodes.empty()) {
    ASSIGN_OR_RETURN(runnable, hf::BuildDecoderGraph(model));
  } else {
    runnable = model;
  }
  calibration::DatasetOptions dopts;
  dopts.max_batch = 8;
  dopts.vocab_size = calibration::KnownVocabSize(runnable);
  ASSIGN_OR_RETURN(calibration::Dataset data,
                   calibration::Dataset::Open(o.calib_paths,
                                              calibration::FeedInputs(runnable.graph), dopts));
  // Layer by layer (quantize/float_walk.h): one layer's weights widened at
  // a time, the float model's inputs either way.
  quantize::FloatWalkOptions walk;
  walk.max_runs = o.calib_samples;
  walk.threads = o.threads;
  walk.stage = "wanda";
  std::map<std::string, std::vector<double>> norms;
  RETURN_IF_ERROR(quantize::WalkFloatModel(
      model, weights, data, walk, [&norms](const std::string& name, quantize::CapturedInput& c) {
        std::vector<double> v(c.mean_sq.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = std::sqrt(c.mean_sq[i]);
        norms[name] = std::move(v);
        return absl::OkStatus();
      }));
  return norms;
}

// Rows widened and sparsified at a time: about a million elements, so the
// f32 working set stays a few MiB whatever the weight's size.
constexpr uint64_t kBlockElements = uint64_t{1} << 20;

// One eligible weight, as planned: its tensor (sharing the source's bytes),
// the view the pattern works on and the wanda input norms (empty:
// magnitude).
struct WeightJob {
  ir::Tensor source;
  ir::SparseView view;
  std::vector<double> scale;
};

// Sparsifies `job.source`, putting the number of elements that end as zero
// in *zeros and, when `out` is set (source.data.size() bytes), the bytes in
// the tensor's own dtype with the pruned elements zeroed (the kept ones
// keep their exact bytes). A row-major view of an f32/f16/bf16 tensor goes
// a block of rows at a time, read through `pages` (so a mapped input's
// bytes never enter the RSS) and given back; the pattern works row by row,
// so the blocks give the bytes of the whole. A transposed view (an ONNX
// [in, out] weight) or another dtype is widened whole.
absl::Status SparsifyInto(const WeightJob& job, const SparsifyOptions& o,
                          const support::InputPages& pages, uint8_t* out, uint64_t* zeros) {
  const ir::Tensor& t = job.source;
  const uint64_t esize = static_cast<uint64_t>(ir::DTypeBits(t.dtype) / 8);
  const uint64_t numel = static_cast<uint64_t>(job.view.rows) * static_cast<uint64_t>(job.view.cols);
  if (esize == 0 || t.data.size() != numel * esize) {
    return absl::InternalError("tensor '" + t.name + "': " + std::to_string(t.data.size()) +
                               " bytes for " + std::to_string(numel) + " elements");
  }
  *zeros = 0;
  auto emit = [&](const std::vector<float>& w, const uint8_t* src, uint64_t first) {
    for (float x : w) *zeros += x == 0.0f;
    if (out == nullptr) return;
    uint8_t* dst = out + first * esize;
    std::memcpy(dst, src, w.size() * esize);
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] == 0.0f) std::memset(dst + i * esize, 0, esize);
    }
  };
  const std::string ctx = "tensor '" + t.name + "'";
  if (job.view.transposed || !ir::IsConvertibleFloat(t.dtype)) {
    ASSIGN_OR_RETURN(std::vector<float> w, quantize::ToF32(t));
    absl::StatusOr<uint64_t> done = SparsifyMatrix(w, job.view, o.pattern, o.ratio, job.scale);
    if (!done.ok()) return Annotate(done.status(), ctx);
    emit(w, t.data.data(), 0);
    return absl::OkStatus();
  }
  const int64_t cols = job.view.cols;
  const int64_t block_rows =
      std::max<int64_t>(1, static_cast<int64_t>(kBlockElements) / std::max<int64_t>(cols, 1));
  std::vector<uint8_t> raw;
  std::vector<float> w;
  for (int64_t r = 0; r < job.view.rows; r += block_rows) {
    const int64_t rows = std::min(block_rows, job.view.rows - r);
    const uint64_t n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
    const uint64_t first = static_cast<uint64_t>(r) * static_cast<uint64_t>(cols);
    const uint8_t* src = t.data.data() + first * esize;
    raw.resize(n * esize);
    pages.Copy(src, n * esize, raw.data());
    w.resize(n);
    RETURN_IF_ERROR(ir::ConvertFloats(t.dtype, raw.data(), ir::DType::kF32,
                                      reinterpret_cast<uint8_t*>(w.data()), n));
    const ir::SparseView block{rows, cols, false};
    absl::StatusOr<uint64_t> done = SparsifyMatrix(w, block, o.pattern, o.ratio, job.scale);
    if (!done.ok()) return Annotate(done.status(), ctx);
    emit(w, raw.data(), first);
    pages.Release(src, n * esize);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Criterion> ParseCriterion(std::string_view s) {
  if (s == "magnitude") return Criterion::kMagnitude;
  if (s == "wanda") return Criterion::kWanda;
  return absl::InvalidArgumentError("unknown sparsity criterion '" + std::string(s) +
                                    "' (supported: magnitude, wanda)");
}

std::string_view CriterionName(Criterion c) {
  return c == Criterion::kWanda ? "wanda" : "magnitude";
}

absl::StatusOr<uint64_t> SparsifyMatrix(std::vector<float>& w, const ir::SparseView& v,
                                        ir::SparsityPattern pattern, double ratio,
                                        const std::vector<double>& col_scale) {
  if (!col_scale.empty() && col_scale.size() != static_cast<size_t>(v.cols)) {
    return absl::InvalidArgumentError("sparsify: " + std::to_string(col_scale.size()) +
                                      " input norms for " + std::to_string(v.cols) + " inputs");
  }
  if (pattern == ir::SparsityPattern::k2of4 && v.cols % 4 != 0) {
    return absl::InvalidArgumentError("sparsify: 2:4 needs a multiple of 4 inputs, found " +
                                      std::to_string(v.cols));
  }
  auto score = [&](int64_t r, int64_t c) {
    const double a = std::fabs(static_cast<double>(w[static_cast<size_t>(v.At(r, c))]));
    return Key(col_scale.empty() ? a : a * col_scale[static_cast<size_t>(c)]);
  };
  uint64_t zeroed = 0;
  auto zero = [&](int64_t r, int64_t c) {
    float& x = w[static_cast<size_t>(v.At(r, c))];
    zeroed += x != 0.0f;
    x = 0.0f;
  };
  if (pattern == ir::SparsityPattern::k2of4) {
    for (int64_t r = 0; r < v.rows; ++r) {
      for (int64_t c = 0; c < v.cols; c += 4) {
        double s[4];
        for (int k = 0; k < 4; ++k) s[k] = score(r, c + k);
        // Ordered highest first, ties lower index first, the last two are
        // zeroed: an element goes when two others come before it. (The
        // order is strict, so this is a sort's outcome without the sort.)
        for (int k = 0; k < 4; ++k) {
          int before = 0;
          for (int j = 0; j < 4; ++j) before += j != k && (s[j] > s[k] || (s[j] == s[k] && j < k));
          if (before >= 2) zero(r, c + k);
        }
      }
    }
    return zeroed;
  }
  const int64_t k = static_cast<int64_t>(std::floor(ratio * static_cast<double>(v.cols)));
  if (k <= 0) return zeroed;
  std::vector<int64_t> order(static_cast<size_t>(v.cols));
  std::vector<double> s(static_cast<size_t>(v.cols));
  for (int64_t r = 0; r < v.rows; ++r) {
    for (int64_t c = 0; c < v.cols; ++c) s[static_cast<size_t>(c)] = score(r, c);
    std::iota(order.begin(), order.end(), 0);
    // Lowest first; ties: higher index first (pruned), so the lower is kept.
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), [&](int64_t a, int64_t b) {
      const double sa = s[static_cast<size_t>(a)], sb = s[static_cast<size_t>(b)];
      return sa < sb || (sa == sb && a > b);
    });
    for (int64_t i = 0; i < k; ++i) zero(r, order[static_cast<size_t>(i)]);
  }
  return zeroed;
}

nlohmann::json SparsifyResult::ToJson() const {
  nlohmann::json out = {{"numel", numel}, {"tensors", tensors.size()}, {"zeros", zeros}};
  nlohmann::json notes = nlohmann::json::array();
  for (const TensorStats& t : tensors) {
    if (!t.note.empty()) notes.push_back(t.name + ": " + t.note);
  }
  if (!notes.empty()) out["notes"] = std::move(notes);
  if (!skipped.empty()) out["skipped"] = skipped;
  return out;
}

absl::StatusOr<SparsifyResult> SparsifyWeights(ir::Model& model, const SparsifyOptions& o) {
  SparsifyResult result;
  if (!(o.ratio >= 0 && o.ratio < 1)) {
    return absl::InvalidArgumentError("sparsify: ratio " + std::to_string(o.ratio) +
                                      " is outside [0, 1)");
  }
  const bool two_four = o.pattern == ir::SparsityPattern::k2of4;
  if (two_four && o.ratio != 0.5) {
    return absl::InvalidArgumentError("sparsify: the 2:4 pattern zeroes exactly half of each "
                                      "group; ratio must be 0.5, found " +
                                      std::to_string(o.ratio));
  }
  if (o.pattern == ir::SparsityPattern::kNone || (!two_four && o.ratio == 0)) return result;

  std::vector<quantize::WeightUse> uses;
  for (const quantize::WeightUse& use : quantize::FindQuantizableWeights(model, nullptr)) {
    const ir::Tensor* t = model.graph.FindInitializer(use.tensor);
    if (t == nullptr) continue;
    if (t->quant.quantized()) {
      return absl::FailedPreconditionError("sparsify: tensor '" + t->name +
                                           "' is already quantized; sparsity runs before "
                                           "quantization");
    }
    if (Eligible(use, *t)) uses.push_back(use);
  }
  // Wanda: one capture on the dense model for every MatMul/Gemm/Linear.
  std::map<std::string, std::vector<double>> norms;
  if (o.criterion == Criterion::kWanda) {
    std::vector<std::string> captured;
    for (const auto& use : uses) {
      if (use.op != "Conv") captured.push_back(use.tensor);
    }
    if (!captured.empty()) {
      ASSIGN_OR_RETURN(norms, InputNorms(model, captured, o));
    }
  }
  const support::InputPages pages = support::InputPages::Snapshot(model.input_files);
  struct Planned {
    WeightJob job;
    int axis = 1;
    TensorStats stats;
    ir::Tensor out;
    absl::Status status;
  };
  std::vector<Planned> planned;
  for (const quantize::WeightUse& use : uses) {
    const ir::Tensor& t = *model.graph.FindInitializer(use.tensor);
    const int axis = use.transposed ? 0 : 1;
    ASSIGN_OR_RETURN(ir::SparseView view, ir::SparsityView(t, axis));
    if (two_four && view.cols % 4 != 0) {
      // Small first convolutions (e.g. 1x3x3 = 9 inputs) cannot be 2:4;
      // they stay dense rather than failing the whole model.
      result.skipped.push_back(t.name + ": " + std::to_string(view.cols) +
                               " inputs per row, 2:4 needs a multiple of 4");
      continue;
    }
    Planned p;
    p.job = WeightJob{t, view, {}};
    p.axis = axis;
    p.stats.name = t.name;
    if (o.criterion == Criterion::kWanda) {
      auto it = norms.find(t.name);
      if (it != norms.end()) {
        p.job.scale = it->second;
      } else {
        p.stats.note = "magnitude (wanda needs a MatMul/Gemm input capture)";
      }
    }
    planned.push_back(std::move(p));
  }
  // Weights are independent: spread over the threads, each weight's bytes
  // and count are the same whichever thread makes them.
  const int64_t threads = std::max(1, support::ThreadsOrCores(o.threads));
  support::RunOnThreads(threads, [&](int64_t thread) {
    for (size_t i = static_cast<size_t>(thread); i < planned.size();
         i += static_cast<size_t>(threads)) {
      Planned& p = planned[i];
      const ir::Tensor& t = p.job.source;
      p.out = t;
      uint64_t zeros = 0;
      if (o.defer && t.data.size() > 0) {
        // Counted now, made again when written.
        p.status = SparsifyInto(p.job, o, pages, nullptr, &zeros);
        p.out.data = ir::TensorData::Deferred(t.data.size());
      } else {
        uint8_t* bytes = nullptr;
        p.out.data = ir::TensorData::OwnedUninitialized(t.data.size(), &bytes);
        p.status = SparsifyInto(p.job, o, pages, bytes, &zeros);
      }
      p.stats.numel =
          static_cast<uint64_t>(p.job.view.rows) * static_cast<uint64_t>(p.job.view.cols);
      p.stats.zeros = zeros;
    }
  });
  auto deferred = std::make_shared<std::map<std::string, WeightJob>>();
  for (Planned& p : planned) {
    RETURN_IF_ERROR(p.status);
    p.out.sparsity.pattern = o.pattern;
    p.out.sparsity.axis = p.axis;
    p.out.sparsity.criterion = std::string(CriterionName(o.criterion));
    result.numel += p.stats.numel;
    result.zeros += p.stats.zeros;
    if (p.out.data.deferred()) (*deferred)[p.stats.name] = std::move(p.job);
    RETURN_IF_ERROR(quantize::ReplaceInitializer(model.graph, std::move(p.out)));
    result.tensors.push_back(std::move(p.stats));
  }
  if (!deferred->empty()) {
    result.produce = [deferred, o, pages](const std::string& name)
        -> absl::StatusOr<ir::TensorData> {
      auto it = deferred->find(name);
      if (it == deferred->end()) {
        return absl::NotFoundError("sparsify: tensor '" + name + "' was not deferred");
      }
      uint8_t* bytes = nullptr;
      ir::TensorData data =
          ir::TensorData::OwnedUninitialized(it->second.source.data.size(), &bytes);
      uint64_t zeros = 0;
      RETURN_IF_ERROR(SparsifyInto(it->second, o, pages, bytes, &zeros));
      return data;
    };
  }
  return result;
}

absl::StatusOr<SparsifyOptions> ParseSparsifyJson(const nlohmann::json& j,
                                                  const std::string& file) {
  auto bad = [&](const std::string& key, const std::string& what) {
    return absl::InvalidArgumentError(file + ": sparsity." + key + ": " + what);
  };
  if (!j.is_object()) {
    return absl::InvalidArgumentError(file + ": sparsity: expected an object, found " + j.dump());
  }
  SparsifyOptions o;
  bool has_ratio = false;
  for (const auto& [k, v] : j.items()) {
    if (k == "ratio") {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1)) {
        return bad(k, "expected a ratio in [0, 1), found " + v.dump());
      }
      o.ratio = v.get<double>();
      has_ratio = true;
    } else if (k == "pattern" || k == "criterion") {
      if (!v.is_string()) return bad(k, "expected a string, found " + v.dump());
      if (k == "pattern") {
        auto p = ir::ParseSparsityPattern(v.get<std::string>());
        if (!p.ok()) return bad(k, std::string(p.status().message()));
        o.pattern = *p;
      } else {
        auto c = ParseCriterion(v.get<std::string>());
        if (!c.ok()) return bad(k, std::string(c.status().message()));
        o.criterion = *c;
      }
    } else if (k == "calib_samples") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        return bad(k, "expected an integer >= 1, found " + v.dump());
      }
      o.calib_samples = v.get<int64_t>();
    } else {
      return absl::InvalidArgumentError(file + ": sparsity: unknown key '" + k +
                                        "' (known: calib_samples, criterion, pattern, ratio)");
    }
  }
  if (o.pattern == ir::SparsityPattern::k2of4) {
    if (has_ratio && o.ratio != 0.5) {
      return bad("ratio", "the 2:4 pattern fixes the ratio at 0.5, found " + j["ratio"].dump());
    }
    o.ratio = 0.5;
  } else if (!has_ratio) {
    return bad("ratio", "missing (required for the unstructured pattern)");
  }
  return o;
}

nlohmann::json SparsifyOptionsToJson(const SparsifyOptions& o) {
  return {{"calib_samples", o.calib_samples},
          {"criterion", std::string(CriterionName(o.criterion))},
          {"pattern", std::string(ir::SparsityPatternName(o.pattern))},
          {"ratio", o.ratio}};
}

}  // namespace slimpack::sparsify
