#include "converter/convert_gguf.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/dataset.h"
#include "converter/gguf_awq.h"
#include "converter/gguf_gptq.h"
#include "converter/gguf_recipe.h"
#include "converter/awq_input_stats.h"
#include "converter/hessian_stats.h"
#include "converter/recipe_from_artifact.h"
#include "converter/requantize.h"
#include "export/gguf_blocks.h"
#include "export/gguf_size_plan.h"
#include "export/gguf_types.h"
#include "formats/gguf/imatrix_file.h"
#include "formats/gguf/llama_names.h"
#include "formats/import.h"
#include "formats/shard/reader/artifact_reader.h"
#include "formats/shard/writer/artifact_writer.h"
#include "formats/shard/writer/output_preflight.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "quantize/importance_matrix.h"
#include "quantize/quant_rules.h"
#include "support/output_path.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::converter {
namespace {

// The flags a GGUF export does not use yet, with what the user typed.
std::vector<std::pair<std::string, bool>> UnusedFlags(const ConvertFlags& f) {
  return {
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
      {"--target-size", !f.target_size.empty()},
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
      {"--onnx-kv-cache", f.onnx_kv_cache},
      {"--onnx-gqa", f.onnx_gqa},
      {"--activation-type", !f.activation_type.empty()},
  };
}

// The calibration half of a GPTQ or AWQ request.
GgufCalibration CalibrationOf(const GgufConvertRequest& request) {
  GgufCalibration c;
  c.calib = request.calib;
  c.calib_samples = request.calib_samples;
  c.threads = request.threads;
  c.progress = request.progress;
  if (request.verbose) c.log = request.log;
  return c;
}

absl::StatusOr<gguf_export::GgufImportance> ImportanceFromFile(const std::string& path) {
  ASSIGN_OR_RETURN(gguf::ImatrixFile file, gguf::ReadImatrixFile(path));
  gguf_export::GgufImportance out;
  for (const auto& [name, entry] : file.entries) out.columns[name] = gguf::MeanSquares(entry);
  out.file = path;
  out.dataset = file.dataset;
  out.chunks = file.last_call;
  return out;
}

// Our own imatrix: the model run on the calibration windows in the
// interpreter, the mean x^2 of every linear layer's input columns, keyed by
// the GGUF names the matrices get (the token embedding is a lookup, no
// matmul reads it, so it has none, as in llama.cpp's).
absl::StatusOr<gguf_export::GgufImportance> ImportanceFromCalibration(
    const ir::Model& model, const GgufConvertRequest& request) {
  ASSIGN_OR_RETURN(quantize::ImportanceMatrix m,
                   quantize::ComputeImportanceMatrix(model, request.calib, request.calib_samples,
                                                     request.threads, request.progress));
  gguf_export::GgufImportance out;
  for (auto& [hf_name, columns] : m.columns) {
    const std::string name = gguf::GgufNameFromHf(hf_name);
    if (name.empty()) {
      return absl::InternalError("linear layer weight '" + hf_name + "' has no GGUF name");
    }
    // An act-order weight's input was read in its stored (permuted) column
    // order; the GGUF holds checkpoint order.
    ASSIGN_OR_RETURN(const std::vector<int64_t> perm,
                     hf::ReadInputPermutation(model.graph, hf_name,
                                              static_cast<int64_t>(columns.size()),
                                              model.source_path));
    if (!perm.empty()) hf::UnpermuteColumns(perm, 1, columns.data());
    out.columns[name] = std::move(columns);
  }
  out.file = "slimpack --calib";
  out.dataset = absl::StrJoin(request.calib, ",");
  out.chunks = m.samples;
  return out;
}

}  // namespace

