#include "quantize/quantize_weights.h"

#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "calibration/dataset.h"
#include "ir/float_convert.h"
#include "quantize/awq_fold.h"
#include "quantize/gptq_layers.h"
#include "quantize/importance_matrix.h"
#include "quantize/linear_capture.h"
#include "quantize/numerics/error_stats.h"
#include "quantize/numerics/gptq.h"
#include "quantize/numerics/pack.h"
#include "quantize/numerics/rtn.h"
#include "quantize/output_sensitivity.h"
#include "quantize/deferred_weights.h"
#include "quantize/rtn_tensor.h"
#include "quantize/size_planner.h"
#include "quantize/weight_matrix.h"
#include "support/input_pages.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

using nlohmann::json;

uint64_t BytesOf(const ir::Tensor& t) { return t.data.size(); }

// Calibration data opened against the graph that will run.
absl::StatusOr<calibration::Dataset> OpenCalibration(const ir::Model& runnable,
                                                     const QuantizeRequest& req) {
  return OpenCalibrationData(runnable, req.calib_paths);
}

// GPTQ of weight `t` from its precomputed Hessian, stored as Store stores
// the walk's results.
absl::StatusOr<QuantizedWeight> GptqFromHessian(const ir::Tensor& t, bool transposed,
                                                const quant::Scheme& scheme,
                                                const quant::GptqOptions& options,
                                                const HessianSource& hessians) {
  ASSIGN_OR_RETURN(Matrix m, AsMatrix(t, transposed));
  auto h = hessians.Read(t.name);
  if (!h.ok()) return Annotate(h.status(), hessians.file());
  auto q = quant::QuantizeGptq(m.w.data(), m.rows, m.cols, scheme, h->xtx, h->rows, options);
  if (!q.ok()) {
    return Annotate(q.status(), "gptq of tensor '" + t.name + "' (Hessian from " +
                                    hessians.file() + ")");
  }
  std::vector<float> deq(m.w.size());
  quant::Dequantize(*q, deq.data());
  return StoredWeight(*q, m.w, deq, t, transposed, std::string(AlgorithmName(Algorithm::kGptq)));
}

class Quantizer {
 public:
  Quantizer(ir::Model& model, const QuantizeRequest& req) : model_(model), req_(req) {}

  absl::StatusOr<QuantizeResult> Run() {
    ASSIGN_OR_RETURN(plans_, PlanWeights(model_, req_.config));
    RETURN_IF_ERROR(TakePrecomputedImportance());
    if (req_.config.has_target()) RETURN_IF_ERROR(PlanSizes());
    RETURN_IF_ERROR(PrepareCalibration());
    // Each source weight is read once more below and then replaced: its
    // pages of the mapped checkpoint are dropped right after, so resident
    // memory holds the quantized tensors, not the whole input as well.
    pages_ = support::InputPages::Snapshot(model_.input_files);
    const support::InputPages& pages = pages_;
    for (size_t i = 0; i < plans_.size(); ++i) {
      const ir::Tensor* source = model_.graph.FindInitializer(plans_[i].use.tensor);
      const ir::TensorData source_data = source ? source->data : ir::TensorData();
      RETURN_IF_ERROR(Store(i));
      if (plans_[i].scheme.kind != WeightScheme::Kind::kKeep) {
        pages.Release(source_data.data(), source_data.size());
      }
    }
    return std::move(result_);
  }

 private:
  void Log(const std::string& line) {
    if (req_.log) req_.log(line);
  }

  bool IsInt(const TensorPlan& p) const { return p.scheme.kind == WeightScheme::Kind::kInt; }

