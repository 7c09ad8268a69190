#include "formats/safetensors/shard_index.h"

#include <set>

#include "support/strict_json.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

using nlohmann::json;

constexpr int kMaxIndexDepth = 16;

}  // namespace

absl::Status ValidateShardFileName(std::string_view name) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (name.empty()) return absl::InvalidArgumentError("empty shard file name");
  if (name == "." || name.find("..") != std::string_view::npos) {
    return absl::InvalidArgumentError("shard file name " + quoted +
                                      " contains '..'");
  }
  if (name.find('/') != std::string_view::npos ||
      name.find('\\') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        "shard file name " + quoted +
        " is not a plain file name in the index's directory");
  }
  if (name.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("shard file name " + quoted +
                                      " contains a NUL byte");
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardIndex> ParseShardIndex(std::string_view text,
                                           const std::string& path) {
  ASSIGN_OR_RETURN(json root, support::ParseStrictJson(text, path, kMaxIndexDepth));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(path + ": must be a JSON object, found " +
                                      support::DescribeJson(root));
  }
  ShardIndex index;
  auto meta = root.find("metadata");
  if (meta != root.end() && meta->is_object()) {
    auto total = meta->find("total_size");
    if (total != meta->end()) {
      if (total->is_number_unsigned()) {
        index.total_size = total->get<uint64_t>();
      } else {
        return absl::InvalidArgumentError(
            path +
            ": metadata.total_size must be a non-negative integer, "
            "found " +
            support::DescribeJson(*total));
      }
    }
  }
  auto map = root.find("weight_map");
  if (map == root.end()) {
    return absl::InvalidArgumentError(path + ": has no 'weight_map'");
  }
  if (!map->is_object()) {
    return absl::InvalidArgumentError(path +
                                      ": weight_map must be an object, "
                                      "found " +
                                      support::DescribeJson(*map));
  }
  std::set<std::string> shards;
  for (auto it = map->begin(); it != map->end(); ++it) {
    const std::string ctx = path + ": weight_map tensor '" + it.key() + "'";
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          ctx + " must map to a file name, found " + support::DescribeJson(*it));
    }
    const std::string& shard = it->get_ref<const std::string&>();
    absl::Status s = ValidateShardFileName(shard);
    if (!s.ok()) return Annotate(s, ctx);
    index.weight_map[it.key()] = shard;
    shards.insert(shard);
  }
  if (index.weight_map.empty()) {
    return absl::InvalidArgumentError(path + ": weight_map is empty");
  }
  index.shards.assign(shards.begin(), shards.end());
  return index;
}

}  // namespace slimpack::safetensors
