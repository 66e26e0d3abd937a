#include "src/cluster/shard_map.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <memory>

namespace shoal::cluster {
namespace {

std::vector<NodeId> Nodes(std::initializer_list<uint32_t> ids) {
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

BucketPlacement Bucket(uint32_t id, BucketRange range, std::vector<NodeId> replicas) {
  return {.id = BucketId(id),
          .range = range,
          .replicas = std::move(replicas),
          .transition = std::nullopt};
}

std::vector<NodeInfo> Infos(std::initializer_list<uint32_t> ids) {
  std::vector<NodeInfo> infos;
  for (uint32_t id : ids) infos.push_back({.id = NodeId(id), .state = NodeState::kActive});
  return infos;
}

TEST(ShardMapTest, InitialCoversTheSpaceRoundRobin) {
  auto map =
      ShardMap::Initial({.nodes = Nodes({3, 1, 2}), .bucket_count = 4, .replication_factor = 2});
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epoch(), MapEpoch(1));
  ASSERT_EQ(map->buckets().size(), 4u);
  EXPECT_EQ(map->buckets()[1].range, *BucketRange::Make(uint64_t{1} << 62, uint64_t{1} << 63));
  EXPECT_EQ(map->buckets()[0].replicas, Nodes({1, 2}));
  EXPECT_EQ(map->buckets()[2].replicas, Nodes({3, 1}));
  EXPECT_EQ(map->BucketsOf(NodeId(1)),
            (std::vector<BucketId>{BucketId(0), BucketId(2), BucketId(3)}));
  EXPECT_EQ(map->NextBucketId(), BucketId(4));
  EXPECT_EQ(map->NextMoveId(), MoveId(1));
  EXPECT_TRUE(map->CheckInvariants().ok());
  EXPECT_NE(map->DebugString().find("b3 [0xc000000000000000, 2^64) [n1,n2]"), std::string::npos)
      << map->DebugString();
}

TEST(ShardMapTest, InitialRejectsBadOptions) {
  EXPECT_FALSE(ShardMap::Initial({.nodes = {}, .bucket_count = 1}).ok());
  EXPECT_FALSE(ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 0}).ok());
  EXPECT_FALSE(
      ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 1, .replication_factor = 2}).ok());
  EXPECT_FALSE(ShardMap::Initial({.nodes = Nodes({1, 1}), .bucket_count = 1}).ok());
}

TEST(ShardMapTest, LookupAtBoundaries) {
  auto map = ShardMap::Initial({.nodes = Nodes({1, 2}), .bucket_count = 3});
  ASSERT_TRUE(map.ok());
  for (const BucketPlacement& bucket : map->buckets()) {
    EXPECT_EQ(map->Lookup(Point(bucket.range.begin())).id, bucket.id);
    EXPECT_EQ(map->Lookup(Point(bucket.range.last())).id, bucket.id);
    EXPECT_EQ(map->Find(bucket.id), &map->Lookup(Point(bucket.range.begin())));
  }
  EXPECT_EQ(map->Find(BucketId(99)), nullptr);
  EXPECT_FALSE(map->IndexOf(BucketId(99)).has_value());
}

TEST(ShardMapTest, CreateRejectsGapsOverlapsAndBadReplicas) {
  const BucketRange low = *BucketRange::Make(0, 100);
  const BucketRange high = BucketRange::ToMax(100);
  const MapEpoch e(1);
  EXPECT_TRUE(
      ShardMap::Create(e, 1, Infos({1}), {Bucket(0, low, Nodes({1})), Bucket(1, high, Nodes({1}))})
          .ok());
  // Gap at the top, gap at the bottom, gap in the middle, overlap.
  EXPECT_FALSE(ShardMap::Create(e, 1, Infos({1}), {Bucket(0, low, Nodes({1}))}).ok());
  EXPECT_FALSE(ShardMap::Create(e, 1, Infos({1}), {Bucket(1, high, Nodes({1}))}).ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 1, Infos({1}),
                       {Bucket(0, low, Nodes({1})), Bucket(1, BucketRange::ToMax(101), Nodes({1}))})
          .ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 1, Infos({1}),
                       {Bucket(0, low, Nodes({1})), Bucket(1, BucketRange::ToMax(99), Nodes({1}))})
          .ok());
  // No buckets; duplicate ids; epoch 0; unknown node; too many replicas; repeated replica.
  EXPECT_FALSE(ShardMap::Create(e, 1, Infos({1}), {}).ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 1, Infos({1}), {Bucket(0, low, Nodes({1})), Bucket(0, high, Nodes({1}))})
          .ok());
  EXPECT_FALSE(
      ShardMap::Create(MapEpoch(0), 1, Infos({1}), {Bucket(0, BucketRange::Full(), Nodes({1}))})
          .ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 1, Infos({1}), {Bucket(0, BucketRange::Full(), Nodes({2}))}).ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 1, Infos({1, 2}), {Bucket(0, BucketRange::Full(), Nodes({1, 2}))}).ok());
  EXPECT_FALSE(
      ShardMap::Create(e, 2, Infos({1, 2}), {Bucket(0, BucketRange::Full(), Nodes({1, 1}))}).ok());
  EXPECT_FALSE(ShardMap::Create(e, 1, Infos({1}), {Bucket(0, BucketRange::Full(), {})}).ok());
}

