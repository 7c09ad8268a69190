// Dispatch on what the importer found: checkpoints have no nodes, so they
// need a graph before they can run.
#include "calibration/eval/runnable_model.h"

#include <sys/stat.h>

#include "converter/import.h"
#include "converter/llama/llama_graph_builder.h"
#include "support/status_macros.h"

namespace slimpack::eval {

absl::StatusOr<ir::Model> LoadRunnableModel(const std::string& path) {
  struct stat st;
  if (stat((path + "/manifest.json").c_str(), &st) == 0) {
    return absl::UnimplementedError(
        path + ": running a slimpack artifact is not supported yet; pass the HF "
               "checkpoint or ONNX model it was converted from");
  }
  ASSIGN_OR_RETURN(ir::Model model, converter::ImportModel(path));
  if (model.source_format == ir::SourceFormat::kSafetensors) {
    return llama::BuildDecoderGraph(model);
  }
  return model;
}

}  // namespace slimpack::eval
