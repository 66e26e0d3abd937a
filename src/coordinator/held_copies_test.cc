#include "src/coordinator/held_copies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "src/cluster/shard_map_edit.h"
#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator {
namespace {

constexpr transport::Micros kGrace = 10'000'000;
const NodeId kN1{1}, kN2{2}, kN3{3}, kN4{4};

// Three copies of each of 4 buckets on n1..n3; n4, a fourth node, holds none.
cluster::ShardMap WholeMap() {
  auto map = cluster::ShardMap::Initial(
      {.nodes = {kN1, kN2, kN3}, .bucket_count = 4, .replication_factor = 3});
  EXPECT_TRUE(map.ok()) << map.status();
  auto added = cluster::Apply(*map, cluster::ShardMapEdit(map->epoch()).AddNode(kN4));
  EXPECT_TRUE(added.ok()) << added.status();
  return *added;
}

// `map` with the move of `bucket` carried to its end.
cluster::ShardMap FinishMove(cluster::ShardMap map, BucketId bucket, MoveId move) {
  while (map.Find(bucket)->transition.has_value()) {
    const cluster::BucketTransition& t = *map.Find(bucket)->transition;
    const std::optional<cluster::TransitionStage> next = cluster::NextStage(t.stage, t.mode);
    EXPECT_TRUE(next.has_value());
    cluster::ShardMapEdit edit(map.epoch());
    if (*next == cluster::TransitionStage::kCommitted) {
      edit.CommitTransition(bucket, move);
    } else if (*next == cluster::TransitionStage::kDone) {
      edit.FinishTransition(bucket, move);
    } else {
      edit.AdvanceStage(bucket, move, *next);
    }
    auto applied = cluster::Apply(map, edit);
    EXPECT_TRUE(applied.ok()) << applied.status();
    map = *std::move(applied);
  }
  return map;
}

transport::HeldCopy CopyOf(const cluster::ShardMap& map, BucketId bucket) {
  return transport::HeldCopy{.bucket = bucket,
                             .range = internal::ToPointRange(map.Find(bucket)->range),
                             .position = {Term(1), 5}};
}

TEST(HeldCopiesTest, ACopyOfAWholeBucketIsStaleOnlyAfterTheGrace) {
  const cluster::ShardMap map = WholeMap();
  ASSERT_FALSE(map.Find(BucketId(0))->HasReplica(kN4));
  HeldCopies held(kGrace);
  held.Record(kN4, {CopyOf(map, BucketId(0))});
  EXPECT_EQ(held.Holders(map).at(BucketId(0)), std::vector<NodeId>{kN4});
  EXPECT_TRUE(held.TakeStale(map, {}, 0).empty());
  EXPECT_TRUE(held.TakeStale(map, {}, kGrace - 1).empty());
  // A later report naming the same copy keeps its clock.
  held.Record(kN4, {CopyOf(map, BucketId(0))});
  const auto stale = held.TakeStale(map, {}, kGrace);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].node, kN4);
  EXPECT_EQ(stale[0].bucket, BucketId(0));
  EXPECT_EQ(stale[0].range, internal::ToPointRange(map.Find(BucketId(0))->range));
  held.Dropped(kN4, BucketId(0));
  EXPECT_TRUE(held.TakeStale(map, {}, 2 * kGrace).empty());
  EXPECT_TRUE(held.Holders(map).empty());
}

// Data without a stored position (an aborted ingest's, say) cannot resume: no repair prefers its
// node, and it is dropped as any copy once its bucket has been whole for the grace.
TEST(HeldCopiesTest, ACopyWithoutAPositionIsNoHolderButIsDroppedOnceStale) {
  const cluster::ShardMap map = WholeMap();
  HeldCopies held(kGrace);
  transport::HeldCopy copy = CopyOf(map, BucketId(2));
  copy.position = {};
  held.Record(kN4, {copy, CopyOf(map, BucketId(3))});
  EXPECT_EQ(held.Holders(map).count(BucketId(2)), 0u);
  EXPECT_EQ(held.Holders(map).at(BucketId(3)), std::vector<NodeId>{kN4});
  EXPECT_TRUE(held.TakeStale(map, {}, 0).empty());
  const auto stale = held.TakeStale(map, {}, kGrace);
  ASSERT_EQ(stale.size(), 2u);
  EXPECT_TRUE(std::any_of(stale.begin(), stale.end(), [](const HeldCopies::Stale& s) {
    return s.bucket == BucketId(2) && s.node == kN4 && s.position.rseq == 0;
  }));
}

// Never while the bucket is short of copies, has a replica down or moves: the clock starts again
// once it is whole.
TEST(HeldCopiesTest, ACopyIsNeverStaleWhileItsBucketIsShortDownOrMoving) {
  const cluster::ShardMap whole = WholeMap();
  const BucketId bucket(1);
  const cluster::BucketPlacement& placement = *whole.Find(bucket);
  const NodeId backup = placement.replicas.back();
  const cluster::ShardMap shorter =
      *cluster::Apply(whole, cluster::ShardMapEdit(whole.epoch()).RemoveReplica(bucket, backup));
  HeldCopies held(kGrace);
  held.Record(backup, {CopyOf(shorter, bucket)});
  EXPECT_EQ(held.Holders(shorter).at(bucket), std::vector<NodeId>{backup});
  EXPECT_TRUE(held.TakeStale(shorter, {}, 0).empty());
  EXPECT_TRUE(held.TakeStale(shorter, {}, 5 * kGrace).empty());

  // Whole again with a copy on n4; then a replica is down for a moment.
  std::vector<NodeId> repaired = shorter.Find(bucket)->replicas;
  repaired.push_back(kN4);
  cluster::ShardMap again = *cluster::Apply(
      shorter,
      cluster::ShardMapEdit(shorter.epoch())
          .BeginTransition(bucket, MoveId(7), repaired, cluster::TransitionMode::kCopyThenSwitch));
  EXPECT_TRUE(held.TakeStale(again, {}, 6 * kGrace).empty()) << "moving";
  again = FinishMove(again, bucket, MoveId(7));
  ASSERT_EQ(again.Find(bucket)->replicas.size(), 3u);
  EXPECT_TRUE(held.TakeStale(again, {}, 7 * kGrace).empty());  // whole from here on
  EXPECT_TRUE(held.TakeStale(again, {kN4}, 7 * kGrace + 1).empty()) << "a replica is down";
  EXPECT_TRUE(held.TakeStale(again, {}, 8 * kGrace).empty()) << "whole again from 8 * kGrace";
  EXPECT_TRUE(held.TakeStale(again, {backup}, 9 * kGrace).empty()) << "its own node is down";
  EXPECT_EQ(held.TakeStale(again, {}, 9 * kGrace).size(), 1u);
}