absl::StatusOr<GgufConvertRequest> BuildGgufConvertRequest(const ConvertFlags& flags) {
  for (const auto& [flag, given] : UnusedFlags(flags)) {
    if (given) {
      return UsageError(flag, "not supported with --format gguf or a llama-quantize --quant type "
                              "yet (they take --quant with a llama-quantize type, --dtype, --algo "
                              "rtn/imatrix/gptq/awq, --calib, --calib-samples, --imatrix, --hessians, --awq-inputs, "
                              "--tensor-type, --recipe, --threads, --force, -v)");
    }
  }
  // A recipe fills what the flags leave out (converter/gguf_recipe.h).
  ConvertFlags f = flags;
  GgmlRecipe recipe;
  std::optional<ArtifactRecipe> recipe_from;
  if (!f.recipe_from.empty()) {
    if (!f.recipe_path.empty()) {
      return UsageError("--recipe-from", "give --recipe or --recipe-from, not both");
    }
    ASSIGN_OR_RETURN(recipe_from, ReadArtifactRecipe(f.recipe_from));
    ASSIGN_OR_RETURN(recipe, GgmlRecipeFrom(recipe_from->recipe,
                                            recipe_from->source + " producer.recipe"));
  } else if (!f.recipe_path.empty()) {
    ASSIGN_OR_RETURN(recipe, ReadGgmlRecipe(f.recipe_path));
  }
  if (f.quant.empty() && f.dtype.empty()) f.quant = recipe.scheme;
  if (f.algo.empty()) f.algo = recipe.algorithm;
  if (f.calib_samples == 0 && !f.calib.empty()) f.calib_samples = recipe.calib_samples;
  // Weighting by importance: llama.cpp's file, or ours computed from --calib.
  if (!f.algo.empty() && f.algo != "rtn" && f.algo != "imatrix" && f.algo != "gptq" &&
      f.algo != "awq") {
    return UsageError("--algo", "'" + f.algo + "' is not supported with --format gguf yet "
                                "(rtn: ggml's own search; imatrix: weighted by --calib or "
                                "--imatrix; gptq: error feedback on ggml's grids, --calib; awq: "
                                "activation-aware scales searched on ggml's grids, --calib)");
  }
  if (!f.hessians.empty()) {
    // GPTQ from `slimpack calibrate --hessians`: one calibration for every
    // type the model is exported to.
    if (f.algo.empty()) f.algo = "gptq";
    if (f.algo != "gptq") {
      return UsageError("--hessians", "feeds --algo gptq, not --algo " + f.algo);
    }
    if (!f.calib.empty() || !f.imatrix.empty()) {
      return UsageError("--hessians", "give GPTQ's statistics as --hessians FILE or as --calib "
                                      "DATA, not both (nor with --imatrix)");
    }
  }
  if (!f.awq_inputs.empty()) {
    // AWQ from `slimpack calibrate --awq-inputs`: --calib's scales without
    // running the model, for every type the model is exported to.
    if (f.algo.empty()) f.algo = "awq";
    if (f.algo != "awq") {
      return UsageError("--awq-inputs", "feeds --algo awq, not --algo " + f.algo);
    }
    if (!f.calib.empty() || !f.imatrix.empty() || !f.hessians.empty()) {
      return UsageError("--awq-inputs", "give AWQ's inputs as --awq-inputs FILE or as --calib "
                                        "DATA, not both (nor with --imatrix or --hessians)");
    }
  }
  if (f.algo == "gptq" && f.calib.empty() && f.hessians.empty()) {
    return UsageError("--algo", "gptq needs --calib FILES (token windows) or --hessians FILE");
  }
  if (f.algo == "awq" && f.calib.empty() && f.awq_inputs.empty()) {
    return UsageError("--algo", "awq needs --calib FILES (token windows) or --awq-inputs FILE");
  }
  if (f.algo == "gptq" && !f.imatrix.empty()) {
    return UsageError("--imatrix", "--algo gptq computes its importance from --calib; drop "
                                   "--imatrix");
  }
  if (f.algo == "awq" && !f.imatrix.empty()) {
    return UsageError("--imatrix", "--algo awq rescales the weights an imatrix was measured "
                                   "for; drop --imatrix");
  }
  if (!f.imatrix.empty() && !f.calib.empty()) {
    return UsageError("--imatrix", "give --imatrix (llama.cpp's file) or --calib (computed here), "
                                   "not both");
  }
  if (f.algo == "imatrix" && f.imatrix.empty() && f.calib.empty()) {
    return UsageError("--algo", "imatrix needs --calib FILES (token windows) or --imatrix FILE");
  }
  if (!f.calib.empty() && f.algo != "imatrix" && f.algo != "gptq" && f.algo != "awq") {
    return UsageError("--calib", "with --format gguf, calibration data feeds --algo imatrix, "
                                 "gptq or awq only");
  }
  if (f.calib_samples != 0 && f.calib.empty()) {
    return UsageError("--calib-samples", "needs --calib");
  }
  if (!f.imatrix.empty() && f.algo == "rtn") {
    return UsageError("--imatrix", "--algo rtn ignores importance; drop one of them");
  }
  GgufConvertRequest r;
  r.recipe_from = std::move(recipe_from);
  r.input = f.input;
  r.output = f.output;
  r.threads = support::ThreadsOrCores(f.threads);
  r.force = f.force;
  r.allow_requantize = f.allow_requantize;
  r.verbose = f.verbose;
  r.imatrix_path = f.imatrix;
  r.calib = f.calib;
  r.hessians_path = f.hessians;
  r.awq_inputs_path = f.awq_inputs;
  r.gptq = f.algo == "gptq";
  r.awq = f.algo == "awq";
  r.calib_samples = f.calib_samples > 0 ? f.calib_samples : quantize::QuantConfig{}.calib_samples;
  if (!f.quant.empty() && !f.dtype.empty()) {
    return UsageError("--quant/--dtype", "give one: --quant names the GGUF type (" +
                                             gguf_export::PresetNames() + ")");
  }
  r.preset = !f.quant.empty() ? f.quant : !f.dtype.empty() ? f.dtype : "f16";
  auto preset = gguf_export::ParsePreset(r.preset);
  if (!preset.ok()) {
    return UsageError(f.quant.empty() ? "--dtype" : "--quant", std::string(preset.status().message()));
  }
  // --tensor-type PATTERN=TYPE (llama-quantize's flag), then the recipe's
  // rules: the first that matches a matrix chooses its type.
  for (const std::string& text : f.tensor_types) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos) {
      return UsageError("--tensor-type", "'" + text + "' is not PATTERN=TYPE (e.g. attn_v=q8_0)");
    }
    auto o = gguf_export::ParseTypeOverride(text.substr(0, eq), text.substr(eq + 1));
    if (!o.ok()) return UsageError("--tensor-type", std::string(o.status().message()));
    r.type_overrides.push_back(*std::move(o));
    r.type_rules.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  }
  for (const auto& [match, type] : recipe.rules) {
    ASSIGN_OR_RETURN(gguf_export::TypeOverride o, gguf_export::ParseTypeOverride(match, type));
    r.type_overrides.push_back(std::move(o));
    r.type_rules.emplace_back(match, type);
  }
  // A size target: the planner chooses every matrix's type.
  r.target_bpw = f.target_bpw > 0 ? f.target_bpw : recipe.target_bpw;
  if (r.target_bpw > 0) {
    if (!r.type_rules.empty()) {
      return UsageError("--target-bpw", "plans every matrix's ggml type; give it without "
                                        "--tensor-type or recipe rules");
    }
    if (r.gptq || r.awq) {
      return UsageError("--target-bpw", "not supported with --algo gptq or awq on ggml types "
                                        "yet (rtn or imatrix)");
    }
  }
  return r;
}

