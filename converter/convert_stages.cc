#include "converter/convert_stages.h"

#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "calibration/calibration_table.h"
#include "calibration/calibrator.h"
#include "calibration/dataset.h"
#include "calibration/token_ids.h"
#include "converter/awq_input_stats.h"
#include "converter/hessian_stats.h"
#include "converter/imatrix_stats.h"
#include "converter/requantize.h"
#include "passes/lower/dequantize_integer_ops.h"
#include "ir/quant.h"
#include "passes/pipeline.h"
#include "runtime/widen_f16.h"
#include "prune/graph/prune_onnx.h"
#include "quantize/quantize_static.h"
#include "quantize/deferred_weights.h"
#include "quantize/quantize_weights.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// Stage summaries always; detail lines only with `verbose`.
class StageLog {
 public:
  explicit StageLog(const StageOptions& o) : sink_(o.log), verbose_(o.verbose) {}
  template <typename... Args>
  void Info(const absl::FormatSpec<Args...>& format, const Args&... args) const {
    if (sink_) sink_(absl::StrFormat(format, args...));
  }
  template <typename... Args>
  void Detail(const absl::FormatSpec<Args...>& format, const Args&... args) const {
    if (verbose_ && sink_) sink_(absl::StrFormat(format, args...));
  }
  bool verbose() const { return verbose_; }
  const std::function<void(const std::string&)>& sink() const { return sink_; }

 private:
  std::function<void(const std::string&)> sink_;
  bool verbose_;
};

// Ranges for W8A8: a table from `slimpack calibrate` (one .json), or
// calibrated here on the model as imported.
absl::StatusOr<calibration::CalibrationTable> W8a8Table(const ir::Model& model,
                                                        const StageOptions& options) {
  if (options.calib.empty()) {
    return absl::FailedPreconditionError(
        "w8a8 needs activation ranges: pass --calib calib.json (from `slimpack calibrate`) or "
        "--calib DATA (files/directories of model inputs)");
  }
  if (options.calib.size() == 1 && absl::EndsWith(options.calib[0], ".json")) {
    return calibration::LoadCalibrationTable(options.calib[0]);
  }
  calibration::DatasetOptions dopts;
  dopts.vocab_size = calibration::KnownVocabSize(model);
  dopts.max_positions = calibration::KnownMaxPositions(model);
  ASSIGN_OR_RETURN(calibration::Dataset data,
                   calibration::Dataset::Open(options.calib, calibration::FeedInputs(model.graph),
                                              dopts));
  calibration::CalibrateOptions copts;
  ASSIGN_OR_RETURN(copts.observer.method,
                   calibration::RangeMethodFromName(options.quant.calib_method));
  copts.num_threads = options.threads;
  return calibration::Calibrate(model, data, copts);
}

// ONNX graphs: channel groups of Conv/Gemm/MatMul (prune/graph/prune_onnx.h).
absl::Status PruneGraphStage(ir::Model& model, const StageOptions& options, const StageLog& log,
                             StageResult& result) {
  prune::PruneOptions po = options.prune;
  po.calib_paths = options.calib;
  po.threads = options.threads;
  auto pruned = prune::PruneGraph(model, po);
  if (!pruned.ok()) return Annotate(pruned.status(), "prune");
  result.records.push_back({{"name", "prune"},
                            {"options", prune::PruneOptionsToJson(options.prune)},
                            {"stats", pruned->ToJson()}});
  int64_t prunable = 0;
  for (const prune::GraphGroupStats& g : pruned->groups) prunable += g.prunable ? 1 : 0;
  log.Info("prune: %d of %d channel group(s) prunable, %d -> %d parameters", prunable,
           pruned->groups.size(), pruned->params_before, pruned->params_after);
  for (const std::string& u : pruned->unprunable) log.Detail("prune: unprunable: %s", u);
  for (const prune::GraphGroupStats& g : pruned->groups) {
    log.Detail("prune: group %s: %d of %d channels kept", g.name, g.kept, g.channels);
  }
  return absl::OkStatus();
}

// HF decoders: MLP channel groups and KV-head groups (prune/decoder/).
absl::Status PruneDecoderStage(ir::Model& model, const StageOptions& options,
                               const StageLog& log, StageResult& result) {
  prune::PruneOptions po = options.prune;
  po.calib_paths = options.calib;
  po.threads = options.threads;
  auto pruned = prune::PruneDecoder(model, po);
  if (!pruned.ok()) return Annotate(pruned.status(), "prune");
  result.records.push_back({{"name", "prune"},
                            {"options", prune::PruneOptionsToJson(options.prune)},
                            {"stats", pruned->ToJson()}});
  log.Info(
      "prune: %d MLP channel(s) and %d KV head group(s) removed over all layers, "
      "%d -> %d parameters",
      pruned->removed_mlp, pruned->removed_kv, pruned->params_before, pruned->params_after);
  for (const std::string& w : pruned->warnings) log.Info("warning: %s", w);
  for (const std::string& u : pruned->unprunable) log.Detail("prune: unprunable: %s", u);
  for (const prune::LayerStats& l : pruned->layers) {
    log.Detail("prune: layer %d: intermediate %d, heads %d, kv heads %d", l.layer, l.mlp_kept,
               l.heads_kept, l.kv_heads_kept);
  }
  return absl::OkStatus();
}

