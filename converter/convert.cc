#include "converter/convert.h"

#include <optional>
#include <set>

#include "calibration/dataset.h"
#include "formats/import.h"
#include "formats/shard/writer/artifact_writer.h"
#include "formats/shard/writer/output_preflight.h"
#include "formats/shard/writer/tensor_encoder.h"
#include "hf/weight_roles.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// The --dtype cast, except for the scales and zero points of quantized
// tensors: the quantizer chose those dtypes (f32 or f16 scales, on whose
// grid the codes were optimised; zero points of the quantized dtype).
shard_writer::TensorEncoder Encoder(const ir::Model& model, const Recipe& recipe) {
  shard_writer::TensorEncoder encoder = shard_writer::FloatCastEncoder(recipe.dtype);
  if (!encoder.output_dtype) return encoder;
  std::set<std::string> aux;
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (t.quant.quantized()) {
      aux.insert(t.quant.scale);
      if (!t.quant.zero_point.empty()) aux.insert(t.quant.zero_point);
    }
  }
  auto inner = encoder.output_dtype;
  encoder.output_dtype = [inner, aux](const ir::Tensor& t) {
    return aux.count(t.name) ? t.dtype : inner(t);
  };
  return encoder;
}

bool UsesAlgorithm(const quantize::QuantConfig& config, quantize::Algorithm a) {
  if (config.algorithm == a) return true;
  for (const quantize::QuantRule& r : config.rules) {
    if (r.algorithm == a) return true;
  }
  return false;
}

// One part of a split AWQ conversion searches only the layer groups whose
// tensors it writes. Which tensors those are follows from the shard plan,
// i.e. from the stored sizes, which AWQ's values do not change (a group it
// does not search keeps a searched one's dtypes: AwqFoldOptions::written).
// So the plan is made on a copy of the model (the data is shared, not
// copied) run through the stages with no group searched. Only for AWQ on a
// checkpoint (a graph's AWQ is rtn-mse) without GPTQ, calibrated imatrix,
// a size target, pruning or sparsity, whose calibration runs the copy would
// repeat; those parts search every group, as before.
absl::StatusOr<std::optional<std::set<std::string>>> AwqPartTensors(const ir::Model& model,
                                                                   const ConvertRequest& request) {
  const StageOptions& stages = request.stages;
  const bool calibrated_imatrix =
      UsesAlgorithm(stages.quant, quantize::Algorithm::kImatrix) && stages.imatrix.empty();
  if (!request.part || !model.graph.nodes.empty() ||
      !UsesAlgorithm(stages.quant, quantize::Algorithm::kAwq) ||
      UsesAlgorithm(stages.quant, quantize::Algorithm::kGptq) || calibrated_imatrix ||
      stages.quant.has_target() || stages.prune.active() || stages.sparsify) {
    return std::optional<std::set<std::string>>();
  }
  ir::Model probe = model;
  StageOptions quiet = stages;
  quiet.part_tensors = std::set<std::string>();
  quiet.log = nullptr;
  quiet.progress = nullptr;
  quiet.ir_out = nullptr;
  quiet.print_ir_after_all = false;
  quiet.print_ir_after.clear();
  const std::string what = "planning part " + std::to_string(request.part->index + 1) + "/" +
                           std::to_string(request.part->count);
  RETURN_IF_ERROR(Annotate(RunConvertStages(probe, quiet).status(), what));
  shard_writer::ArtifactOptions plan;
  plan.shard_size = *request.recipe.shard_size;
  plan.encoder = Encoder(probe, request.recipe);
  plan.part = request.part;
  auto written = shard_writer::TensorsOfPart(probe, plan);
  if (!written.ok()) return Annotate(written.status(), what);
  return std::optional<std::set<std::string>>(*std::move(written));
}

}  // namespace

absl::StatusOr<shard_writer::ArtifactSummary> Convert(ConvertRequest request,
                                                      const ConvertCallbacks& callbacks) {
  // Preflight before the import: a bad output fails in milliseconds.
  RETURN_IF_ERROR(shard_writer::PreflightOutput(request.output, request.force).status());
  // The calibration files, hashed before the work: recorded in the manifest,
  // and for --recipe-from checked against what the artifact recorded.
  std::vector<shard_writer::NamedDigest> calibration;
  if (!request.stages.calib.empty() || !request.stages.imatrix.empty() ||
      !request.stages.hessians.empty() || !request.stages.awq_inputs.empty()) {
    std::vector<std::string> files;
    if (!request.stages.calib.empty()) {
      ASSIGN_OR_RETURN(files, calibration::ExpandDataPaths(request.stages.calib));
    }
    // An --imatrix file is calibration data too: recorded, and checked by
    // --recipe-from like the windows it was computed from.
    if (!request.stages.imatrix.empty()) files.push_back(request.stages.imatrix);
    if (!request.stages.hessians.empty()) files.push_back(request.stages.hessians);
    if (!request.stages.awq_inputs.empty()) files.push_back(request.stages.awq_inputs);
    ASSIGN_OR_RETURN(std::vector<calibration::DataFileDigest> digests,
                     calibration::DigestDataFiles(files));
    for (const auto& d : digests) calibration.push_back({d.name, d.bytes, d.sha256});
  }
  if (request.recipe_from) {
    RETURN_IF_ERROR(CheckSameCalibration(*request.recipe_from, calibration));
  }
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(request.input, request.threads));
  if (request.stages.log) {
    for (const std::string& w : model.warnings) request.stages.log("warning: " + w);
  }
  const std::string incomplete =
      model.architecture ? hf::DescribeMissingWeights(*model.architecture,
                                                      model.graph.initializers())
                         : std::string();
  if (!incomplete.empty() && !request.allow_incomplete) {
    return absl::InvalidArgumentError(
        request.input + ": " + incomplete +
        " (the artifact could not run; pass --allow-incomplete to convert it anyway)");
  }
  // The model goes straight to the writer: RTN-family weights are
  // quantized as their shards are written, so no quantized tensor waits in
  // memory for the others (quantize/deferred_weights.h).
  request.stages.defer_weight_quant = request.quantize_while_writing;
  ASSIGN_OR_RETURN(request.stages.part_tensors, AwqPartTensors(model, request));
  ASSIGN_OR_RETURN(StageResult staged, RunConvertStages(model, request.stages));
  request.recipe.passes = staged.passes_run;

  shard_writer::ArtifactOptions write;
  write.shard_size = *request.recipe.shard_size;
  write.threads = request.threads;
  write.force = request.force;
  write.encoder = Encoder(model, request.recipe);
  write.encoder.produce = staged.produce;
  write.encoder.produce_streamed = staged.produce_streamed;
  write.encoder.produce_ahead = staged.produce_ahead;
  write.encoder.sparse_zeros = staged.sparse_zeros;
  write.recipe = RecipeToJson(request.recipe);
  if (request.stages.prune.active()) {
    write.recipe["prune"] = prune::PruneOptionsToJson(request.stages.prune);
  }
  write.passes = staged.records;
  write.calibration = std::move(calibration);
  write.progress = callbacks.progress;
  write.fault_hook = callbacks.fault_hook;
  write.part = request.part;
  ASSIGN_OR_RETURN(shard_writer::ArtifactSummary summary,
                   shard_writer::WriteArtifact(model, request.output, write));
  if (staged.finish_deferred) RETURN_IF_ERROR(staged.finish_deferred(!request.part));
  return summary;
}

}  // namespace slimpack::converter