namespace {

// What both outputs share: the input imported (or an artifact read), the
// checks, and the importance / GPTQ / AWQ work that fills the options.
struct PreparedExport {
  ir::Model model;
  gguf_export::GgufExportOptions options;
};

// `refuse_blocks`: ggml blocks in the input are an error (checked before
// any calibration work).
absl::StatusOr<PreparedExport> Prepare(const GgufConvertRequest& request, bool refuse_blocks) {
  PreparedExport out;
  ir::Model& model = out.model;
  // An artifact is exported as converted (pruned, cast); its float weights
  // are encoded in the requested type like a checkpoint's.
  if (shard_reader::LooksLikeArtifact(request.input)) {
    ASSIGN_OR_RETURN(model, shard_reader::ReadArtifactModel(request.input));
  } else {
    ASSIGN_OR_RETURN(model, formats::ImportModel(request.input, request.threads));
  }
  if (refuse_blocks && !request.allow_requantize) {
    // llama-quantize refuses to quantize quantized tensors again without
    // --allow-requantize; blocks of a GGUF (or of an artifact) are carried
    // when --quant is left out.
    for (const ir::Tensor& t : model.graph.initializers()) {
      if (t.quant.kind == ir::QuantKind::kGgmlBlocks) {
        return absl::FailedPreconditionError(absl::StrCat(
            request.input, ": tensor '", t.name, "' is already ",
            std::string(ir::GgmlTypeName(t.quant.block_type)), " blocks; re-encoding them as ",
            request.preset,
            " would round the weights twice: convert without --quant to carry them as they are, "
            "or pass --allow-requantize"));
      }
    }
  }
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
  if ((request.gptq || request.awq) && request.allow_requantize) {
    // GPTQ and AWQ work on float weights: decode the codes first.
    ASSIGN_OR_RETURN(const int64_t decoded, DequantizeWeightsInPlace(model, request.input));
    if (decoded > 0 && request.log) {
      request.log(absl::StrCat("--allow-requantize: ", decoded,
                               " quantized weight(s) decoded to f32 before --algo ",
                               request.gptq ? "gptq" : "awq"));
    }
  }
  if (request.gptq || request.awq) {
    // Their codes are carried or re-encoded as they are; GPTQ and AWQ would
    // silently skip them.
    for (const ir::Tensor& t : model.graph.initializers()) {
      if (t.quant.quantized()) {
        return absl::InvalidArgumentError(absl::StrCat(
            request.input, ": tensor '", t.name, "' is already quantized (",
            t.quant.algorithm.empty() ? std::string("codes") : t.quant.algorithm,
            "); --algo ", request.gptq ? "gptq" : "awq",
            " works on float weights: drop --algo to carry or re-encode the codes, or pass "
            "--allow-requantize"));
      }
    }
  }
  gguf_export::GgufExportOptions& options = out.options;
  options.preset = request.preset;
  options.allow_requantize = request.allow_requantize;
  options.type_overrides = request.type_overrides;
  options.threads = request.threads;
  if (request.verbose) options.log = request.log;
  if (!request.imatrix_path.empty()) {
    ASSIGN_OR_RETURN(options.importance, ImportanceFromFile(request.imatrix_path));
  } else if (request.gptq) {
    GgufGptqRequest g;
    static_cast<GgufCalibration&>(g) = CalibrationOf(request);
    if (!request.hessians_path.empty()) {
      ASSIGN_OR_RETURN(g.hessians, OpenHessianStats(model, request.hessians_path));
    }
    RETURN_IF_ERROR(EncodeMatricesWithGptq(model, g, &options));
  } else if (request.awq) {
    GgufAwqRequest w;
    static_cast<GgufCalibration&>(w) = CalibrationOf(request);
    if (!request.awq_inputs_path.empty()) {
      ASSIGN_OR_RETURN(quantize::AwqInputs inputs,
                       ReadAwqInputStats(model, request.awq_inputs_path));
      w.inputs = std::make_shared<const quantize::AwqInputs>(std::move(inputs));
      w.inputs_file = request.awq_inputs_path;
    }
    RETURN_IF_ERROR(ApplyAwqOnGgmlGrids(model, w, options));
  } else if (!request.calib.empty()) {
    ASSIGN_OR_RETURN(options.importance, ImportanceFromCalibration(model, request));
  }
  if (options.importance && request.log) {
    request.log(absl::StrCat("imatrix: ", options.importance->columns.size(), " matrices from ",
                             options.importance->file, " (", options.importance->chunks,
                             " chunks of ", options.importance->dataset, ")"));
  }
  if (request.target_bpw > 0) {
    gguf_export::GgmlSizeTarget target;
    target.bits_per_weight = request.target_bpw;
    target.threads = request.threads;
    ASSIGN_OR_RETURN(gguf_export::GgmlSizePlan plan,
                     gguf_export::PlanGgmlTypesForSize(model, options, target));
    if (request.log) {
      request.log(absl::StrCat("size plan: ", plan.overrides.size(), " matrices at ",
                               plan.bits_per_weight, " bits/weight (target ", request.target_bpw,
                               "), summed ", options.importance ? "importance-weighted " : "",
                               "squared error ", plan.error, "; the ", request.preset,
                               " mix: ", plan.preset_bits_per_weight, " bits/weight, error ",
                               plan.preset_error));
      if (request.verbose) {
        for (const std::string& line : plan.lines) request.log("size plan: " + line);
      }
    }
    options.type_overrides = std::move(plan.overrides);
  }
  return out;
}

// The calibration files (--calib, --imatrix), hashed before the work: an
// artifact records them, and --recipe-from checks them against its record.
absl::StatusOr<std::vector<shard_writer::NamedDigest>> CalibrationDigests(
    const GgufConvertRequest& request) {
  std::vector<shard_writer::NamedDigest> out;
  std::vector<std::string> files;
  if (!request.calib.empty()) {
    ASSIGN_OR_RETURN(files, calibration::ExpandDataPaths(request.calib));
  }
  if (!request.imatrix_path.empty()) files.push_back(request.imatrix_path);
  if (!request.hessians_path.empty()) files.push_back(request.hessians_path);
  if (!request.awq_inputs_path.empty()) files.push_back(request.awq_inputs_path);
  if (!files.empty()) {
    ASSIGN_OR_RETURN(std::vector<calibration::DataFileDigest> digests,
                     calibration::DigestDataFiles(files));
    for (const auto& d : digests) out.push_back({d.name, d.bytes, d.sha256});
  }
  if (request.recipe_from) RETURN_IF_ERROR(CheckSameCalibration(*request.recipe_from, out));
  return out;
}

}  // namespace

