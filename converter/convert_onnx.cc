#include "converter/convert_onnx.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "export/genai_config.h"
#include "formats/import.h"
#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/onnx_writer.h"
#include "formats/shard/reader/artifact_reader.h"
#include "hf/llama_graph_builder.h"
#include "passes/pipeline.h"
#include "support/atomic_file.h"
#include "support/output_path.h"
#include "support/small_file.h"
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
      {"--allow-requantize", f.allow_requantize},
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
      {"--activation-type", !f.activation_type.empty()},
      {"--algo", !f.algo.empty()},
      {"--calib", !f.calib.empty()},
      {"--calib-samples", f.calib_samples != 0},
      {"--imatrix", !f.imatrix.empty()},
      {"--hessians", !f.hessians.empty()},
      {"--awq-inputs", !f.awq_inputs.empty()},
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
// stages; decoder checkpoints as their graph (with its KV cache on request).
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
  if (!ir::IsDecoderCheckpoint(model.source_format)) {
    if (r.kv_cache) {
      return absl::InvalidArgumentError(
          "--onnx-kv-cache: '" + r.convert.input +
          "' is not a Hugging Face decoder checkpoint (safetensors with config.json, a GGUF "
          "decoder, or an artifact of one); only decoders have a KV cache");
    }
    return model;
  }
  std::vector<std::string> inputs = model.input_files;
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.push_back(model.source_path);
  hf::DecoderGraphOptions graph_options;
  graph_options.kv_cache = r.kv_cache;
  graph_options.group_query_attention = r.group_query_attention;
  ASSIGN_OR_RETURN(ir::Model graph, hf::BuildDecoderGraph(model, graph_options));
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

// A file the model carries (tokenizer, config), to be written beside the
// exported model: from `source`, or `bytes` when the stages rewrote it
// (ir::Model::carried_overrides, e.g. a pruned config.json).
struct CarriedOutput {
  std::string dest;
  std::string source;        // "" for in-memory bytes
  const std::string* bytes;  // nullptr to copy `source`
  std::string generated;     // written instead when not empty (genai_config.json)
};

// genai_config.json for the KV-cache decoder `model` exported as
// `model_file`, with the checkpoint's generation_config.json when it carries
// one; "" when GenAI cannot size its cache (layers of different widths).
absl::StatusOr<std::string> GenaiConfigFor(const ir::Model& model, const std::string& model_file) {
  std::string generation;
  if (auto over = model.carried_overrides.find("generation_config.json");
      over != model.carried_overrides.end()) {
    generation = over->second;
  } else {
    for (const std::string& path : model.carried_files) {
      if (support::BaseName(path) != "generation_config.json") continue;
      ASSIGN_OR_RETURN(generation, support::ReadSmallFile(path, support::kMaxSideFileBytes));
    }
  }
  auto text = onnx_export::GenaiConfigJson(*model.architecture, model_file, generation);
  if (absl::IsFailedPrecondition(text.status())) return std::string();
  return text;
}

