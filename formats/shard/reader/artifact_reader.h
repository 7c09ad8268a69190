// Reads a slimpack artifact directory back into the graph IR: the model
// object of the manifest (spec.md section 6) becomes the ir::Model, every
// tensor a zero-copy view into its mapped shard, quantized tensors keep
// their layouts. What `slimpack eval` / `run` need to run an artifact.
#ifndef SLIMPACK_FORMATS_SHARD_READER_ARTIFACT_READER_H_
#define SLIMPACK_FORMATS_SHARD_READER_ARTIFACT_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::shard_reader {

// Opens `dir` with the standalone loader (every manifest check of spec.md
// section 9) and rebuilds the model:
//  - ONNX-origin: opsets, producer fields, metadata and the graph with its
//    nodes, attributes (tensor attributes included) and subgraphs;
//  - safetensors-origin: `architecture` (config_json is the carried
//    config.json, if any) and every tensor as an initializer of the main
//    graph, in manifest order (no nodes: hf::BuildDecoderGraph adds them).
// Tensors keep dtype, dims, role, layer, provenance ("source") and quant
// layout (the algorithm from the optional "quant" record); their bytes view
// the shard mappings, which stay alive as long as any tensor of the model
// (or a copy of its TensorData). source_path is `dir`, input_files the
// manifest and shards, carried_files the carried files (dir/name), so the
// model can be converted again and its tokenizer found. The result passes
// ir::VerifyModel. A quant record that disagrees with its tensor's layout
// (bits, group_size, symmetric) only adds a warning: the layout decides.
//
// Errors: the loader's (NotFound for a missing directory or manifest,
// InvalidArgument / OutOfRange / Unimplemented / DataLoss for a bad
// manifest or shard), each prefixed with `dir`; InvalidArgument naming the
// tensor for an unknown role name or a bad quant record.
absl::StatusOr<ir::Model> ReadArtifactModel(const std::string& dir);

// True if `path` is a directory with a manifest.json (an artifact, or a
// broken one ReadArtifactModel will explain).
bool LooksLikeArtifact(const std::string& path);

}  // namespace slimpack::shard_reader

#endif  // SLIMPACK_FORMATS_SHARD_READER_ARTIFACT_READER_H_