absl::StatusOr<gguf_export::GgufExportResult> ConvertToGguf(const GgufConvertRequest& request) {
  // An existing file is replaced only with --force (as convert treats an
  // artifact directory): nothing marks a GGUF as ours.
  const support::OutputKind kind{"a file to replace without --force",
                                 [](const std::string&) { return false; }};
  RETURN_IF_ERROR(support::PreflightOutputFile(request.output, request.force, kind).status());
  RETURN_IF_ERROR(CalibrationDigests(request).status());
  ASSIGN_OR_RETURN(PreparedExport prepared, Prepare(request, /*refuse_blocks=*/false));
  return gguf_export::ExportDecoderToGguf(prepared.model, prepared.options, request.output);
}

bool IsGgmlPresetName(const std::string& quant) {
  return !quant.empty() && (quant[0] == 'q' || quant[0] == 'Q') &&
         gguf_export::ParsePreset(quant).ok();
}

std::string GgmlSchemeOf(const ConvertFlags& flags) {
  if (!flags.quant.empty() || !flags.dtype.empty()) {
    return IsGgmlPresetName(flags.quant) ? flags.quant : "";
  }
  absl::StatusOr<Recipe> recipe = absl::NotFoundError("no recipe");
  if (!flags.recipe_path.empty()) {
    recipe = ReadRecipeFile(flags.recipe_path);
  } else if (!flags.recipe_from.empty()) {
    absl::StatusOr<ArtifactRecipe> from = ReadArtifactRecipe(flags.recipe_from);
    if (from.ok()) recipe = from->recipe;
  }
  if (!recipe.ok() || !recipe->quant || !recipe->quant->contains("scheme")) return "";
  const nlohmann::json& scheme = (*recipe->quant)["scheme"];
  if (!scheme.is_string()) return "";
  return IsGgmlPresetName(scheme.get<std::string>()) ? scheme.get<std::string>() : "";
}

