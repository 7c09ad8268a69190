// ImportOnnx: parse, check model-level fields and opsets, upgrade old
// opsets, infer shapes, convert the graph, verify.
#include "formats/onnx/onnx_importer.h"

#include <algorithm>
#include <memory>

#include "ir/verifier.h"
#include "formats/onnx/external_data.h"
#include "formats/onnx/graph_from_proto.h"
#include "formats/onnx/import_context.h"
#include "formats/onnx/model_proto_reader.h"
#include "formats/onnx/opset_upgrade.h"
#include "formats/onnx/shape_inference.h"
#include "formats/onnx/window_attributes.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

absl::Status ReadOpsets(const onnx::ModelProto& proto,
                        const OnnxImportOptions& options, ir::Model* model) {
  for (const auto& opset : proto.opset_import()) {
    std::string domain =
        IsDefaultDomain(opset.domain()) ? std::string() : opset.domain();
    std::string shown = domain.empty() ? "the default ONNX domain"
                                       : "domain '" + domain + "'";
    if (opset.version() <= 0) {
      return absl::InvalidArgumentError("opset_import for " + shown +
                                        " has version " +
                                        std::to_string(opset.version()));
    }
    if (!model->opset_imports.emplace(domain, opset.version()).second) {
      return absl::InvalidArgumentError("opset_import lists " + shown +
                                        " more than once");
    }
  }
  auto it = model->opset_imports.find("");
  if (it == model->opset_imports.end()) {
    return absl::InvalidArgumentError(
        "opset_import has no entry for the default ONNX domain");
  }
  const int64_t version = it->second;
  const std::string range = std::to_string(kMinSupportedOpset) + " to " +
                            std::to_string(kMaxSupportedOpset);
  // Older opsets are upgraded by ImportOnnx (UpgradeTo) before anything
  // reads the graph.
  if (version > kMaxSupportedOpset && !options.allow_newer_opset) {
    return absl::UnimplementedError(
        "default-domain opset " + std::to_string(version) +
        " is not supported; supported opsets are " + range +
        " (re-export the model with an opset in that range)");
  }
  if (version > kMaxSupportedOpset) {
    model->warnings.push_back(
        "default-domain opset " + std::to_string(version) +
        " is newer than the supported " + range +
        "; operators changed after opset " +
        std::to_string(kMaxSupportedOpset) + " may be misread");
  }
  return absl::OkStatus();
}

absl::Status ReadModelFields(const onnx::ModelProto& proto,
                             const OnnxImportOptions& options,
                             ir::Model* model) {
  if (proto.ir_version() <= 0) {
    return absl::InvalidArgumentError(
        "ir_version is missing or " + std::to_string(proto.ir_version()) +
        "; not an ONNX model");
  }
  if (!proto.has_graph()) {
    return absl::InvalidArgumentError("model has no graph");
  }
  if (proto.functions_size() > 0) {
    return absl::UnimplementedError(
        "model-local functions are not supported (model defines " +
        std::to_string(proto.functions_size()) + ", first '" +
        proto.functions(0).name() + "'); inline them before importing");
  }
  RETURN_IF_ERROR(ReadOpsets(proto, options, model));
  model->ir_version = proto.ir_version();
  model->producer_name = proto.producer_name();
  model->producer_version = proto.producer_version();
  model->model_domain = proto.domain();
  model->model_version = proto.model_version();
  model->doc_string = proto.doc_string();
  for (const auto& prop : proto.metadata_props()) {
    if (!model->metadata_props.emplace(prop.key(), prop.value()).second) {
      return absl::InvalidArgumentError("metadata_props key '" + prop.key() +
                                        "' appears more than once");
    }
  }
  if (proto.training_info_size() > 0) {
    model->warnings.push_back(
        "training_info (" + std::to_string(proto.training_info_size()) +
        " entries) is not imported");
  }
  return absl::OkStatus();
}

int64_t UpgradeTarget(const OnnxImportOptions& options) {
  return std::min(std::max(options.min_opset, kMinSupportedOpset), kMaxSupportedOpset);
}

// Brings a model below `target` up to it with ONNX's version converter,
// after the window checks (an adapter may run inference) and before shape
// inference and the graph conversion, which then see only the new opset.
absl::Status UpgradeTo(int64_t target, onnx::ModelProto* proto, ir::Model* model) {
  const int64_t version = model->opset_imports.at("");
  if (version >= target) return absl::OkStatus();
  absl::Status upgraded = UpgradeOpset(proto, target, &model->warnings);
  if (!upgraded.ok()) {
    return absl::Status(upgraded.code(),
                        std::string(upgraded.message()) + " (re-export the model with an opset in " +
                            std::to_string(target) + " to " +
                            std::to_string(kMaxSupportedOpset) + ")");
  }
  model->opset_imports[""] = target;
  model->warnings.push_back("default-domain opset " + std::to_string(version) +
                            " upgraded to " + std::to_string(target) +
                            " with the ONNX version converter (re-export at opset " +
                            std::to_string(target) + " or later to import the model as written)");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Model> ImportOnnx(const std::string& path,
                                     const OnnxImportOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<onnx::ModelProto> proto,
                   ReadModelProto(path));
  ir::Model model;
  model.source_format = ir::SourceFormat::kOnnx;
  model.source_path = path;
  model.input_files.push_back(path);
  RETURN_IF_ERROR(Annotate(ReadModelFields(*proto, options, &model), path));
  // Before inference, which divides by strides unchecked (a zero stride is
  // a SIGFPE, not an exception it could throw); also when inference is off,
  // since the interpreter and passes read the same attributes.
  RETURN_IF_ERROR(Annotate(ValidateWindowAttributes(proto->graph()), path));
  RETURN_IF_ERROR(Annotate(UpgradeTo(UpgradeTarget(options), proto.get(), &model), path));
  // Inference edits value_info in place, so it runs before any tensor view
  // into the proto exists.
  if (options.run_shape_inference) {
    InferShapesInPlace(proto.get(), &model.warnings);
  }
  std::shared_ptr<const onnx::ModelProto> owner(std::move(proto));
  ExternalDataResolver external(path, options.verify_external_checksums);
  ImportContext ctx;
  ctx.model_path = path;
  ctx.proto_owner = owner;
  ctx.external_data = &external;
  ctx.warnings = &model.warnings;
  auto graph = GraphFromProto(owner->graph(), ctx);
  if (!graph.ok()) return Annotate(graph.status(), path);
  model.graph = std::move(*graph);
  for (const std::string& file : external.files()) {
    model.input_files.push_back(file);
  }
  RETURN_IF_ERROR(ir::VerifyModel(model));
  return model;
}

}  // namespace slimpack::onnx_format