// A copy whose range is not the bucket's in the map (a split or merge since), or whose node is
// a replica again, is neither preferred nor dropped.
TEST(HeldCopiesTest, OnlyACopyOfTheBucketsRangeOutsideItsReplicasCounts) {
  const cluster::ShardMap map = WholeMap();
  HeldCopies held(0);
  transport::HeldCopy other = CopyOf(map, BucketId(2));
  other.range = internal::ToPointRange(map.Find(BucketId(3))->range);
  const NodeId replica = map.Find(BucketId(0))->replicas.front();
  held.Record(kN4, {other});
  held.Record(replica, {CopyOf(map, BucketId(0))});
  EXPECT_TRUE(held.Holders(map).empty());
  EXPECT_TRUE(held.TakeStale(map, {}, kGrace).empty());
  // At K = 1 there are no copies outside the replicas.
  auto single = cluster::ShardMap::Initial({.nodes = {kN1, kN2}, .bucket_count = 2});
  const NodeId other_node = single->Find(BucketId(0))->HasReplica(kN1) ? kN2 : kN1;
  held.Record(other_node, {CopyOf(*single, BucketId(0))});
  EXPECT_TRUE(held.Holders(*single).empty());
  EXPECT_TRUE(held.TakeStale(*single, {}, kGrace).empty());
}

// What the status answer lists: per bucket, every holder with its position, the most advanced
// copy first (a later term first, then a longer log; ties by node); Holders keeps node order.
TEST(HeldCopiesTest, CopiesListTheHoldersMostAdvancedFirst) {
  const NodeId n5{5}, n6{6};
  cluster::ShardMap map = WholeMap();
  map = *cluster::Apply(map, cluster::ShardMapEdit(map.epoch()).AddNode(n5).AddNode(n6));
  HeldCopies held(kGrace);
  const auto at = [&](BucketId bucket, storage::ReplicaPosition position) {
    transport::HeldCopy copy = CopyOf(map, bucket);
    copy.position = position;
    return copy;
  };
  held.Record(kN4, {at(BucketId(0), {Term(1), 9}), at(BucketId(1), {Term(1), 7})});
  held.Record(n5, {at(BucketId(0), {Term(2), 3})});
  held.Record(n6, {at(BucketId(0), {Term(1), 9})});
  const auto copies = held.Copies(map);
  ASSERT_EQ(copies.size(), 2u);
  const std::vector<HeldCopies::Holder>& zero = copies.at(BucketId(0));
  ASSERT_EQ(zero.size(), 3u);
  EXPECT_EQ(zero[0].node, n5);
  EXPECT_EQ(zero[0].position, (storage::ReplicaPosition{Term(2), 3}));
  EXPECT_EQ(zero[1].node, kN4);
  EXPECT_EQ(zero[2].node, n6);
  EXPECT_EQ(zero[2].position, (storage::ReplicaPosition{Term(1), 9}));
  ASSERT_EQ(copies.at(BucketId(1)).size(), 1u);
  EXPECT_EQ(copies.at(BucketId(1)).front().position, (storage::ReplicaPosition{Term(1), 7}));
  EXPECT_EQ(held.Holders(map).at(BucketId(0)), (std::vector<NodeId>{kN4, n5, n6}));
}

// `shoal force-primary` keeps what copies there are: a node that reported no copy of the bucket
// is refused while another reported one, with the holders named; a replica, a holder, or any
// member when no node reported a copy, is accepted.
TEST(HeldCopiesTest, AForceTargetHoldsACopyWhenAnyNodeReportedOne) {
  const cluster::ShardMap map = WholeMap();
  const cluster::BucketPlacement& bucket = *map.Find(BucketId(1));
  const NodeId replica = bucket.replicas.back();
  EXPECT_TRUE(CheckForceTarget(bucket, replica, {}).ok());
  EXPECT_TRUE(CheckForceTarget(bucket, kN4, {}).ok());  // no copy anywhere else: it starts anew

  const std::vector<HeldCopies::Holder> holders = {{.node = kN4, .position = {Term(3), 40}}};
  EXPECT_TRUE(CheckForceTarget(bucket, kN4, holders).ok());
  EXPECT_TRUE(CheckForceTarget(bucket, replica, holders).ok());
  const Status refused = CheckForceTarget(bucket, NodeId(7), holders);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(refused.message(),
            "node 7 reported no copy of bucket 1, and node 4 (term 3, rseq 40) did: force one of "
            "those instead (`shoal status` lists the copies, the most advanced first); nothing "
            "changed");
}

}  // namespace
}  // namespace shoal::coordinator