TEST(ShardMapTest, TransitionIsKeptBesideTheStablePlacement) {
  BucketPlacement bucket = Bucket(0, BucketRange::Full(), Nodes({1}));
  bucket.transition = BucketTransition{.move = MoveId(4),
                                       .source = Nodes({1}),
                                       .destination = Nodes({2}),
                                       .stage = TransitionStage::kCatchUp,
                                       .mode = TransitionMode::kCopyThenSwitch};
  auto map = ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {bucket});
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->BucketsOf(NodeId(1)), std::vector<BucketId>{BucketId(0)});
  EXPECT_EQ(map->TargetBucketsOf(NodeId(2)), std::vector<BucketId>{BucketId(0)});
  EXPECT_EQ(map->TransitionCount(), 1u);
  EXPECT_EQ(map->TransitionCountOf(NodeId(2)), 1u);
  EXPECT_EQ(map->NextMoveId(), MoveId(5));

  // Before the commit the stable replicas must be the source, after it the destination.
  BucketPlacement wrong = bucket;
  wrong.replicas = Nodes({2});
  EXPECT_FALSE(ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {wrong}).ok());
  wrong.transition->stage = TransitionStage::kCommitted;
  EXPECT_TRUE(ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {wrong}).ok());
  // Terminal stages and empty moves are never stored.
  BucketPlacement terminal = bucket;
  terminal.transition->stage = TransitionStage::kAborted;
  EXPECT_FALSE(ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {terminal}).ok());
  terminal.transition->stage = TransitionStage::kDone;
  terminal.transition->mode = TransitionMode::kSwitchThenCopy;
  EXPECT_FALSE(ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {terminal}).ok());
  BucketPlacement empty_move = bucket;
  empty_move.transition->destination = Nodes({1});
  EXPECT_FALSE(ShardMap::Create(MapEpoch(3), 1, Infos({1, 2}), {empty_move}).ok());
}

TEST(ShardMapTest, ReadersShareAnImmutableMap) {
  auto map = ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 2});
  ASSERT_TRUE(map.ok());
  ShardMapPtr shared = std::make_shared<const ShardMap>(*std::move(map));
  ShardMapPtr reader = shared;
  EXPECT_EQ(reader->Lookup(Point(UINT64_MAX)).id, BucketId(1));
}

// Lookup's binary search agrees with a linear scan on maps with random boundaries.
RC_GTEST_PROP(ShardMapProperty, LookupAgreesWithLinearScan, ()) {
  auto cuts = *rc::gen::container<std::set<uint64_t>>(rc::gen::inRange<uint64_t>(1, UINT64_MAX));
  std::vector<BucketPlacement> buckets;
  uint64_t begin = 0;
  uint32_t id = 0;
  for (uint64_t cut : cuts) {
    buckets.push_back(Bucket(id++, *BucketRange::Make(begin, cut), Nodes({1})));
    begin = cut;
  }
  buckets.push_back(Bucket(id, BucketRange::ToMax(begin), Nodes({1})));
  auto map = ShardMap::Create(MapEpoch(1), 1, Infos({1}), buckets);
  RC_ASSERT(map.ok());
  const auto probes = *rc::gen::container<std::vector<uint64_t>>(rc::gen::arbitrary<uint64_t>());
  for (uint64_t probe : probes) {
    const BucketPlacement* linear = nullptr;
    for (const BucketPlacement& b : map->buckets()) {
      if (b.range.Contains(Point(probe))) linear = &b;
    }
    RC_ASSERT(linear == &map->Lookup(Point(probe)));
  }
}

}  // namespace
}  // namespace shoal::cluster