absl::StatusOr<std::vector<CarriedOutput>> PlanCarriedOutputs(const ir::Model& model,
                                                              const std::string& output) {
  const std::string normalized = support::NormalizeOutputPath(output);
  const std::string dir = support::ParentDirectory(normalized);
  std::map<std::string, CarriedOutput> by_name;
  for (const std::string& path : model.carried_files) {
    const std::string name = path.substr(path.rfind('/') + 1);
    auto over = model.carried_overrides.find(name);
    by_name[name] = {dir + "/" + name, path,
                     over == model.carried_overrides.end() ? nullptr : &over->second, ""};
  }
  for (const auto& [name, bytes] : model.carried_overrides) {
    if (by_name.count(name) == 0) by_name[name] = {dir + "/" + name, "", &bytes, ""};
  }
  // What ONNX Runtime GenAI reads to drive the decoder; ours describes this
  // export, so it replaces one the checkpoint may carry.
  ASSIGN_OR_RETURN(std::string genai, GenaiConfigFor(model, support::BaseName(normalized)));
  if (!genai.empty()) {
    by_name["genai_config.json"] = {dir + "/genai_config.json", "", nullptr, std::move(genai)};
  }
  std::vector<CarriedOutput> out;
  for (auto& [name, c] : by_name) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      return absl::InvalidArgumentError("carried file '" + name +
                                        "': not a file name to write beside the model");
    }
    if (name == support::BaseName(normalized) ||
        name == support::BaseName(DataFilePath(normalized))) {
      return absl::InvalidArgumentError(
          "-o '" + output + "': the model carries a file of the same name ('" + name +
          "', written beside the model with --onnx-kv-cache); choose another model file name");
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The output rules for each carried file: an existing one is replaced only
// with --force, and none is an input.
absl::Status CheckCarriedOutputs(const std::vector<CarriedOutput>& carried, bool force,
                                 const std::vector<std::string>& inputs) {
  const support::OutputKind kind{"a file to replace without --force",
                                 [](const std::string&) { return false; }};
  for (const CarriedOutput& c : carried) {
    absl::Status s = support::PreflightOutputFile(c.dest, force, kind).status();
    if (s.ok()) s = support::CheckOutputIsNotAnInput(inputs, c.dest, "the carried file");
    if (!s.ok()) return Annotate(s, "--onnx-kv-cache writes the model's carried files beside it");
  }
  return absl::OkStatus();
}

absl::Status WriteCarriedOutputs(const std::vector<CarriedOutput>& carried) {
  for (const CarriedOutput& c : carried) {
    std::string copied;
    const std::string* bytes = c.generated.empty() ? c.bytes : &c.generated;
    if (bytes == nullptr) {
      ASSIGN_OR_RETURN(copied, support::ReadSmallFile(c.source, support::kMaxSideFileBytes));
      bytes = &copied;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(c.dest));
    RETURN_IF_ERROR(file->Write(bytes->data(), bytes->size()));
    RETURN_IF_ERROR(file->Commit());
  }
  return absl::OkStatus();
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
  r.kv_cache = flags.onnx_kv_cache;
  if (flags.onnx_gqa) {
    if (!r.kv_cache || r.options.profile != onnx_export::OnnxProfile::kOrt) {
      return UsageError("--onnx-gqa", "writes the KV-cache decoder's attention as ONNX Runtime's "
                                      "com.microsoft.GroupQueryAttention: pass --onnx-kv-cache "
                                      "--onnx-profile ort too");
    }
    r.group_query_attention = true;
  }
  return r;
}

// onnx_export::OnnxExportOptions::raise_opset: the lowered model written to
// a scratch file and read back with the importer's minimum opset at
// `opset`, so ONNX's version converter rewrites every node whose signature
// changed on the way (formats/onnx/opset_upgrade.h). The model keeps its
// own metadata; its graph and opset are the converted ones.
absl::Status RaiseOpsetThroughOnnx(ir::Model& model, int64_t opset) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "slimpack-opset-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError("cannot create a scratch directory in " +
                               std::filesystem::temp_directory_path().string() + ": " +
                               std::strerror(errno));
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  const std::string path = tmpl + "/model.onnx";
  RETURN_IF_ERROR(onnx_format::ExportOnnx(model, path));
  onnx_format::OnnxImportOptions options;
  options.min_opset = opset;
  ASSIGN_OR_RETURN(ir::Model raised, onnx_format::ImportOnnx(path, options));
  model.graph = std::move(raised.graph);
  model.opset_imports = std::move(raised.opset_imports);
  model.ir_version = std::max(model.ir_version, raised.ir_version);
  for (std::string& w : raised.warnings) model.warnings.push_back(std::move(w));
  return absl::OkStatus();
}

absl::StatusOr<OnnxConvertResult> ConvertToOnnx(const OnnxConvertRequest& request) {
  // Preflight before the import: a bad output fails in milliseconds.
  RETURN_IF_ERROR(CheckOutputs(request, {request.convert.input}));
  ASSIGN_OR_RETURN(ir::Model model, LoadAndConvert(request));
  std::vector<std::string> inputs = model.input_files;
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.push_back(request.convert.input);
  RETURN_IF_ERROR(CheckOutputs(request, inputs));
  std::vector<CarriedOutput> carried;
  if (request.kv_cache) {
    ASSIGN_OR_RETURN(carried, PlanCarriedOutputs(model, request.convert.output));
    RETURN_IF_ERROR(CheckCarriedOutputs(carried, request.convert.force, inputs));
  }

  onnx_export::OnnxExportOptions options = request.options;
  // Decoder graphs compute in f32 over f16/bf16 checkpoint weights.
  options.widen_half_initializers = model.architecture.has_value();
  options.raise_opset = RaiseOpsetThroughOnnx;
  OnnxConvertResult result;
  ASSIGN_OR_RETURN(result.report, onnx_export::PrepareForOnnxRuntime(model, options));
  if (result.report.opset_raised_from > 0 && request.convert.stages.log) {
    request.convert.stages.log(
        "onnx: QDQ needs opset " + std::to_string(onnx_export::kQdqPerAxisOpset) +
        " (per-axis DequantizeLinear); raised the model from opset " +
        std::to_string(result.report.opset_raised_from) + " with ONNX's version converter");
  }
  model.producer_name = "slimpack";
  model.producer_version.clear();

  onnx_format::OnnxExportOptions write;
  write.use_external_data = request.external_data;
  write.float8_e4m3fn.insert(result.report.weights.float8_e4m3fn.begin(),
                             result.report.weights.float8_e4m3fn.end());
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
  RETURN_IF_ERROR(WriteCarriedOutputs(carried));
  for (const CarriedOutput& c : carried) result.carried_written.push_back(c.dest);
  return result;
}

}  // namespace slimpack::converter
