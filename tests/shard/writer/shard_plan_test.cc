// PlanShards against spec.md section 7: group order, layer grouping, groups
// larger than a shard, a tensor larger than the cap, alignment.
#include "formats/shard/writer/shard_plan.h"

#include <map>
#include <set>

#include "formats/shard/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kData = shard::kDataRegionOffset;

std::map<std::string, Placement> ByName(const std::vector<PlanItem>& items,
                                        const ShardPlan& plan) {
  std::map<std::string, Placement> out;
  for (size_t i = 0; i < items.size(); ++i) out[items[i].name] = plan.placements[i];
  return out;
}

TEST(ShardPlanTest, SmallModelFitsOneShardInSpecOrder) {
  // Unlayered groups first by name, then layers ascending; names inside a
  // layer bytewise.
  std::vector<PlanItem> items = {
      {"z.norm", -1, 10},  {"l1.b", 1, 100}, {"l1.a", 1, 64},
      {"a.embed", -1, 130}, {"l0.w", 0, 1},
  };
  auto plan = PlanShards(items, kMiB);
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->shards.size(), 1u);
  auto p = ByName(items, *plan);
  EXPECT_EQ(p["a.embed"].offset, kData);
  EXPECT_EQ(p["z.norm"].offset, kData + 192);      // align_up(130, 64)
  EXPECT_EQ(p["l0.w"].offset, kData + 256);
  EXPECT_EQ(p["l1.a"].offset, kData + 320);
  EXPECT_EQ(p["l1.b"].offset, kData + 384);
  EXPECT_EQ(plan->shards[0].file_size, kData + 384 + 128);  // 100 -> 128
  // Items in write order.
  std::vector<std::string> order;
  for (size_t i : plan->shards[0].items) order.push_back(items[i].name);
  EXPECT_THAT(order, ::testing::ElementsAre("a.embed", "z.norm", "l0.w",
                                            "l1.a", "l1.b"));
}

TEST(ShardPlanTest, LayerGroupMovesWholeToNextShard) {
  const uint64_t cap = 2 * kMiB;
  // Layer 0 fills most of shard 0; layer 1 (two tensors) would fit a shard
  // but not the rest of shard 0, so both go to shard 1 together.
  std::vector<PlanItem> items = {
      {"layers.0.w", 0, kMiB + kMiB / 2},
      {"layers.1.a", 1, kMiB / 4},
      {"layers.1.b", 1, kMiB / 2},
  };
  auto plan = PlanShards(items, cap);
  ASSERT_THAT(plan, IsOk());
  auto p = ByName(items, *plan);
  EXPECT_EQ(p["layers.0.w"].shard, 0u);
  EXPECT_EQ(p["layers.1.a"].shard, 1u);
  EXPECT_EQ(p["layers.1.b"].shard, 1u);
  EXPECT_EQ(p["layers.1.a"].offset, kData);
  for (const auto& s : plan->shards) EXPECT_LE(s.file_size, cap);
}

TEST(ShardPlanTest, GroupLargerThanShardIsSplitTensorByTensor) {
  const uint64_t cap = kMiB;
  std::vector<PlanItem> items;
  for (int i = 0; i < 5; ++i) {
    items.push_back({"layers.3.t" + std::to_string(i), 3, 400 * 1024});
  }
  auto plan = PlanShards(items, cap);
  ASSERT_THAT(plan, IsOk());
  // 16 KiB + 2 x 400 KiB fits 1 MiB, a third does not.
  ASSERT_EQ(plan->shards.size(), 3u);
  EXPECT_EQ(plan->shards[0].items.size(), 2u);
  EXPECT_EQ(plan->shards[1].items.size(), 2u);
  EXPECT_EQ(plan->shards[2].items.size(), 1u);
  for (const auto& s : plan->shards) EXPECT_LE(s.file_size, cap);
}

TEST(ShardPlanTest, TensorLargerThanCapGetsItsOwnShard) {
  const uint64_t cap = kMiB;
  std::vector<PlanItem> items = {
      {"a.small", -1, 1000},
      {"b.huge", -1, 3 * kMiB},
      {"c.small", -1, 1000},
  };
  auto plan = PlanShards(items, cap);
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->shards.size(), 3u);
  auto p = ByName(items, *plan);
  EXPECT_EQ(p["a.small"].shard, 0u);
  EXPECT_EQ(p["b.huge"].shard, 1u);
  EXPECT_EQ(p["b.huge"].offset, kData);
  EXPECT_EQ(p["c.small"].shard, 2u);  // the next tensor starts a new shard
  EXPECT_EQ(plan->shards[1].items.size(), 1u);
  EXPECT_EQ(plan->shards[1].file_size, kData + 3 * kMiB);
}

