#include "src/cluster/migration_plan.h"

#include <gtest/gtest.h>

#include "src/cluster/cluster_test_util.h"

namespace shoal::cluster {
namespace {

using testing::Nodes;

TEST(MigrationPlanTest, ToBeginEditStartsEverythingWithFreshIds) {
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1, 2}), .bucket_count = 4});
  MigrationPlan plan;
  plan.moves.push_back({.bucket = BucketId(0),
                        .source = Nodes({1}),
                        .destination = Nodes({2}),
                        .mode = TransitionMode::kSwitchThenCopy,
                        .reason = MoveReason::kBalance,
                        .bytes = 10});
  plan.splits.push_back({.bucket = BucketId(1), .at = (uint64_t{1} << 62) + 5});
  IdSource ids{.next_move = MoveId(40), .next_bucket = BucketId(0)};
  auto edit = ToBeginEdit(map, plan, &ids);
  ASSERT_TRUE(edit.ok());
  EXPECT_EQ(ids.next_move, MoveId(41));
  EXPECT_EQ(ids.next_bucket, BucketId(5));  // raised to the map's next free id, then used
  auto next = Apply(map, *edit);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->Find(BucketId(0))->transition->move, MoveId(40));
  EXPECT_EQ(next->Find(BucketId(0))->transition->mode, TransitionMode::kSwitchThenCopy);
  EXPECT_EQ(next->Find(BucketId(4))->range.begin(), (uint64_t{1} << 62) + 5);
}

TEST(MigrationPlanTest, DebugStrings) {
  MigrationPlan plan;
  EXPECT_TRUE(plan.empty());
  plan.moves.push_back({.bucket = BucketId(3),
                        .source = Nodes({1}),
                        .destination = Nodes({2}),
                        .mode = TransitionMode::kCopyThenSwitch,
                        .reason = MoveReason::kDrain,
                        .bytes = 7});
  plan.merges.push_back({.left = BucketId(5), .right = BucketId(6)});
  EXPECT_FALSE(plan.empty());
  EXPECT_EQ(plan.DebugString(),
            "MigrationPlan{move b3 [n1]->[n2] copy-then-switch (drain, 7 bytes); merge b5+b6}");
}

TEST(MigrationPlanTest, LoadReportDefaultsToZero) {
  LoadReport load;
  load.buckets[BucketId(1)] = {.bytes = 9, .hits_ema = 2.5, .split_point = std::nullopt};
  load.node_utilization[NodeId(1)] = 0.75;
  EXPECT_EQ(load.BytesOf(BucketId(1)), 9u);
  EXPECT_EQ(load.BytesOf(BucketId(2)), 0u);
  EXPECT_EQ(load.HitsOf(BucketId(1)), 2.5);
  EXPECT_EQ(load.UtilizationOf(NodeId(1)), 0.75);
  EXPECT_EQ(load.UtilizationOf(NodeId(2)), 0.0);
}

// One replica at a time toward a target: replace in place, add at the end, or reorder.
TEST(MigrationPlanTest, OneReplicaStepChangesOneReplica) {
  using testing::Nodes;
  EXPECT_EQ(OneReplicaStep(Nodes({1}), Nodes({2})), Nodes({2}));
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2, 3}), Nodes({1, 2, 3})), std::nullopt);
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2, 3}), Nodes({1, 4, 5})), Nodes({1, 4, 3}));
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2, 3}), Nodes({4, 2, 3})), Nodes({4, 2, 3}));
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2}), Nodes({1, 2, 3})), Nodes({1, 2, 3}));
  EXPECT_EQ(OneReplicaStep(Nodes({1}), Nodes({2, 3, 4})), Nodes({1, 2}));
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2, 3}), Nodes({2, 1, 3})), Nodes({2, 1, 3}));
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2, 3}), Nodes({1, 2})), std::nullopt);
  EXPECT_EQ(OneReplicaStep(Nodes({1, 2}), {}), std::nullopt);
  constexpr auto kSwitch = TransitionMode::kSwitchThenCopy;
  constexpr auto kCopy = TransitionMode::kCopyThenSwitch;
  EXPECT_EQ(ModeFor(Nodes({1}), Nodes({2}), kSwitch), kSwitch);
  EXPECT_EQ(ModeFor(Nodes({1, 2}), Nodes({1, 3}), kSwitch), kSwitch);
  EXPECT_EQ(ModeFor(Nodes({1, 2}), Nodes({3, 2}), kSwitch), kCopy);
  EXPECT_EQ(ModeFor(Nodes({1, 2}), Nodes({3, 2}), kCopy), kCopy);
}

}  // namespace
}  // namespace shoal::cluster
