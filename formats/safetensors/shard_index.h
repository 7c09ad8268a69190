// Parser for Hugging Face sharded-checkpoint indexes
// (model.safetensors.index.json: {"metadata": {...}, "weight_map": {...}}).
#ifndef SLIMPACK_FORMATS_SAFETENSORS_SHARD_INDEX_H_
#define SLIMPACK_FORMATS_SAFETENSORS_SHARD_INDEX_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack::safetensors {

struct ShardIndex {
  std::map<std::string, std::string> weight_map;  // tensor -> shard file
  std::vector<std::string> shards;                // sorted, unique
  std::optional<uint64_t> total_size;             // metadata.total_size
};

// A shard must be a plain file name in the index's directory (the weight_map
// traversal of transformers#47176): InvalidArgument if it is empty, "." or
// "..", absolute, contains '/', '\\', NUL or "..".
absl::Status ValidateShardFileName(std::string_view name);

// Parses index JSON text (strict: no duplicate keys). `path` prefixes
// errors. InvalidArgument if it is not an object, weight_map is missing or
// not an object of strings, a shard name fails ValidateShardFileName (naming
// the tensor), or metadata.total_size is present but not a non-negative
// integer. Unknown top-level fields are ignored.
absl::StatusOr<ShardIndex> ParseShardIndex(std::string_view text,
                                           const std::string& path);

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_SHARD_INDEX_H_
