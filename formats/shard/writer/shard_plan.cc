#include "formats/shard/writer/shard_plan.h"

#include <algorithm>
#include <map>

#include "formats/shard/format.h"
#include "support/checked_math.h"

namespace slimpack::shard_writer {
namespace {

using shard::kDataRegionOffset;
using shard::kMaxSafeInteger;
using shard::kTensorAlignment;

// Groups in spec order: unlayered tensors (one group each) by name, then
// layer groups by ascending layer; members by bytewise name order.
std::vector<std::vector<size_t>> OrderedGroups(
    const std::vector<PlanItem>& items) {
  std::vector<size_t> unlayered;
  std::map<int64_t, std::vector<size_t>> layers;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].layer >= 0) {
      layers[items[i].layer].push_back(i);
    } else {
      unlayered.push_back(i);
    }
  }
  auto by_name = [&items](size_t a, size_t b) {
    return items[a].name < items[b].name;
  };
  std::vector<std::vector<size_t>> groups;
  std::sort(unlayered.begin(), unlayered.end(), by_name);
  for (size_t i : unlayered) groups.push_back({i});
  for (auto& [layer, members] : layers) {
    std::sort(members.begin(), members.end(), by_name);
    groups.push_back(std::move(members));
  }
  return groups;
}

// Every quantity below stays under 2^53 + 2^53 (checked by the caller's
// limits), so plain uint64 arithmetic cannot wrap.
uint64_t AlignUp(uint64_t x) {
  return (x + kTensorAlignment - 1) & ~(kTensorAlignment - 1);
}

class Packer {
 public:
  Packer(const std::vector<PlanItem>& items, uint64_t cap, ShardPlan& plan)
      : items_(items), cap_(cap), plan_(plan) {}

  // End of the current shard after placing `group` from `end`.
  uint64_t EndAfter(const std::vector<size_t>& group, uint64_t end) const {
    for (size_t i : group) end = AlignUp(end) + items_[i].nbytes;
    return end;
  }
  bool Fits(uint64_t end) const { return AlignUp(end) <= cap_; }

  void PlaceGroup(const std::vector<size_t>& group) {
    if (Fits(EndAfter(group, end_))) {
      for (size_t i : group) Place(i);
      return;
    }
    if (!Empty()) Close();
    if (Fits(EndAfter(group, end_))) {
      for (size_t i : group) Place(i);
      return;
    }
    // Larger than a shard: tensor by tensor.
    for (size_t i : group) {
      if (!Fits(EndAfter({i}, end_)) && !Empty()) Close();
      Place(i);
      // A tensor that alone exceeds the cap keeps its shard to itself.
      if (!Fits(end_)) Close();
    }
  }

  void Finish() {
    if (!Empty()) Close();
  }

 private:
  bool Empty() const { return current_.empty(); }

  void Place(size_t i) {
    uint64_t offset = AlignUp(end_);
    plan_.placements[i] = {static_cast<uint32_t>(plan_.shards.size()),
                           offset};
    end_ = offset + items_[i].nbytes;
    current_.push_back(i);
  }

  void Close() {
    plan_.shards.push_back({AlignUp(end_), std::move(current_)});
    current_.clear();
    end_ = kDataRegionOffset;
  }

  const std::vector<PlanItem>& items_;
  const uint64_t cap_;
  ShardPlan& plan_;
  uint64_t end_ = kDataRegionOffset;
  std::vector<size_t> current_;
};

}  // namespace

absl::StatusOr<ShardPlan> PlanShards(const std::vector<PlanItem>& items,
                                     uint64_t cap) {
  if (cap < kMinShardSize || cap > kMaxSafeInteger) {
    return absl::InvalidArgumentError(
        "shard size " + std::to_string(cap) + " is out of range: expected " +
        std::to_string(kMinShardSize) + " (1 MiB) to 2^53 bytes");
  }
  // A tensor of nbytes fits a shard of its own whose size must itself stay
  // a manifest integer: data offset + nbytes + padding <= 2^53.
  const uint64_t max_tensor = kMaxSafeInteger - kDataRegionOffset -
                              kTensorAlignment;
  for (const PlanItem& item : items) {
    if (item.nbytes > max_tensor) {
      return absl::InvalidArgumentError(
          "tensor '" + item.name + "': " + std::to_string(item.nbytes) +
          " bytes exceed the manifest's 2^53 limit for shard sizes");
    }
  }
  ShardPlan plan;
  plan.placements.resize(items.size());
  Packer packer(items, cap, plan);
  for (const auto& group : OrderedGroups(items)) packer.PlaceGroup(group);
  packer.Finish();
  return plan;
}

std::vector<uint32_t> AssignShardsToParts(const ShardPlan& plan, uint32_t parts) {
  std::vector<uint32_t> owner(plan.shards.size(), 0);
  if (parts <= 1) return owner;
  unsigned __int128 total = 0;
  for (const PlannedShard& s : plan.shards) total += s.file_size;
  unsigned __int128 before = 0;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    // The part whose share [k/parts, (k+1)/parts) of the bytes holds the
    // shard's first byte.
    owner[i] = static_cast<uint32_t>(total == 0 ? 0 : before * parts / total);
    before += plan.shards[i].file_size;
  }
  return owner;
}

}  // namespace slimpack::shard_writer
