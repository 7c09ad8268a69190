#include "converter/convert_gguf.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "export/gguf_types.h"
#include "formats/import.h"
#include "hf/weight_roles.h"
#include "support/output_path.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// The flags a GGUF export does not use yet, with what the user typed.
std::vector<std::pair<std::string, bool>> UnusedFlags(const ConvertFlags& f) {
  return {
      {"--recipe", !f.recipe_path.empty()},
      {"--recipe-from", !f.recipe_from.empty()},
      {"--shard-size", !f.shard_size.empty()},
      {"--passes", !f.passes.empty()},
      {"--verify-each", f.verify_each},
      {"--print-ir-after-all", f.print_ir_after_all},
      {"--print-ir-after", !f.print_ir_after.empty()},
      {"--sparsity-pattern", !f.sparsity_pattern.empty()},
      {"--sparsity-criterion", !f.sparsity_criterion.empty()},
      {"--prune-criterion", !f.prune_criterion.empty()},
      {"--prune-target", !f.prune_target.empty()},
      {"--prune-refit", f.prune_refit},
      {"--group", f.group != 0},
      {"--asym", f.asym},
      {"--algo", !f.algo.empty()},
      {"--calib", !f.calib.empty()},
      {"--calib-samples", f.calib_samples != 0},
      {"--target-size", !f.target_size.empty()},
      {"--target-bpw", f.target_bpw != 0},
      {"--report", !f.report_dir.empty()},
      {"--report-data", !f.report_data.empty()},
      {"--gate", !f.gate.empty()},
      {"--sparsity", !f.sparsity.empty()},
      {"--prune", !f.prune.empty()},
      {"--prune-rules", !f.prune_rules.empty()},
      {"--prune-budget-params", !f.prune_budget_params.empty()},
      // llama.cpp refuses a GGUF that lacks a tensor it needs.
      {"--allow-incomplete", f.allow_incomplete},
      {"--onnx-profile", !f.onnx_profile.empty()},
      {"--onnx-quant-format", !f.onnx_quant_format.empty()},
      {"--onnx-external-data", f.onnx_external_data},
  };
}

}  // namespace

absl::StatusOr<GgufConvertRequest> BuildGgufConvertRequest(const ConvertFlags& f) {
  for (const auto& [flag, given] : UnusedFlags(f)) {
    if (given) {
      return UsageError(flag, "not supported with --format gguf yet (GGUF export takes --quant "
                              "with a llama-quantize type, --dtype, --threads, --force, -v)");
    }
  }
  GgufConvertRequest r;
  r.input = f.input;
  r.output = f.output;
  r.threads = f.threads > 0 ? f.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.force = f.force;
  r.verbose = f.verbose;
  if (!f.quant.empty() && !f.dtype.empty()) {
    return UsageError("--quant/--dtype", "give one: --quant names the GGUF type (" +
                                             gguf_export::PresetNames() + ")");
  }
  r.preset = !f.quant.empty() ? f.quant : !f.dtype.empty() ? f.dtype : "f16";
  auto preset = gguf_export::ParsePreset(r.preset);
  if (!preset.ok()) {
    return UsageError(f.quant.empty() ? "--dtype" : "--quant", std::string(preset.status().message()));
  }
  return r;
}

absl::StatusOr<gguf_export::GgufExportResult> ConvertToGguf(const GgufConvertRequest& request) {
  // An existing file is replaced only with --force (as convert treats an
  // artifact directory): nothing marks a GGUF as ours.
  const support::OutputKind kind{"a file to replace without --force",
                                 [](const std::string&) { return false; }};
  RETURN_IF_ERROR(support::PreflightOutputFile(request.output, request.force, kind).status());
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(request.input));
  std::vector<std::string> inputs = model.input_files;
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.push_back(request.input);
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(inputs, request.output));
  if (request.log) {
    for (const std::string& w : model.warnings) request.log("warning: " + w);
  }
  const std::string incomplete =
      model.architecture ? hf::DescribeMissingWeights(*model.architecture,
                                                      model.graph.initializers())
                         : std::string();
  if (!incomplete.empty()) {
    return absl::InvalidArgumentError(request.input + ": " + incomplete +
                                      " (llama.cpp could not load the GGUF)");
  }
  gguf_export::GgufExportOptions options;
  options.preset = request.preset;
  options.threads = request.threads;
  if (request.verbose) options.log = request.log;
  return gguf_export::ExportDecoderToGguf(model, options, request.output);
}

}  // namespace slimpack::converter
