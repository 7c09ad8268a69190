// Reading the manifest's "model" section: ONNX model fields and graphs
// (with every name reference resolved) or Hugging Face architecture
// metadata. Internal to the loader.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_MODEL_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_MODEL_H_

#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"

namespace slimpack::loader::internal {

// Parses top["model"] into m->source_format / m->onnx / m->architecture.
// Needs m->tensors (graph references are resolved against it).
// InvalidArgument for a reference to a missing tensor or an undefined value,
// or for graph nodes out of topological order (manifest_graph.h).
Status ParseModel(const Fields& top, Manifest* m);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_MODEL_H_
