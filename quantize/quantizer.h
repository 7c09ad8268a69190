// The class behind QuantizeWeights (quantize_weights.h), in three files:
// quantize_weights.cc runs it (plan, calibrate, store each weight in turn),
// quantizer_calibrate.cc gathers what calibrated algorithms need (the size
// planner's measurements, importance, AWQ's folds, GPTQ layer by layer) and
// quantizer_store.cc replaces each weight by its quantized tensors, now or
// deferred to the shard writer. Internal to quantize/.
#ifndef SLIMPACK_QUANTIZE_QUANTIZER_H_
#define SLIMPACK_QUANTIZE_QUANTIZER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/dataset.h"
#include "quantize/gptq_layers.h"
#include "quantize/numerics/gptq.h"
#include "quantize/numerics/pack.h"
#include "quantize/output_sensitivity.h"
#include "quantize/quant_rules.h"
#include "quantize/quantize_weights.h"
#include "quantize/rtn_tensor.h"
#include "quantize/value_fold.h"
#include "support/input_pages.h"

namespace slimpack::quantize::internal {

class Quantizer {
 public:
  Quantizer(ir::Model& model, const QuantizeRequest& req) : model_(model), req_(req) {}

  absl::StatusOr<QuantizeResult> Run();

 private:
  void Log(const std::string& line) {
    if (req_.log) req_.log(line);
  }

  bool IsInt(const TensorPlan& p) const { return p.scheme.kind == WeightScheme::Kind::kInt; }

  // quantizer_calibrate.cc

  // --target-size / --target-bpw: weights no rule decided get the planner's
  // scheme. Importance (mean x^2) comes from calibration when given.
  absl::Status PlanSizes();

  // QuantizeRequest::importance, checked against the planned weights.
  absl::Status TakePrecomputedImportance();

  // Fills gptq_/importance_ with what calibrated algorithms need.
  absl::Status PrepareCalibration();

  // Every weight GPTQ quantizes has an entry of its input columns' size.
  absl::Status CheckHessians(const std::vector<size_t>& idx) const;

  // imatrix's input statistics, captured layer by layer (float_walk.h).
  absl::Status CaptureImportance(calibration::Dataset& data, const std::vector<size_t>& idx);

  // `gptq_walk`: GPTQ's layer-by-layer walk runs after (LazyAwq).
  absl::Status RunAwq(calibration::Dataset& data,
                      const std::vector<size_t>& idx, bool gptq_walk);

  absl::Status RunAwqFrom(const std::vector<size_t>& idx, bool gptq_walk);

  // AWQ folds applied as the weights are read (AwqFoldOptions::lazy) when
  // every weight of the model that the fold rescales is quantized by RTN
  // as the writer writes it: deferred, and no GPTQ walk reading the folded
  // model (`gptq_walk`) runs.
  bool LazyAwq(bool gptq_walk) const { return req_.defer_rtn && !gptq_walk; }
  // The folds of a lazy AWQ run: a weight deferred to RTN keeps its fold
  // for Defer; any other is folded in place now (its position kept).
  absl::Status TakeFolds(std::map<std::string, std::shared_ptr<const ValueFold>> folds);

  // GPTQ group by group (quantize/gptq_layers.h): an HF decoder layer's
  // linears see the outputs of the layers before it as quantized.
  absl::Status RunGptq(calibration::Dataset& data, const std::vector<size_t>& idx);

  // quantizer_store.cc

  absl::Status Store(size_t i);

  // The weight's tensors in place of the float one (bytes now or deferred),
  // and its record.
  absl::Status Install(quant::PackedTensors packed, TensorRecord rec);

  // The weight's final tensors without bytes; DeferredWeights makes them
  // when the writer asks.
  absl::Status Defer(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec);

  // GPTQ from a precomputed Hessian, when the writer asks: the job holds
  // what it needs by value (this Quantizer is gone by then).
  absl::Status DeferGptq(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec);

  // RTN, rtn-mse and imatrix: one call per weight (quantize/rtn_tensor.h).
  RtnTensorOptions RtnOptionsFor(const TensorPlan& p, const std::string& algorithm) const;

  // A float weight stored in another float dtype (a rule's f16 / bf16).
  absl::Status StoreFloat(const TensorPlan& p, const ir::Tensor& original, TensorRecord rec);

  absl::Status Record(TensorRecord rec);

  // Shared by both.
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

  void LogRecord(const TensorRecord& rec) { Log(rec.Line()); }

  ir::Model& model_;
  const QuantizeRequest& req_;
  support::InputPages pages_;  // the model's mapped inputs
  std::vector<TensorPlan> plans_;
  std::map<std::string, std::vector<float>> importance_;
  std::map<std::string, QuantizedWeight> gptq_;  // GPTQ results until stored
  // AWQ's rescalings of the weights Defer quantizes (TakeFolds).
  std::map<std::string, std::shared_ptr<const ValueFold>> folds_;
  QuantizeResult result_;
  std::string plan_summary_;
  std::optional<OutputSensitivity> sensitivity_;  // --target-size with --calib
};

}  // namespace slimpack::quantize::internal

#endif  // SLIMPACK_QUANTIZE_QUANTIZER_H_
