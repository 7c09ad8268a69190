#include "converter/convert_onnx.h"

#include <sys/stat.h>

#include <utility>
#include <vector>

#include "formats/import.h"
#include "formats/onnx/onnx_writer.h"
#include "formats/shard/reader/artifact_reader.h"
#include "hf/llama_graph_builder.h"
#include "passes/pipeline.h"
#include "support/output_path.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// Flags an ONNX export never uses, with whether the user gave them.
std::vector<std::pair<std::string, bool>> WriteOnlyFlags(const ConvertFlags& f) {
  return {
      {"--dtype", !f.dtype.empty()},
      {"--shard-size", !f.shard_size.empty()},
      {"--report", !f.report_dir.empty()},
      {"--report-data", !f.report_data.empty()},
      {"--gate", !f.gate.empty()},
      // Provenance and completeness checks live in the artifact path
      // (converter/convert.cc); not wired for ONNX export yet.
      {"--recipe-from", !f.recipe_from.empty()},
      {"--allow-incomplete", f.allow_incomplete},
  };
}

// Flags that change the model: an artifact is exported as it is.
std::vector<std::pair<std::string, bool>> StageFlags(const ConvertFlags& f) {
  return {
      {"--recipe", !f.recipe_path.empty()},
      {"--passes", !f.passes.empty()},
      {"--verify-each", f.verify_each},
      {"--print-ir-after-all", f.print_ir_after_all},
      {"--print-ir-after", !f.print_ir_after.empty()},
      {"--quant", !f.quant.empty()},
      {"--group", f.group != 0},
      {"--asym", f.asym},
      {"--algo", !f.algo.empty()},
      {"--calib", !f.calib.empty()},
      {"--calib-samples", f.calib_samples != 0},
      {"--target-size", !f.target_size.empty()},
      {"--target-bpw", f.target_bpw != 0},
      {"--sparsity", !f.sparsity.empty()},
      {"--sparsity-pattern", !f.sparsity_pattern.empty()},
      {"--sparsity-criterion", !f.sparsity_criterion.empty()},
      {"--prune", !f.prune.empty()},
      {"--prune-criterion", !f.prune_criterion.empty()},
      {"--prune-target", !f.prune_target.empty()},
      {"--prune-refit", f.prune_refit},
      {"--prune-rules", !f.prune_rules.empty()},
      {"--prune-budget-params", !f.prune_budget_params.empty()},
  };
}

// What the writer names the external data file: "<stem>.data" beside it.
std::string DataFilePath(const std::string& output) {
  const size_t slash = output.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : output.substr(0, slash + 1);
  std::string file = slash == std::string::npos ? output : output.substr(slash + 1);
  const size_t dot = file.rfind('.');
  if (dot != std::string::npos && dot != 0) file = file.substr(0, dot);
  return dir + file + ".data";
}

uint64_t FileBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// The output rules for the model file and its data file.
absl::Status CheckOutputs(const OnnxConvertRequest& r, const std::vector<std::string>& inputs) {
  const support::OutputKind kind{"a file to replace without --force",
                                 [](const std::string&) { return false; }};
  const std::string& out = r.convert.output;
  RETURN_IF_ERROR(support::PreflightOutputFile(out, r.convert.force, kind).status());
  const std::string data = DataFilePath(out);
  if (Exists(data)) {
    RETURN_IF_ERROR(support::PreflightOutputFile(data, r.convert.force, kind).status());
  }
  if (!inputs.empty()) {
    RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(inputs, out));
    RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(inputs, data, "-o (its external data file)"));
  }
  return absl::OkStatus();
}