absl::Status PassesStage(ir::Model& model, const StageOptions& options, const StageLog& log,
                         StageResult& result) {
  passes::PipelineRequest req;
  req.use_default = !options.passes.has_value();
  if (options.passes) req.passes = *options.passes;
  req.verify_each = options.verify_each;
  req.print_ir_after_all = options.print_ir_after_all;
  req.print_ir_after = options.print_ir_after;
  req.ir_out = options.ir_out;
  ASSIGN_OR_RETURN(passes::PipelineResult ran, passes::RunPipeline(model, req));
  for (const auto& r : ran.records) {
    result.records.push_back(r);
    if (r.contains("name")) result.passes_run.push_back(r["name"].get<std::string>());
  }
  for (const std::string& line : ran.verbose_lines) log.Detail("%s", line);
  return absl::OkStatus();
}

// Sparsity after pruning and the graph passes, before quantization
// (symmetric quantization maps the zeros to exact zeros). Returns the
// sparsity records by weight name: the quantizer builds new tensors, so the
// records are put back on them afterwards.
absl::StatusOr<std::map<std::string, ir::SparsityInfo>> SparsifyStage(
    ir::Model& model, const StageOptions& options, const StageLog& log, StageResult& result) {
  sparsify::SparsifyOptions so = *options.sparsify;
  so.calib_paths = options.calib;
  so.threads = options.threads;
  // Without a quantizer after it, nothing reads the sparsified weights
  // before the writer: they are made as they are written (bounded memory).
  so.defer = options.defer_weight_quant && !options.quant.w8a8 && !options.quant.active();
  auto sparse = sparsify::SparsifyWeights(model, so);
  if (!sparse.ok()) return Annotate(sparse.status(), "sparsify");
  if (sparse->produce) {
    result.produce = [produce = sparse->produce](const ir::Tensor& t) { return produce(t.name); };
    auto zeros = std::make_shared<std::map<std::string, uint64_t>>();
    for (const sparsify::TensorStats& s : sparse->tensors) (*zeros)[s.name] = s.zeros;
    result.sparse_zeros = [zeros](const ir::Tensor& t) -> std::optional<uint64_t> {
      auto it = zeros->find(t.name);
      return it == zeros->end() ? std::nullopt : std::optional<uint64_t>(it->second);
    };
  }
  std::map<std::string, ir::SparsityInfo> records;
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (t.sparsity.sparse()) records[t.name] = t.sparsity;
  }
  for (const std::string& s : sparse->skipped) log.Info("sparsify: left dense: %s", s);
  result.records.push_back({{"name", "sparsify"},
                            {"options", sparsify::SparsifyOptionsToJson(*options.sparsify)},
                            {"stats", sparse->ToJson()}});
  log.Info("sparsify: %d tensors, %d of %d weights zero (%.1f %%)%s", sparse->tensors.size(),
           sparse->zeros, sparse->numel,
           sparse->numel ? 100.0 * static_cast<double>(sparse->zeros) /
                               static_cast<double>(sparse->numel)
                         : 0.0,
           sparse->produce ? " (sparsified again as the shards are written)" : "");
  return records;
}

// Before any quantization: a graph ONNX Runtime's dynamic quantizer wrote
// goes back to float (dequantize-integer-ops; whatever stays integer is
// refused, naming the nodes), and an f16 graph is computed in f32
// (widen-f16), so calibration and the quantizers see plain f32 values
// under the names the quantized graph will use.
absl::Status PrepareQuantStage(ir::Model& model, const StageOptions& options, const StageLog& log,
                               StageResult& result) {
  const bool integer = !passes::IntegerComputeNodes(model.graph).empty();
  const bool half = runtime::HoldsF16(model.graph);
  if (!integer && !half) return absl::OkStatus();
  passes::PipelineRequest req;
  req.use_default = false;
  if (integer) req.passes.push_back("dequantize-integer-ops");
  if (half) req.passes.push_back("widen-f16");
  req.verify_each = options.verify_each;
  ASSIGN_OR_RETURN(passes::PipelineResult ran, passes::RunPipeline(model, req));
  for (const auto& r : ran.records) {
    result.records.push_back(r);
    result.passes_run.push_back(r["name"].get<std::string>());
  }
  for (const std::string& line : ran.verbose_lines) log.Detail("%s", line);
  if (integer) {
    const std::vector<std::string> left = passes::IntegerComputeNodes(model.graph);
    if (!left.empty()) {
      std::string names;
      for (const std::string& n : left) names += (names.empty() ? "" : ", ") + n;
      return absl::FailedPreconditionError(
          "quantize: the graph is already quantized and " + std::to_string(left.size()) +
          " integer node(s) do not match ONNX Runtime's dynamic-quantization pattern "
          "(DynamicQuantizeLinear -> MatMulInteger/ConvInteger -> Cast -> Mul by scales), so "
          "they cannot be dequantized to float before another scheme: " + names +
          "; convert without --quant to keep them (`-v` lists why each did not match)");
    }
    log.Info("quantize: the already-quantized graph was dequantized to float first "
             "(dequantize-integer-ops)");
  }
  if (half) {
    log.Detail("widen-f16: the f16 graph is computed in f32 (inputs and outputs stay f16)");
  }
  return absl::OkStatus();
}

