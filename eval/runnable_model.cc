// Dispatch on what the importer (or the artifact reader) found: checkpoints
// have no nodes, so they need a graph before they can run.
#include "eval/runnable_model.h"

#include "formats/import.h"
#include "hf/llama_graph_builder.h"
#include "formats/shard/reader/artifact_reader.h"
#include "support/status_macros.h"

namespace slimpack::eval {

absl::StatusOr<ir::Model> LoadRunnableModel(const std::string& path) {
  ir::Model model;
  if (shard_reader::LooksLikeArtifact(path)) {
    ASSIGN_OR_RETURN(model, shard_reader::ReadArtifactModel(path));
  } else {
    ASSIGN_OR_RETURN(model, formats::ImportModel(path));
  }
  if (ir::IsDecoderCheckpoint(model.source_format)) {
    return hf::BuildDecoderGraph(model);
  }
  return model;
}

}  // namespace slimpack::eval