TEST(ShardPlanTest, HugeTensorInsideLayerGroupIsAlone) {
  std::vector<PlanItem> items = {
      {"layers.0.a", 0, 1000},
      {"layers.0.b", 0, 2 * kMiB},
      {"layers.0.c", 0, 1000},
  };
  auto plan = PlanShards(items, kMiB);
  ASSERT_THAT(plan, IsOk());
  auto p = ByName(items, *plan);
  EXPECT_EQ(p["layers.0.a"].shard, 0u);
  EXPECT_EQ(p["layers.0.b"].shard, 1u);
  EXPECT_EQ(p["layers.0.c"].shard, 2u);
}

TEST(ShardPlanTest, OffsetsAreAlignedPackedAndInsideTheirShard) {
  std::vector<PlanItem> items;
  for (int i = 0; i < 200; ++i) {
    items.push_back({"t" + std::to_string(i), i % 7 == 0 ? -1 : i / 10,
                     static_cast<uint64_t>((i * 7919) % 50000)});
  }
  auto plan = PlanShards(items, kMiB);
  ASSERT_THAT(plan, IsOk());
  for (size_t s = 0; s < plan->shards.size(); ++s) {
    uint64_t end = kData;
    ASSERT_FALSE(plan->shards[s].items.empty());
    for (size_t i : plan->shards[s].items) {
      const Placement& pl = plan->placements[i];
      EXPECT_EQ(pl.shard, s);
      EXPECT_EQ(pl.offset % shard::kTensorAlignment, 0u);
      // No holes: each payload at align_up(previous end, 64).
      EXPECT_EQ(pl.offset, (end + 63) / 64 * 64) << items[i].name;
      end = pl.offset + items[i].nbytes;
    }
    EXPECT_EQ(plan->shards[s].file_size, (end + 63) / 64 * 64);
  }
}

TEST(ShardPlanTest, ZeroByteTensorsAndEmptyModel) {
  auto empty = PlanShards({}, kMiB);
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->shards.empty());
  std::vector<PlanItem> items = {{"a", -1, 0}, {"b", -1, 64}};
  auto plan = PlanShards(items, kMiB);
  ASSERT_THAT(plan, IsOk());
  EXPECT_EQ(plan->placements[0].offset, kData);
  EXPECT_EQ(plan->placements[1].offset, kData);
  EXPECT_EQ(plan->shards[0].file_size, kData + 64);
}

TEST(ShardPlanTest, RejectsCapOutOfRange) {
  EXPECT_THAT(PlanShards({{"a", -1, 1}}, kMiB - 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard size 1048575")));
  EXPECT_THAT(PlanShards({{"a", -1, 1}}, (1ull << 53) + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2^53")));
}

TEST(ShardPlanTest, RejectsTensorBeyondManifestIntegerRange) {
  EXPECT_THAT(PlanShards({{"giant", -1, 1ull << 53}}, kMiB),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'giant'")));
}

ShardPlan Sized(std::vector<uint64_t> sizes) {
  ShardPlan p;
  for (uint64_t s : sizes) p.shards.push_back({s, {}});
  return p;
}

TEST(AssignShardsToPartsTest, ContiguousRunsOfAboutEqualBytes) {
  // 10 equal shards in 3 parts: cut where the bytes before a shard reach
  // 1/3 and 2/3 of the total.
  EXPECT_THAT(AssignShardsToParts(Sized(std::vector<uint64_t>(10, 100)), 3),
              ::testing::ElementsAre(0, 0, 0, 0, 1, 1, 1, 2, 2, 2));
  // One big shard takes a part's share; the cut follows bytes, not counts.
  EXPECT_THAT(AssignShardsToParts(Sized({900, 100, 100, 100}), 2),
              ::testing::ElementsAre(0, 1, 1, 1));
  // Fewer shards than parts: some parts write none.
  EXPECT_THAT(AssignShardsToParts(Sized({100, 100}), 4), ::testing::ElementsAre(0, 2));
  // One part, or no split: everything in part 0.
  EXPECT_THAT(AssignShardsToParts(Sized({5, 6, 7}), 1), ::testing::ElementsAre(0, 0, 0));
  // Sizes near 2^53 with many parts do not overflow.
  const uint64_t big = uint64_t{1} << 53;
  EXPECT_THAT(AssignShardsToParts(Sized({big, big, big, big}), 4096),
              ::testing::ElementsAre(0, 1024, 2048, 3072));
}

}  // namespace
}  // namespace slimpack::shard_writer
