// Quantizer's calibration side (quantize/quantizer.h): what the calibrated
// algorithms and the size planner need before any weight is stored.
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "quantize/awq_fold.h"
#include "quantize/float_walk.h"
#include "quantize/gptq_layers.h"
#include "quantize/hessian_source.h"
#include "quantize/importance_matrix.h"
#include "quantize/linear_capture.h"
#include "quantize/quantizer.h"
#include "quantize/size_planner.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize::internal {
namespace {

// Calibration data opened against the graph that will run.
absl::StatusOr<calibration::Dataset> OpenCalibration(const ir::Model& runnable,
                                                     const QuantizeRequest& req) {
  return OpenCalibrationData(runnable, req.calib_paths);
}

}  // namespace

absl::Status Quantizer::PlanSizes() {
  SizeTarget target;
  if (!req_.calib_paths.empty()) {
    std::vector<size_t> linears;
    for (size_t i = 0; i < plans_.size(); ++i) {
      const std::string& op = plans_[i].use.op;
      if (op == "Linear" || op == "MatMul" || op == "Gemm") linears.push_back(i);
    }
    ASSIGN_OR_RETURN(ir::Model runnable, Runnable());
    ASSIGN_OR_RETURN(calibration::Dataset data, OpenCalibration(runnable, req_));
    RETURN_IF_ERROR(CaptureImportance(data, linears));
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

absl::Status Quantizer::TakePrecomputedImportance() {
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

absl::Status Quantizer::PrepareCalibration() {
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
    RETURN_IF_ERROR(RunAwqFrom(awq, !gptq.empty()));
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
  if (!need_importance.empty()) RETURN_IF_ERROR(CaptureImportance(data, need_importance));
  if (!awq.empty()) RETURN_IF_ERROR(RunAwq(data, awq, !gptq.empty()));
  if (!gptq.empty()) RETURN_IF_ERROR(RunGptq(data, gptq));
  return absl::OkStatus();
}

absl::Status Quantizer::CheckHessians(const std::vector<size_t>& idx) const {
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

absl::Status Quantizer::CaptureImportance(calibration::Dataset& data,
                                          const std::vector<size_t>& idx) {
  Log(absl::StrCat("quantize: imatrix: capturing input statistics of ", idx.size(),
                   " linear layers"));
  FloatWalkOptions walk;
  walk.max_runs = req_.config.calib_samples;
  walk.threads = req_.threads;
  walk.cache_bytes = req_.gptq_cache_bytes;
  walk.stage = "imatrix";
  walk.progress = req_.progress;
  walk.log = req_.log;
  return WalkFloatModel(model_, WeightsOf(idx), data, walk,
                        [this](const std::string& weight, CapturedInput& c) {
                          importance_[weight].assign(c.mean_sq.begin(), c.mean_sq.end());
                          return absl::OkStatus();
                        });
}

absl::Status Quantizer::RunAwq(calibration::Dataset& data,
                               const std::vector<size_t>& idx, bool gptq_walk) {
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
  opts.lazy = LazyAwq(gptq_walk);
  ASSIGN_OR_RETURN(AwqFoldResult folded, ApplyAwqScales(model_, names, schemes,
                                                        data, opts));
  for (const std::string& line : folded.log) Log("quantize: awq: " + line);
  return TakeFolds(std::move(folded.folds));
}

absl::Status Quantizer::TakeFolds(std::map<std::string, std::shared_ptr<const ValueFold>> folds) {
  std::map<std::string, const TensorPlan*> plan_of;
  for (const TensorPlan& p : plans_) plan_of[p.use.tensor] = &p;
  for (auto& [name, fold] : folds) {
    auto p = plan_of.find(name);
    if (p != plan_of.end() && IsInt(*p->second) && p->second->algorithm != Algorithm::kGptq &&
        !p->second->use.transposed) {
      folds_[name] = std::move(fold);
      continue;
    }
    ir::Tensor* t = model_.graph.FindMutableInitializer(name);
    if (t == nullptr) return absl::InternalError("awq: no tensor '" + name + "' to fold");
    ASSIGN_OR_RETURN(Matrix m, AsMatrix(*t, false));
    fold->Apply(m.w.data(), 0, m.rows, m.cols);
    *t = F32Like(*t, m.w);
  }
  return absl::OkStatus();
}

absl::Status Quantizer::RunAwqFrom(const std::vector<size_t>& idx, bool gptq_walk) {
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
  opts.lazy = LazyAwq(gptq_walk);
  opts.progress = req_.progress;
  auto folded = ApplyAwqScalesFrom(model_, names, schemes, *req_.awq_inputs, opts);
  if (!folded.ok()) {
    return absl::Status(folded.status().code(),
                        req_.awq_inputs_file + ": " + std::string(folded.status().message()));
  }
  for (const std::string& line : folded->log) Log("quantize: awq: " + line);
  return TakeFolds(std::move(folded->folds));
}

absl::Status Quantizer::RunGptq(calibration::Dataset& data, const std::vector<size_t>& idx) {
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
        // The float matrix and the codes are done with before the stand-in
        // is made: for lm_head (vocabulary x width floats) each copy held
        // at once was 0.5 GB at 7B.
        std::vector<float>().swap(m.w);
        { const quant::QuantizedMatrix drop = *std::move(q); }
        return F32Like(t, InTensorOrder(std::move(deq), m.rows, m.cols, p.use.transposed));
      });
}

}  // namespace slimpack::quantize::internal