// The model to export: the artifact as stored, or the input after the
// stages; decoder checkpoints as their graph.
absl::StatusOr<ir::Model> LoadAndConvert(const OnnxConvertRequest& r) {
  ir::Model model;
  const std::function<void(const std::string&)>& log = r.convert.stages.log;
  if (r.from_artifact) {
    ASSIGN_OR_RETURN(model, shard_reader::ReadArtifactModel(r.convert.input));
  } else {
    ASSIGN_OR_RETURN(model, formats::ImportModel(r.convert.input));
    if (log) {
      for (const std::string& w : model.warnings) log("warning: " + w);
    }
    ASSIGN_OR_RETURN(StageResult staged, RunConvertStages(model, r.convert.stages));
    (void)staged;
  }
  if (!ir::IsDecoderCheckpoint(model.source_format)) return model;
  std::vector<std::string> inputs = model.input_files;
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.push_back(model.source_path);
  ASSIGN_OR_RETURN(ir::Model graph, hf::BuildDecoderGraph(model));
  if (graph.input_files.empty()) graph.input_files = inputs;
  if (r.explicit_passes) {
    // The stages ran them over the checkpoint, which has no nodes yet.
    passes::PipelineRequest req;
    req.use_default = false;
    req.passes = *r.convert.stages.passes;
    req.verify_each = r.convert.stages.verify_each;
    auto ran = passes::RunPipeline(graph, req);
    if (!ran.ok()) return Annotate(ran.status(), "passes on the decoder graph");
    if (log) {
      log("passes: ran on the decoder graph built for the export, " +
          std::to_string(ran->nodes_before) + " -> " + std::to_string(ran->nodes_after) + " nodes");
    }
  }
  return graph;
}

}  // namespace

absl::StatusOr<OnnxConvertRequest> BuildOnnxConvertRequest(const ConvertFlags& flags) {
  for (const auto& [flag, given] : WriteOnlyFlags(flags)) {
    if (given) {
      return UsageError(flag, "does not apply to --format onnx (the model keeps the graph's "
                              "float dtypes; tensors go in one file, external data with "
                              "--onnx-external-data or above 2 GiB)");
    }
  }
  OnnxConvertRequest r;
  r.from_artifact = shard_reader::LooksLikeArtifact(flags.input);
  if (r.from_artifact) {
    for (const auto& [flag, given] : StageFlags(flags)) {
      if (given) {
        return UsageError(flag, "'" + flags.input +
                                    "' is an artifact: it is exported as converted; pass the "
                                    "original model to convert it with other options");
      }
    }
  }
  ASSIGN_OR_RETURN(r.convert, BuildConvertRequest(flags));
  r.explicit_passes = r.convert.stages.passes.has_value();
  if (!flags.onnx_profile.empty()) {
    auto p = onnx_export::ParseOnnxProfile(flags.onnx_profile);
    if (!p.ok()) return UsageError("--onnx-profile", std::string(p.status().message()));
    r.options.profile = *p;
  }
  if (!flags.onnx_quant_format.empty()) {
    auto q = onnx_export::ParseQuantFormat(flags.onnx_quant_format);
    if (!q.ok()) return UsageError("--onnx-quant-format", std::string(q.status().message()));
    if (!r.from_artifact && !r.convert.stages.quant.w8a8) {
      return UsageError("--onnx-quant-format",
                        "chooses how static W8A8 is written: pass --quant w8a8 --calib DATA too");
    }
    r.options.quant_format = *q;
  }
  r.external_data = flags.onnx_external_data;
  return r;
}

absl::StatusOr<OnnxConvertResult> ConvertToOnnx(const OnnxConvertRequest& request) {
  // Preflight before the import: a bad output fails in milliseconds.
  RETURN_IF_ERROR(CheckOutputs(request, {request.convert.input}));
  ASSIGN_OR_RETURN(ir::Model model, LoadAndConvert(request));
  std::vector<std::string> inputs = model.input_files;
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.push_back(request.convert.input);
  RETURN_IF_ERROR(CheckOutputs(request, inputs));

  onnx_export::OnnxExportOptions options = request.options;
  // Decoder graphs compute in f32 over f16/bf16 checkpoint weights.
  options.widen_half_initializers = model.architecture.has_value();
  OnnxConvertResult result;
  ASSIGN_OR_RETURN(result.report, onnx_export::PrepareForOnnxRuntime(model, options));
  model.producer_name = "slimpack";
  model.producer_version.clear();

  onnx_format::OnnxExportOptions write;
  write.use_external_data = request.external_data;
  RETURN_IF_ERROR(onnx_format::ExportOnnx(model, request.convert.output, write));
  result.model_bytes = FileBytes(request.convert.output);
  const std::string data = DataFilePath(request.convert.output);
  // The writer's rule: external data when asked, or forced past 2 GiB.
  uint64_t tensor_bytes = 0;
  for (const ir::Tensor& t : model.graph.initializers()) tensor_bytes += t.data.size();
  if (request.external_data || tensor_bytes > write.max_embedded_tensor_bytes) {
    result.data_file = data;
    result.data_bytes = FileBytes(data);
  }
  return result;
}

}  // namespace slimpack::converter