  // --target-size / --target-bpw: weights no rule decided get the planner's
  // scheme. Importance (mean x^2) comes from calibration when given.
  absl::Status PlanSizes() {
    SizeTarget target;
    if (!req_.calib_paths.empty()) {
      std::vector<size_t> linears;
      for (size_t i = 0; i < plans_.size(); ++i) {
        const std::string& op = plans_[i].use.op;
        if (op == "Linear" || op == "MatMul" || op == "Gemm") linears.push_back(i);
      }
      ASSIGN_OR_RETURN(ir::Model runnable, Runnable());
      ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibration(runnable, req_));
      RETURN_IF_ERROR(CaptureImportance(runnable, data, linears));
      ASSIGN_OR_RETURN(OutputSensitivity measured,
                       OutputSensitivity::Measure(std::move(runnable), data, req_.threads));
      sensitivity_.emplace(std::move(measured));
      target.output_error = [this](const WeightUse& use, const std::vector<float>& values) {
        return sensitivity_->OutputError(use, values);
      };
    }
    target.progress = req_.progress;
    target.bytes = req_.config.target_bytes;
    target.bpw = req_.config.target_bpw;
    target.candidates = req_.config.candidates;
    std::vector<WeightUse> uses;
    for (const TensorPlan& p : plans_) {
      uses.push_back(p.use);
      if (p.rule >= 0) target.fixed[p.use.tensor] = p.scheme;
    }
    auto plan = PlanForSize(model_, uses, importance_, target, req_.threads);
    if (!plan.ok()) return plan.status();
    for (size_t i = 0; i < plans_.size(); ++i) {
      const SizeChoice& c = plan->choices[i];
      plans_[i].scheme = c.scheme;
      Log(absl::StrCat("plan: ", c.tensor, " -> ", c.scheme.Name(), " (", c.bytes,
                       " bytes, est. error ", c.error, ")"));
    }
    plan_summary_ = absl::StrCat("planned ", plan->planned_bytes, " bytes for ", plan->parameters,
                                 " weights (", plan->bpw, " bpw; budget ", plan->budget,
                                 ") + ", plan->other_bytes, " bytes of other tensors");
    Log("plan: " + plan_summary_);
    result_.plan = *plan;
    return absl::OkStatus();
  }

  // QuantizeRequest::importance, checked against the planned weights.
  absl::Status TakePrecomputedImportance() {
    for (const TensorPlan& p : plans_) {
      auto it = req_.importance.find(p.use.tensor);
      if (it == req_.importance.end()) continue;
      const ir::Tensor* t = model_.graph.FindInitializer(p.use.tensor);
      if (t == nullptr) continue;
      ASSIGN_OR_RETURN(auto shape, MatrixShape(*t, p.use.transposed));
      if (static_cast<int64_t>(it->second.size()) != shape.second) {
        return absl::InvalidArgumentError(absl::StrCat(
            req_.importance_file, ": the entry for '", p.use.tensor, "' has ", it->second.size(),
            " values; the weight has ", shape.second, " input columns"));
      }
      importance_[p.use.tensor] = it->second;
    }
    return absl::OkStatus();
  }

  // Fills gptq_/importance_ with what calibrated algorithms need.
  absl::Status PrepareCalibration() {
    std::vector<size_t> gptq, imatrix, awq;
    for (size_t i = 0; i < plans_.size(); ++i) {
      TensorPlan& p = plans_[i];
      if (!IsInt(p) || !NeedsCalibration(p.algorithm)) continue;
      if (p.use.op == "Conv") {
        p.note = std::string(AlgorithmName(p.algorithm)) +
                 " handles linear layers; Conv weight uses rtn-mse";
        p.algorithm = Algorithm::kRtnMse;
        continue;
      }
      if (p.algorithm == Algorithm::kAwq && !model_.graph.nodes.empty()) {
        p.note = "awq folds scales into the preceding norm of a decoder layer, which an "
                 "ONNX graph does not name; using rtn-mse";
        p.algorithm = Algorithm::kRtnMse;
        continue;
      }
      (p.algorithm == Algorithm::kGptq ? gptq : p.algorithm == Algorithm::kAwq ? awq : imatrix)
          .push_back(i);
    }
    if (req_.hessians && !gptq.empty()) {
      // Quantized one by one from the file in Store: no walk.
      RETURN_IF_ERROR(CheckHessians(gptq));
      gptq.clear();
    }
    if (req_.awq_inputs && !awq.empty()) {
      // Searched and folded from the file: no calibration run.
      RETURN_IF_ERROR(RunAwqFrom(awq));
      awq.clear();
    }
    std::vector<size_t> need_importance;
    for (size_t i : imatrix) {
      if (!importance_.count(plans_[i].use.tensor)) need_importance.push_back(i);
    }
    if (gptq.empty() && need_importance.empty() && awq.empty()) return absl::OkStatus();
    if (!req_.importance_file.empty() && !need_importance.empty()) {
      return absl::InvalidArgumentError(
          req_.importance_file + ": no entry for '" + plans_[need_importance[0]].use.tensor +
          "', which imatrix quantizes (an imatrix made for another model?)");
    }
    if (req_.calib_paths.empty()) {
      const TensorPlan& p = plans_[!gptq.empty() ? gptq[0] : !awq.empty() ? awq[0] : imatrix[0]];
      return absl::FailedPreconditionError(absl::StrCat(
          "algorithm '", std::string(AlgorithmName(p.algorithm)), "' (tensor '", p.use.tensor,
          "') needs calibration data: pass --calib FILES (e.g. token windows as .npy "
          "[rows, seq] int64 for an LM), or use --algo rtn / rtn-mse"));
    }
    ASSIGN_OR_RETURN(ir::Model runnable, Runnable());
    ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibration(runnable, req_));
    if (!need_importance.empty()) RETURN_IF_ERROR(CaptureImportance(runnable, data, need_importance));
    if (!awq.empty()) RETURN_IF_ERROR(RunAwq(runnable, data, awq));
    if (!gptq.empty()) RETURN_IF_ERROR(RunGptq(data, gptq));
    return absl::OkStatus();
  }

  // Every weight GPTQ quantizes has an entry of its input columns' size.
  absl::Status CheckHessians(const std::vector<size_t>& idx) const {
    for (size_t i : idx) {
      const TensorPlan& p = plans_[i];
      const ir::Tensor* t = model_.graph.FindInitializer(p.use.tensor);
      if (t == nullptr) continue;
      ASSIGN_OR_RETURN(auto shape, MatrixShape(*t, p.use.transposed));
      const std::optional<int64_t> k = req_.hessians->Columns(p.use.tensor);
      if (!k) {
        return absl::InvalidArgumentError(
            req_.hessians->file() + ": no Hessian for '" + p.use.tensor +
            "', which gptq quantizes (statistics made for another model?)");
      }
      RETURN_IF_ERROR(CheckHessianWidth(*req_.hessians, p.use.tensor, *k, shape.second));
    }
    return absl::OkStatus();
  }

  quant::GptqOptions GptqOptionsOf() const {
    quant::GptqOptions go;
    go.percdamp = req_.config.gptq_damp;
    go.block_size = req_.config.gptq_block;
    go.act_order = req_.config.gptq_act_order;
    go.static_groups = go.act_order;  // stored layout needs no permutation
    go.threads = req_.threads;
    return go;
  }

  // The graph calibration runs: the ONNX graph itself, or the decoder graph
  // built over the (current) checkpoint tensors.
  absl::StatusOr<ir::Model> Runnable() const { return RunnableModel(model_); }

  std::vector<std::string> WeightsOf(const std::vector<size_t>& idx) const {
    std::vector<std::string> w;
    for (size_t i : idx) w.push_back(plans_[i].use.tensor);
    return w;
  }

  absl::Status CaptureImportance(const ir::Model& runnable, calibration::Dataset& data,
                                 const std::vector<size_t>& idx) {
    Log(absl::StrCat("quantize: imatrix: capturing input statistics of ", idx.size(),
                     " linear layers"));
    CaptureRequest cr;
    cr.progress = req_.progress;
    cr.context = "imatrix";
    ASSIGN_OR_RETURN(auto captured,
                     CaptureLinearInputs(runnable, WeightsOf(idx), data,
                                         req_.config.calib_samples, cr, req_.threads));
    for (size_t i : idx) {
      const CapturedInput& c = captured.at(plans_[i].use.tensor);
      importance_[plans_[i].use.tensor].assign(c.mean_sq.begin(), c.mean_sq.end());
    }
    return absl::OkStatus();
  }

  absl::Status RunAwq(const ir::Model& runnable, calibration::Dataset& data,
                      const std::vector<size_t>& idx) {
    std::set<std::string> names;
    for (size_t i : idx) names.insert(plans_[i].use.tensor);
    std::map<std::string, WeightScheme> schemes;
    for (size_t i : idx) schemes[plans_[i].use.tensor] = plans_[i].scheme;
    AwqFoldOptions opts;
    opts.grid = req_.config.awq_grid;
    opts.max_runs = req_.config.calib_samples;
    opts.threads = req_.threads;
    opts.progress = req_.progress;
    opts.written = req_.part_tensors;
    ASSIGN_OR_RETURN(AwqFoldResult folded, ApplyAwqScales(model_, runnable, names, schemes,
                                                          data, opts));
    for (const std::string& line : folded.log) Log("quantize: awq: " + line);
    return absl::OkStatus();
  }

  absl::Status RunAwqFrom(const std::vector<size_t>& idx) {
    std::set<std::string> names;
    std::map<std::string, WeightScheme> schemes;
    for (size_t i : idx) {
      names.insert(plans_[i].use.tensor);
      schemes[plans_[i].use.tensor] = plans_[i].scheme;
    }
    AwqFoldOptions opts;
    opts.grid = req_.config.awq_grid;
    opts.threads = req_.threads;
    opts.written = req_.part_tensors;
    auto folded = ApplyAwqScalesFrom(model_, names, schemes, *req_.awq_inputs, opts);
    if (!folded.ok()) {
      return absl::Status(folded.status().code(),
                          req_.awq_inputs_file + ": " + std::string(folded.status().message()));
    }
    for (const std::string& line : folded->log) Log("quantize: awq: " + line);
    return absl::OkStatus();
  }

  // GPTQ group by group (quantize/gptq_layers.h): an HF decoder layer's
  // linears see the outputs of the layers before it as quantized.
  absl::Status RunGptq(calibration::Dataset& data, const std::vector<size_t>& idx) {
    std::map<std::string, size_t> plan_of;
    for (size_t i : idx) plan_of[plans_[i].use.tensor] = i;
    LayerwiseGptqOptions lo;
    lo.max_runs = req_.config.calib_samples;
    lo.threads = req_.threads;
    lo.cache_bytes = req_.gptq_cache_bytes;
    lo.progress = req_.progress;
    lo.log = req_.log;
    return RunLayerwiseGptq(
        model_, WeightsOf(idx), data, lo,
        [&](const std::string& name, const CapturedInput& c) -> absl::StatusOr<ir::Tensor> {
          const TensorPlan& p = plans_[plan_of.at(name)];
          const ir::Tensor& t = *model_.graph.FindInitializer(p.use.tensor);
          ASSIGN_OR_RETURN(Matrix m, AsMatrix(t, p.use.transposed));
          auto q = quant::QuantizeGptq(m.w.data(), m.rows, m.cols, p.scheme.Numerics(), c.xtx,
                                       c.rows, GptqOptionsOf());
          if (!q.ok()) return Annotate(q.status(), "gptq of tensor '" + p.use.tensor + "'");
          std::vector<float> deq(m.w.size());
          quant::Dequantize(*q, deq.data());
          // Packed now (half the bytes of the unpacked codes at 4 bits)
          // with its error against the weight it replaces: kept until stored.
          ASSIGN_OR_RETURN(QuantizedWeight done,
                           StoredWeight(*q, m.w, deq, t, p.use.transposed,
                                        std::string(AlgorithmName(p.algorithm))));
          gptq_.emplace(p.use.tensor, std::move(done));
          return F32Like(t, InTensorOrder(deq, m.rows, m.cols, p.use.transposed));
        });
  }

  absl::Status Store(size_t i) {
    const TensorPlan& p = plans_[i];
    const ir::Tensor original = *model_.graph.FindInitializer(p.use.tensor);
    TensorRecord rec;
    rec.tensor = p.use.tensor;
    rec.op = p.use.op;
    rec.scheme = p.scheme.Name();
    rec.rule = p.rule;
    rec.note = p.note;
    rec.bytes_before = BytesOf(original);
    if (p.scheme.kind == WeightScheme::Kind::kKeep) {
      rec.bytes_after = rec.bytes_before;
      return Record(std::move(rec));
    }
    if (p.scheme.kind == WeightScheme::Kind::kFloat) return StoreFloat(p, original, std::move(rec));
    rec.algorithm = std::string(AlgorithmName(p.algorithm));
    quant::PackedTensors packed;
    quant::ErrorStats error;
    if (auto it = gptq_.find(p.use.tensor); it != gptq_.end()) {
      packed = std::move(it->second.packed);
      error = it->second.error;
      gptq_.erase(it);
    } else if (p.algorithm == Algorithm::kGptq && req_.hessians) {
      if (req_.defer_rtn) return DeferGptq(p, original, std::move(rec));
      ASSIGN_OR_RETURN(QuantizedWeight r,
                       GptqFromHessian(original, p.use.transposed, p.scheme.Numerics(),
                                       GptqOptionsOf(), *req_.hessians));
      packed = std::move(r.packed);
      error = r.error;
    } else if (req_.defer_rtn) {
      return Defer(p, original, std::move(rec));
    } else {
      ASSIGN_OR_RETURN(QuantizedWeight r, QuantizeRtnTensor(original, RtnOptionsFor(p, rec.algorithm)));
      packed = std::move(r.packed);
      error = r.error;
    }
    rec.relative_l2 = error.relative_l2();
    rec.sqnr_db = error.sqnr_db();
    return Install(std::move(packed), std::move(rec));
  }

  // The weight's tensors in place of the float one (bytes now or deferred),
  // and its record.
  absl::Status Install(quant::PackedTensors packed, TensorRecord rec) {
    rec.bytes_after = BytesOf(packed.weight) + BytesOf(packed.scale) +
                      (packed.zero_point ? BytesOf(*packed.zero_point) : 0);
    RETURN_IF_ERROR(ReplaceInitializer(model_.graph, std::move(packed.weight)));
    RETURN_IF_ERROR(model_.graph.AddInitializer(std::move(packed.scale)));
    if (packed.zero_point) RETURN_IF_ERROR(model_.graph.AddInitializer(std::move(*packed.zero_point)));
    return Record(std::move(rec));
  }

  // The weight's final tensors without bytes; DeferredWeights makes them
  // when the writer asks.
  absl::Status Defer(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec) {
    RtnTensorOptions o = RtnOptionsFor(p, rec.algorithm);
    // The artifact writer makes deferred weights on its own threads (each
    // shard's writer, and threads with no file left working one weight
    // ahead): rtn_tensor.h's blocks_on_caller_thread says what that costs.
    o.blocks_on_caller_thread = true;
    // A deferred weight's error is only ever printed (by -v, through log).
    o.measure_error = static_cast<bool>(req_.log);
    ASSIGN_OR_RETURN(auto shape, MatrixShape(original, p.use.transposed));
    ASSIGN_OR_RETURN(quant::PackedTensors packed,
                     quant::PackedShapes(o.scheme, shape.first, shape.second, original,
                                         p.use.transposed, rec.algorithm));
    std::vector<float> importance;
    if (o.rtn.importance) importance.assign(o.rtn.importance, o.rtn.importance + shape.second);
    std::vector<std::string> companions = {packed.scale.name};
    if (packed.zero_point) companions.push_back(packed.zero_point->name);
    if (!result_.deferred) result_.deferred = std::make_shared<DeferredWeights>(model_.input_files);
    result_.deferred->Add(original, std::move(o), std::move(importance), std::move(companions));
    return Install(std::move(packed), std::move(rec));
  }

  // GPTQ from a precomputed Hessian, when the writer asks: the job holds
  // what it needs by value (this Quantizer is gone by then).
  absl::Status DeferGptq(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec) {
    const quant::Scheme scheme = p.scheme.Numerics();
    ASSIGN_OR_RETURN(auto shape, MatrixShape(original, p.use.transposed));
    ASSIGN_OR_RETURN(quant::PackedTensors packed,
                     quant::PackedShapes(scheme, shape.first, shape.second, original,
                                         p.use.transposed, rec.algorithm));
    std::vector<std::string> companions = {packed.scale.name};
    if (packed.zero_point) companions.push_back(packed.zero_point->name);
    if (!result_.deferred) result_.deferred = std::make_shared<DeferredWeights>(model_.input_files);
    result_.deferred->AddWhole(
        original,
        [transposed = p.use.transposed, scheme, go = GptqOptionsOf(),
         hessians = req_.hessians](const ir::Tensor& source) {
          return GptqFromHessian(source, transposed, scheme, go, *hessians);
        },
        std::move(companions));
    return Install(std::move(packed), std::move(rec));
  }

  // RTN, rtn-mse and imatrix: one call per weight (quantize/rtn_tensor.h).
  RtnTensorOptions RtnOptionsFor(const TensorPlan& p, const std::string& algorithm) const {
    RtnTensorOptions o;
    o.scheme = p.scheme.Numerics();
    o.transposed = p.use.transposed;
    o.algorithm = algorithm;
    o.rtn.threads = req_.threads;
    o.release = &pages_;
    o.rtn.mse_clip = p.algorithm == Algorithm::kRtnMse || req_.config.mse_clip;
    auto imp = importance_.find(p.use.tensor);
    if (imp != importance_.end()) o.rtn.importance = imp->second.data();
    return o;
  }

  // A float weight stored in another float dtype (a rule's f16 / bf16).
  absl::Status StoreFloat(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec) {
    if (original.dtype == p.scheme.float_dtype) {
      // Already in that dtype (`--quant f16` on an F16 checkpoint or GGUF):
      // the round trip is exact, so the tensor, a view of the input file,
      // stays as it is, with the record the round trip would give.
      // Decoding and re-encoding it took 9.6 s and 627 MiB instead of 0.8 s
      // and 151 MiB on a 413 MB F16 GGUF.
      const quant::ErrorStats exact;
      rec.relative_l2 = exact.relative_l2();
      rec.sqnr_db = exact.sqnr_db();
      rec.bytes_after = original.data.size();
      return Record(std::move(rec));
    }
    ASSIGN_OR_RETURN(Matrix m, AsMatrix(original, p.use.transposed));
    ir::Tensor t = original;
    t.dtype = p.scheme.float_dtype;
    std::vector<uint8_t> bytes(m.w.size() * (ir::DTypeBits(t.dtype) / 8));
    std::vector<float> ordered = InTensorOrder(m.w, m.rows, m.cols, p.use.transposed);
    RETURN_IF_ERROR(ir::ConvertFloats(
        ir::DType::kF32, reinterpret_cast<const uint8_t*>(ordered.data()), t.dtype,
        bytes.data(), ordered.size()));
    t.data = ir::TensorData::Owned(std::move(bytes));
    ASSIGN_OR_RETURN(Matrix back, AsMatrix(t, p.use.transposed));
    const quant::ErrorStats e = quant::CompareArrays(m.w.data(), back.w.data(), m.w.size());
    rec.relative_l2 = e.relative_l2();
    rec.sqnr_db = e.sqnr_db();
    rec.bytes_after = t.data.size();
    RETURN_IF_ERROR(ReplaceInitializer(model_.graph, std::move(t)));
    return Record(std::move(rec));
  }

  absl::Status Record(TensorRecord rec) {
    if (!result_.deferred || !result_.deferred->Holds(rec.tensor)) LogRecord(rec);
    result_.bytes_before += rec.bytes_before;
    result_.bytes_after += rec.bytes_after;
    result_.tensors.push_back(std::move(rec));
    return absl::OkStatus();
  }

  void LogRecord(const TensorRecord& rec) { Log(rec.Line()); }

  ir::Model& model_;
  const QuantizeRequest& req_;
  support::InputPages pages_;  // the model's mapped inputs
  std::vector<TensorPlan> plans_;
  std::map<std::string, std::vector<float>> importance_;
  std::map<std::string, QuantizedWeight> gptq_;  // GPTQ results until stored
  QuantizeResult result_;
  std::string plan_summary_;
  std::optional<OutputSensitivity> sensitivity_;  // --target-size with --calib
};

}  // namespace

absl::StatusOr<QuantizeResult> QuantizeWeights(ir::Model& model,
                                               const QuantizeRequest& request) {
  return Quantizer(model, request).Run();
}

}  // namespace slimpack::quantize