absl::StatusOr<gguf_export::GgufExportResult> ConvertToGgmlArtifact(
    const GgufConvertRequest& request) {
  // Before any calibration: the output must be usable (replacing needs --force).
  RETURN_IF_ERROR(shard_writer::PreflightOutput(request.output, request.force).status());
  ASSIGN_OR_RETURN(std::vector<shard_writer::NamedDigest> calibration, CalibrationDigests(request));
  ASSIGN_OR_RETURN(PreparedExport prepared, Prepare(request, /*refuse_blocks=*/true));
  ASSIGN_OR_RETURN(gguf_export::GgmlBlocksModel blocks,
                   gguf_export::EncodeDecoderAsGgmlBlocks(prepared.model, prepared.options,
                                                          /*deferred=*/true));
  shard_writer::ArtifactOptions options;
  options.encoder.produce = blocks.produce;
  options.encoder.produce_streamed = blocks.produce_streamed;
  options.threads = request.threads;
  options.force = request.force;
  // Recorded as a recipe for llama-quantize types (converter/gguf_recipe.h),
  // so --recipe-from reads it back; flags and rules as merged.
  nlohmann::json quant = {{"scheme", request.preset},
                          {"algorithm", request.gptq                      ? "gptq"
                                        : request.awq                     ? "awq"
                                        : prepared.options.importance ? "imatrix"
                                                                          : "rtn"}};
  if (request.target_bpw > 0) quant["target_bpw"] = request.target_bpw;
  if (!request.calib.empty()) quant["calib_samples"] = request.calib_samples;
  if (!request.type_rules.empty()) {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& [match, type] : request.type_rules) {
      rules.push_back({{"match", match}, {"scheme", type}});
    }
    quant["rules"] = rules;
  }
  options.recipe = {{"quant", quant}};
  options.calibration = std::move(calibration);
  RETURN_IF_ERROR(shard_writer::WriteArtifact(blocks.model, request.output, options).status());
  return blocks.stats;
}

}  // namespace slimpack::converter
