// Imports a Hugging Face safetensors checkpoint (single file or sharded with
// model.safetensors.index.json) into an ir::Model of initializers.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_CHECKPOINT_IMPORTER_H_
#define SLIMPACK_FORMATS_SAFETENSORS_CHECKPOINT_IMPORTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::safetensors {

// `path` is a .safetensors file, an index .json, or a directory holding
// model.safetensors.index.json, model.safetensors, or exactly one other
// *.safetensors file (checked in that order).
//
// The model has source_format kSafetensors, no nodes, and every tensor as a
// graph initializer sorted by name (zero-copy views into the mapped files).
// input_files lists every file read (index, shards, config.json);
// carried_files lists the tokenizer/config side files found beside the
// checkpoint; metadata_props holds the files' __metadata__. config.json, if
// present, fills `architecture` and, for llama/mistral/qwen2, tags weight
// roles and checks shapes; an unknown family or a missing config.json adds a
// warning.
//
// Errors name the file and tensor: NotFound (path, shard or directory
// candidate missing), every ReadSafetensors error of a shard, and
// InvalidArgument for an unsafe shard name, a tensor the index puts in a
// shard that lacks it, a shard tensor missing from the index or listed
// under another shard, a tensor present in two shards, or a bad config.json.
absl::StatusOr<ir::Model> ImportSafetensors(const std::string& path);

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_CHECKPOINT_IMPORTER_H_
