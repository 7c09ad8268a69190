#include "cli/convert_stages.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "calibration/datasets/dataset.h"
#include "calibration/observers/calibration_table.h"
#include "calibration/observers/calibrator.h"
#include "passes/fused_kernels.h"
#include "passes/pipeline.h"
#include "passes/prune_onnx.h"
#include "passes/quantize_static.h"
#include "passes/quantize_weights.h"
#include "support/status_macros.h"

namespace slimpack::cli {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Ranges for W8A8: a table from `slimpack calibrate` (one .json), or
// calibrated here on the model as imported.
absl::StatusOr<calibration::CalibrationTable> W8a8Table(const ir::Model& model,
                                                        const StageOptions& options) {
  if (options.calib.empty()) {
    return absl::FailedPreconditionError(
        "w8a8 needs activation ranges: pass --calib calib.json (from `slimpack calibrate`) or "
        "--calib DATA (files/directories of model inputs)");
  }
  if (options.calib.size() == 1 && EndsWith(options.calib[0], ".json")) {
    return calibration::LoadCalibrationTable(options.calib[0]);
  }
  calibration::DatasetOptions dopts;
  ASSIGN_OR_RETURN(calibration::Dataset data,
                   calibration::Dataset::Open(options.calib, calibration::FeedInputs(model.graph),
                                              dopts));
  calibration::CalibrateOptions copts;
  ASSIGN_OR_RETURN(copts.observer.method,
                   calibration::RangeMethodFromName(options.quant.calib_method));
  copts.num_threads = options.threads;
  copts.kernels = passes::KernelsWithFusedOps();
  return calibration::Calibrate(model, data, copts);
}

}  // namespace

