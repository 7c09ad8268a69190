// The manifest's "model" object (spec.md section 6): the ONNX graph with its
// nodes, attributes and subgraphs, or a Hugging Face architecture.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_MODEL_JSON_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_MODEL_JSON_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"

namespace slimpack::shard_writer {

// Builds {"source_format", "onnx" | "architecture"}. Tensor-valued
// attributes refer to their artifact tensors by AttributeTensorName.
// Applies the loader's rules first, so the writer (which calls this before
// writing anything) never produces a manifest its loader rejects:
// InvalidArgument naming the graph, value and dim for a static dim of a
// graph input, output or value_info (subgraphs included) outside
// [0, 2^53] (shard::IsManifestUint), naming the field for an architecture
// count outside that range or a non-finite rope_theta / norm_eps (JSON
// cannot hold them). String validity (UTF-8) is checked later over the
// whole manifest.
absl::StatusOr<nlohmann::json> ModelJson(const ir::Model& model);

// Hex of arbitrary bytes ("value_hex" of non-UTF-8 string attributes).
std::string HexBytes(const std::string& bytes);
// Byte offset of the first ill-formed UTF-8 sequence (overlong forms,
// surrogates, above U+10FFFF), or -1 if `s` is valid.
long FindInvalidUtf8(const std::string& s);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_MODEL_JSON_H_
