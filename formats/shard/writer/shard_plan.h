// Layer-grouped shard planning (spec.md section 7): decides the shard and
// offset of every tensor from names, layers, byte sizes and the cap only, so
// the plan (and every byte of the artifact) is independent of threads.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_SHARD_PLAN_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_SHARD_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

// spec.md section 7: writers reject a cap below 1 MiB.
inline constexpr uint64_t kMinShardSize = 1ull << 20;
inline constexpr uint64_t kDefaultShardSize = 256ull << 20;

struct PlanItem {
  std::string name;
  int64_t layer = -1;  // < 0: no layer (a group of its own)
  uint64_t nbytes = 0;
};

struct Placement {
  uint32_t shard = 0;
  uint64_t offset = 0;  // absolute offset in the shard file
};

struct PlannedShard {
  uint64_t file_size = 0;
  // Indices into the planned items, in offset order (the write order).
  std::vector<size_t> items;
};

struct ShardPlan {
  std::vector<Placement> placements;  // parallel to the input items
  std::vector<PlannedShard> shards;
};

// Plans `items` (names must be unique; the caller checks) under `cap` bytes
// per shard file. InvalidArgument if `cap` is below kMinShardSize or above
// 2^53, or if an offset or shard size would exceed 2^53 (the manifest's
// integer range), naming the tensor.
absl::StatusOr<ShardPlan> PlanShards(const std::vector<PlanItem>& items,
                                     uint64_t cap);

// For a conversion split into `parts` (`convert --part I/N`): the part
// (0-based) that writes each shard. Contiguous runs of shards, cut where
// the bytes before a shard cross k/parts of the total, so layer groups stay
// together and parts get about equal bytes; a part may get none. Depends on
// the plan only, so every part computes the same answer.
std::vector<uint32_t> AssignShardsToParts(const ShardPlan& plan, uint32_t parts);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_SHARD_PLAN_H_
