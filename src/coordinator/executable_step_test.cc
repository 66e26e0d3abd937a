#include "src/coordinator/executable_step.h"

#include <gtest/gtest.h>

#include <set>

#include "src/cluster/cluster_test_util.h"
#include "src/cluster/shard_map_edit.h"

namespace shoal::coordinator {
namespace {

using cluster::MoveIntent;
using cluster::ShardMap;

MoveIntent Move(std::vector<NodeId> source, std::vector<NodeId> destination) {
  return {.bucket = BucketId(0),
          .source = std::move(source),
          .destination = std::move(destination),
          .bytes = 100};
}

const NodeId kN1(1), kN2(2), kN3(3), kN4(4);

TEST(ExecutableStepTest, APrimarysCopyReplacedStartsAsAHandoffToABackupThatStaysAndIsUp) {
  const ShardMap map = *ShardMap::Initial(
      {.nodes = cluster::testing::Nodes({1, 2, 3, 4}), .bucket_count = 1, .replication_factor = 3});
  std::set<NodeId> down;
  const auto is_down = [&](NodeId node) { return down.contains(node); };
  const MoveIntent replaces_primary = Move({kN1, kN2, kN3}, {kN4, kN2, kN3});

  auto step = ExecutableStep(map, replaces_primary, is_down, PrimariesLed(map));
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->destination, (std::vector<NodeId>{kN2, kN1, kN3}));
  EXPECT_EQ(step->source, replaces_primary.source);
  EXPECT_EQ(step->bytes, 0u) << "a handoff moves no data";

  down = {kN2};
  step = ExecutableStep(map, replaces_primary, is_down, PrimariesLed(map));
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->destination, (std::vector<NodeId>{kN3, kN1, kN2}));

  down = {kN2, kN3};
  EXPECT_FALSE(ExecutableStep(map, replaces_primary, is_down, PrimariesLed(map)).has_value());

  // A backup that leaves the target does not take the primary.
  down = {};
  step = ExecutableStep(map, Move({kN1, kN2, kN3}, {kN4, kN1, kN3}), is_down, PrimariesLed(map));
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->destination.front(), kN3);
}

// Two leaving nodes hold every copy of a bucket: neither takes the primary from the other
// (they would hand it back and forth); the primary stays and a leaving backup's copy is replaced
// by the incoming one first, which then takes the primary.
TEST(ExecutableStepTest, NoLeavingNodeTakesThePrimaryABackupIsReplacedFirst) {
  const ShardMap initial = *ShardMap::Initial(
      {.nodes = cluster::testing::Nodes({1, 2, 3, 4}), .bucket_count = 1, .replication_factor = 2});
  const ShardMap map =
      *cluster::Apply(initial, cluster::ShardMapEdit(initial.epoch())
                                   .SetNodeState(kN1, cluster::NodeState::kLeaving)
                                   .SetNodeState(kN2, cluster::NodeState::kLeaving));
  const auto is_down = [](NodeId) { return false; };
  // The planner replaced both copies, or kept the leaving backup's for now.
  for (const MoveIntent& planned : {Move({kN1, kN2}, {kN3, kN4}), Move({kN1, kN2}, {kN3, kN2})}) {
    auto step = ExecutableStep(map, planned, is_down, PrimariesLed(map));
    ASSERT_TRUE(step.has_value()) << planned.DebugString();
    EXPECT_EQ(step->destination, (std::vector<NodeId>{kN1, kN3})) << planned.DebugString();
    EXPECT_EQ(step->bytes, planned.bytes) << "a copy is built";
  }
  // Then the incoming copy, which stays, takes the primary.
  auto step = ExecutableStep(map, Move({kN1, kN3}, {kN4, kN3}), is_down, PrimariesLed(map));
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->destination, (std::vector<NodeId>{kN3, kN1}));
  EXPECT_EQ(step->bytes, 0u);
}

TEST(ExecutableStepTest, OtherMovesAreCarriedOutAsPlanned) {
  const auto is_down = [](NodeId) { return false; };
  const ShardMap replicated = *ShardMap::Initial(
      {.nodes = cluster::testing::Nodes({1, 2, 3, 4}), .bucket_count = 1, .replication_factor = 3});
  for (const MoveIntent& move : {Move({kN1, kN2, kN3}, {kN1, kN2, kN4}),  // a backup's copy
                                 Move({kN1, kN2, kN3}, {kN2, kN1, kN3}),  // a handoff
                                 Move({kN1, kN2}, {kN1, kN2, kN4})}) {    // a repair
    EXPECT_EQ(ExecutableStep(replicated, move, is_down, PrimariesLed(replicated)), move)
        << move.DebugString();
  }
  const ShardMap single =
      *ShardMap::Initial({.nodes = cluster::testing::Nodes({1, 2}), .bucket_count = 1});
  const MoveIntent move = Move({kN1}, {kN2});
  EXPECT_EQ(ExecutableStep(single, move, is_down, PrimariesLed(single)), move);
}

// The backup that takes the primary is the one that leads the fewest, counting the steps taken
// before it: a node that leaves hands its primaries to each of its heirs in turn.
TEST(ExecutableStepTest, TheHeirIsTheBackupThatLeadsTheFewest) {
  const auto is_down = [](NodeId) { return false; };
  const ShardMap map = *ShardMap::Initial(
      {.nodes = cluster::testing::Nodes({1, 2, 3, 4}), .bucket_count = 1, .replication_factor = 3});
  LedPrimaries led = {{kN1, 4}, {kN2, 3}, {kN3, 2}};
  const MoveIntent replaces_primary = Move({kN1, kN2, kN3}, {kN4, kN2, kN3});
  std::vector<NodeId> heirs;
  for (int i = 0; i < 3; ++i) {
    auto step = ExecutableStep(map, replaces_primary, is_down, led);
    ASSERT_TRUE(step.has_value());
    heirs.push_back(step->destination.front());
    TakeStep(*step, &led);
  }
  // n3 leads 2, then 3 (n2 first among equals), then n2 leads 4 and n3 takes it.
  EXPECT_EQ(heirs, (std::vector<NodeId>{kN3, kN2, kN3}));
  EXPECT_EQ(led, (LedPrimaries{{kN1, 1}, {kN2, 4}, {kN3, 4}}));
  // A step that keeps the primary counts nothing.
  TakeStep(Move({kN1, kN2, kN3}, {kN1, kN2, kN4}), &led);
  EXPECT_EQ(led, (LedPrimaries{{kN1, 1}, {kN2, 4}, {kN3, 4}}));
  EXPECT_EQ(PrimariesLed(map), (LedPrimaries{{map.buckets().front().replicas.front(), 1}}));
}

}  // namespace
}  // namespace shoal::coordinator