absl::Status StaticQuantStage(ir::Model& model, const calibration::CalibrationTable& table,
                              const StageOptions& options, const StageLog& log,
                              StageResult& result) {
  passes::StaticQuantOptions so;
  so.keep_float_regex = options.quant.keep_float;
  so.activation_dtype = options.quant.w8a8_int8_activations ? ir::DType::kI8 : ir::DType::kU8;
  auto report = passes::QuantizeStatic(model, table, so);
  if (!report.ok()) return Annotate(report.status(), "quantize (w8a8)");
  nlohmann::json decisions = nlohmann::json::array();
  for (const auto& d : report->decisions) {
    decisions.push_back({{"node", d.node}, {"op", d.op_type}, {"decision", d.decision}});
    log.Detail("w8a8: %s [%s]: %s", d.node, d.op_type, d.decision);
  }
  result.records.push_back({{"name", "quantize-static"},
                            {"options", quantize::QuantConfigToJson(options.quant)},
                            {"stats", {{"integer_nodes", report->integer_nodes},
                                       {"float_nodes", report->float_nodes},
                                       {"quantize_nodes", report->quantize_nodes},
                                       {"dequantize_nodes", report->dequantize_nodes},
                                       {"decisions", decisions}}}});
  if (report->opset_raised_from != 0) {
    result.records.back()["stats"]["opset_raised_from"] = report->opset_raised_from;
    log.Detail("w8a8: default-domain opset %d raised to 10 (QuantizeLinear, QLinearConv and "
               "MatMulInteger need it; Slice/TopK attributes became inputs)",
               report->opset_raised_from);
  }
  log.Info("quantize: w8a8: %d integer node(s), %d kept float", report->integer_nodes,
           report->float_nodes);
  return absl::OkStatus();
}

