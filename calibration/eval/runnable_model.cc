// Dispatch on what the importer (or the artifact reader) found: checkpoints
// have no nodes, so they need a graph before they can run.
#include "calibration/eval/runnable_model.h"

#include "converter/import.h"
#include "converter/llama/llama_graph_builder.h"
#include "formats/shard/reader/artifact_reader.h"
#include "support/status_macros.h"

namespace slimpack::eval {

absl::StatusOr<ir::Model> LoadRunnableModel(const std::string& path) {
  ir::Model model;
  if (shard_reader::LooksLikeArtifact(path)) {
    ASSIGN_OR_RETURN(model, shard_reader::ReadArtifactModel(path));
  } else {
    ASSIGN_OR_RETURN(model, converter::ImportModel(path));
  }
  if (model.source_format == ir::SourceFormat::kSafetensors) {
    return llama::BuildDecoderGraph(model);
  }
  return model;
}

}  // namespace slimpack::eval