absl::StatusOr<StageResult> RunConvertStages(ir::Model& model, const StageOptions& options) {
  StageResult result;
  if (options.prune.active() && !model.graph.nodes.empty()) {
    prune::PruneOptions po = options.prune;
    po.calib_paths = options.calib;
    po.threads = options.threads;
    // An ONNX graph: channel groups of Conv/Gemm/MatMul (passes/prune_onnx.h).
    auto pruned = prune::PruneGraph(model, po);
    if (!pruned.ok()) return Annotate(pruned.status(), "prune");
    result.records.push_back({{"name", "prune"},
                              {"options", prune::PruneOptionsToJson(options.prune)},
                              {"stats", pruned->ToJson()}});
    int64_t prunable = 0;
    for (const prune::GraphGroupStats& g : pruned->groups) prunable += g.prunable ? 1 : 0;
    std::fprintf(stderr, "prune: %lld of %zu channel group(s) prunable, %llu -> %llu parameters\n",
                 static_cast<long long>(prunable), pruned->groups.size(),
                 static_cast<unsigned long long>(pruned->params_before),
                 static_cast<unsigned long long>(pruned->params_after));
    if (options.verbose) {
      for (const std::string& u : pruned->unprunable) {
        std::fprintf(stderr, "prune: unprunable: %s\n", u.c_str());
      }
      for (const prune::GraphGroupStats& g : pruned->groups) {
        std::fprintf(stderr, "prune: group %s: %lld of %lld channels kept\n", g.name.c_str(),
                     static_cast<long long>(g.kept), static_cast<long long>(g.channels));
      }
    }
  } else if (options.prune.active()) {
    prune::PruneOptions po = options.prune;
    po.calib_paths = options.calib;
    po.threads = options.threads;
    auto pruned = prune::PruneDecoder(model, po);
    if (!pruned.ok()) return Annotate(pruned.status(), "prune");
    result.records.push_back({{"name", "prune"},
                              {"options", prune::PruneOptionsToJson(options.prune)},
                              {"stats", pruned->ToJson()}});
    std::fprintf(stderr,
                 "prune: %lld MLP channel(s) and %lld KV head group(s) removed over all layers, "
                 "%llu -> %llu parameters\n",
                 static_cast<long long>(pruned->removed_mlp),
                 static_cast<long long>(pruned->removed_kv),
                 static_cast<unsigned long long>(pruned->params_before),
                 static_cast<unsigned long long>(pruned->params_after));
    for (const std::string& w : pruned->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    if (options.verbose) {
      for (const std::string& u : pruned->unprunable) {
        std::fprintf(stderr, "prune: unprunable: %s\n", u.c_str());
      }
      for (const prune::LayerStats& l : pruned->layers) {
        std::fprintf(stderr, "prune: layer %lld: intermediate %lld, heads %lld, kv heads %lld\n",
                     static_cast<long long>(l.layer), static_cast<long long>(l.mlp_kept),
                     static_cast<long long>(l.heads_kept),
                     static_cast<long long>(l.kv_heads_kept));
      }
    }
  }
  // W8A8 ranges are calibrated on the model as imported, so the table holds
  // every original value name, including pre-activation values that the
  // fusion passes fold away (a fused Conv+HardSwish needs the Conv output's
  // range to stay integer up to the activation).
  std::optional<calibration::CalibrationTable> w8a8_table;
  if (options.quant.w8a8 && !model.graph.nodes.empty()) {
    auto table = W8a8Table(model, options);
    if (!table.ok()) return Annotate(table.status(), "quantize (w8a8 calibration)");
    w8a8_table = *std::move(table);
  }
  passes::PipelineRequest req;
  req.use_default = !options.passes.has_value();
  if (options.passes) req.passes = *options.passes;
  req.verify_each = options.verify_each;
  req.print_ir_after_all = options.print_ir_after_all;
  req.print_ir_after = options.print_ir_after;
  req.ir_out = &std::cerr;
  ASSIGN_OR_RETURN(passes::PipelineResult ran, passes::RunPipeline(model, req));
  for (const auto& r : ran.records) {
    result.records.push_back(r);
    if (r.contains("name")) result.passes_run.push_back(r["name"].get<std::string>());
  }
  if (options.verbose) {
    for (const std::string& line : ran.verbose_lines) std::fprintf(stderr, "%s\n", line.c_str());
  }

  // Sparsity records by weight name: the quantizer builds new tensors, so
  // the records are put back on them afterwards.
  std::map<std::string, ir::SparsityInfo> sparsity_records;
  // Sparsity: after pruning and the graph passes, before quantization
  // (symmetric quantization maps the zeros to exact zeros).
  if (options.sparsify) {
    sparsify::SparsifyOptions so = *options.sparsify;
    so.calib_paths = options.calib;
    so.threads = options.threads;
    auto sparse = sparsify::SparsifyWeights(model, so);
    if (!sparse.ok()) return Annotate(sparse.status(), "sparsify");
    for (const ir::Tensor& t : model.graph.initializers()) {
      if (t.sparsity.sparse()) sparsity_records[t.name] = t.sparsity;
    }
    for (const std::string& s : sparse->skipped) {
      std::fprintf(stderr, "sparsify: left dense: %s\n", s.c_str());
    }
    result.records.push_back({{"name", "sparsify"},
                              {"options", sparsify::SparsifyOptionsToJson(*options.sparsify)},
                              {"stats", sparse->ToJson()}});
    std::fprintf(stderr, "sparsify: %zu tensors, %llu of %llu weights zero (%.1f %%)\n",
                 sparse->tensors.size(), static_cast<unsigned long long>(sparse->zeros),
                 static_cast<unsigned long long>(sparse->numel),
                 sparse->numel ? 100.0 * static_cast<double>(sparse->zeros) /
                                     static_cast<double>(sparse->numel)
                               : 0.0);
  }

  if (options.quant.w8a8) {
    if (model.graph.nodes.empty()) {
      return absl::InvalidArgumentError(
          "quantize: w8a8 rewrites a graph's Conv/Gemm/MatMul; this input is a checkpoint without "
          "a graph: use a weight-only scheme (--quant int8 / int4)");
    }
    passes::StaticQuantOptions so;
    so.keep_float_regex = options.quant.keep_float;
    auto report = passes::QuantizeStatic(model, *w8a8_table, so);
    if (!report.ok()) return Annotate(report.status(), "quantize (w8a8)");
    nlohmann::json decisions = nlohmann::json::array();
    for (const auto& d : report->decisions) {
      decisions.push_back({{"node", d.node}, {"op", d.op_type}, {"decision", d.decision}});
      if (options.verbose) {
        std::fprintf(stderr, "w8a8: %s [%s]: %s\n", d.node.c_str(), d.op_type.c_str(),
                     d.decision.c_str());
      }
    }
    result.records.push_back({{"name", "quantize-static"},
                              {"options", quantize::QuantConfigToJson(options.quant)},
                              {"stats", {{"integer_nodes", report->integer_nodes},
                                         {"float_nodes", report->float_nodes},
                                         {"quantize_nodes", report->quantize_nodes},
                                         {"dequantize_nodes", report->dequantize_nodes},
                                         {"decisions", decisions}}}});
    std::fprintf(stderr, "quantize: w8a8: %lld integer node(s), %lld kept float\n",
                 static_cast<long long>(report->integer_nodes),
                 static_cast<long long>(report->float_nodes));
  } else if (options.quant.active()) {
    quantize::QuantizeRequest q;
    q.config = options.quant;
    q.calib_paths = options.calib;
    q.threads = options.threads;
    if (options.verbose) {
      q.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    }
    auto done = quantize::QuantizeWeights(model, q);
    if (!done.ok()) return Annotate(done.status(), "quantize");
    result.records.push_back({{"name", "quantize-weights"},
                              {"options", quantize::QuantConfigToJson(options.quant)},
                              {"stats", done->ToJson()}});
    std::fprintf(stderr, "quantize: %zu tensors, %llu -> %llu bytes\n", done->tensors.size(),
                 static_cast<unsigned long long>(done->bytes_before),
                 static_cast<unsigned long long>(done->bytes_after));
  }
  for (const auto& [name, info] : sparsity_records) {
    if (ir::Tensor* t = model.graph.FindMutableInitializer(name)) t->sparsity = info;
  }
  return result;
}

}  // namespace slimpack::cli