absl::Status WeightQuantStage(ir::Model& model, const StageOptions& options, const StageLog& log,
                              StageResult& result) {
  quantize::QuantizeRequest q;
  q.config = options.quant;
  q.calib_paths = options.calib;
  q.threads = options.threads;
  if (log.verbose()) q.log = log.sink();
  q.progress = options.progress;
  // A sparse weight's record states the zeros of its stored codes, which
  // only quantizing tells, and every part of a split conversion plans the
  // same manifest: so sparse weights are quantized before writing.
  q.defer_rtn = options.defer_weight_quant && !options.sparsify;
  q.part_tensors = options.part_tensors;
  if (!options.imatrix.empty()) {
    auto stats = ReadImatrixStats(model, options.imatrix);
    if (!stats.ok()) return Annotate(stats.status(), "quantize");
    q.importance = *std::move(stats);
    q.importance_file = options.imatrix;
    log.Info("quantize: imatrix: %d entries from %s", q.importance.size(), options.imatrix);
  }
  if (!options.hessians.empty()) {
    auto h = OpenHessianStats(model, options.hessians);
    if (!h.ok()) return Annotate(h.status(), "quantize");
    q.hessians = *std::move(h);
    log.Info("quantize: gptq: Hessians from %s", options.hessians);
  }
  if (!options.awq_inputs.empty()) {
    auto inputs = ReadAwqInputStats(model, options.awq_inputs);
    if (!inputs.ok()) return Annotate(inputs.status(), "quantize");
    q.awq_inputs = std::make_shared<const quantize::AwqInputs>(*std::move(inputs));
    q.awq_inputs_file = options.awq_inputs;
    log.Info("quantize: awq: %d group inputs from %s", q.awq_inputs->size(), options.awq_inputs);
  }
  auto done = quantize::QuantizeWeights(model, q);
  if (!done.ok()) return Annotate(done.status(), "quantize");
  result.records.push_back({{"name", "quantize-weights"},
                            {"options", quantize::QuantConfigToJson(options.quant)},
                            {"stats", done->ToJson()}});
  // RTN-family weights defer, and GPTQ's from a Hessian file; under the
  // GPTQ walk or AWQ that is the few they do not take (an embedding), so the
  // line counts them.
  const size_t deferred = done->deferred ? done->deferred->weights() : 0;
  const std::string late =
      deferred == 0 ? ""
      : deferred == done->tensors.size()
          ? " (quantized as the shards are written)"
          : absl::StrCat(" (", deferred, " of them quantized as the shards are written)");
  log.Info("quantize: %d tensors, %d -> %d bytes%s", done->tensors.size(), done->bytes_before,
           done->bytes_after, late);
  if (done->deferred) {
    auto deferred = std::make_shared<quantize::QuantizeResult>(*std::move(done));
    result.produce = [deferred](const ir::Tensor& t) {
      return deferred->deferred->Produce(t.name);
    };
    result.produce_streamed =
        [deferred](const ir::Tensor& t,
                   const std::function<absl::Status(const uint8_t*, uint64_t)>& sink) {
          return deferred->deferred->ProduceStreamed(t.name, sink);
        };
    result.produce_ahead = [deferred](const ir::Tensor& t) {
      deferred->deferred->ProduceAhead(t.name);
    };
    const std::function<void(const std::string&)> sink = log.verbose() ? log.sink() : nullptr;
    result.finish_deferred = [deferred, sink](bool all_written) {
      return Annotate(quantize::FinishDeferred(*deferred, sink, all_written), "quantize");
    };
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StageResult> RunConvertStages(ir::Model& model, const StageOptions& options) {
  const StageLog log(options);
  StageResult result;
  const bool has_graph = !model.graph.nodes.empty();
  if (!has_graph && options.allow_requantize &&
      (options.prune.active() || options.sparsify || options.quant.active())) {
    ASSIGN_OR_RETURN(const int64_t decoded,
                     DequantizeWeightsInPlace(model, model.source_path));
    if (decoded > 0) {
      log.Info("--allow-requantize: %lld quantized weight(s) decoded to f32 first; their "
               "rounding and the new one add up",
               static_cast<long long>(decoded));
    }
  }
  if (!has_graph && (options.prune.active() || options.sparsify || options.quant.active() ||
                     options.quant.w8a8)) {
    // An already-quantized checkpoint (GPTQ/AWQ import): its codes are
    // carried as they are; pruning, sparsifying or quantizing again would
    // read them as floats (or lose the act-order input permutation).
    for (const ir::Tensor& t : model.graph.initializers()) {
      if (!t.quant.quantized()) continue;
      return absl::FailedPreconditionError(
          "the checkpoint is already quantized (tensor '" + t.name + "', " +
          std::string(ir::QuantKindName(t.quant.kind)) + ", " + t.quant.algorithm +
          "): convert it without --quant, --prune or --sparsity to carry its codes as they are, or "
          "pass --allow-requantize to decode them to f32 first");
    }
  }
  if (has_graph && (options.quant.w8a8 || options.quant.active())) {
    RETURN_IF_ERROR(PrepareQuantStage(model, options, log, result));
  }
  if (options.prune.active()) {
    RETURN_IF_ERROR(has_graph ? PruneGraphStage(model, options, log, result)
                              : PruneDecoderStage(model, options, log, result));
  }
  // W8A8 ranges are calibrated on the model as imported, so the table holds
  // every original value name, including pre-activation values that the
  // fusion passes fold away (a fused Conv+HardSwish needs the Conv output's
  // range to stay integer up to the activation).
  std::optional<calibration::CalibrationTable> w8a8_table;
  if (options.quant.w8a8) {
    if (!has_graph) {
      return absl::InvalidArgumentError(
          "quantize: w8a8 rewrites a graph's Conv/Gemm/MatMul; this input is a checkpoint without "
          "a graph: use a weight-only scheme (--quant int8 / int4)");
    }
    auto table = W8a8Table(model, options);
    if (!table.ok()) return Annotate(table.status(), "quantize (w8a8 calibration)");
    w8a8_table = *std::move(table);
  }
  RETURN_IF_ERROR(PassesStage(model, options, log, result));
  std::map<std::string, ir::SparsityInfo> sparsity_records;
  if (options.sparsify) {
    ASSIGN_OR_RETURN(sparsity_records, SparsifyStage(model, options, log, result));
  }
  if (options.quant.w8a8) {
    RETURN_IF_ERROR(StaticQuantStage(model, *w8a8_table, options, log, result));
  } else if (options.quant.active()) {
    RETURN_IF_ERROR(WeightQuantStage(model, options, log, result));
  }
  for (const auto& [name, info] : sparsity_records) {
    if (ir::Tensor* t = model.graph.FindMutableInitializer(name)) t->sparsity = info;
  }
  return result;
}

}  // namespace slimpack::converter
