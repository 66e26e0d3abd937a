#include "src/cluster/bootstrap_planner.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "src/cluster/cluster_test_util.h"

namespace shoal::cluster {
namespace {

using testing::ExecutePlan;
using testing::Nodes;

// n1 holds b0..b19 and is hot, n2 holds b20..b29 and is cool; n3 has just joined.
struct Fixture {
  ShardMap map;
  LoadReport load;
};

Fixture ThreeNodes() {
  std::vector<BucketPlacement> buckets;
  for (uint32_t b = 0; b < 30; ++b) {
    const uint64_t begin = b == 0 ? 0 : (uint64_t{1} << 58) * b;
    BucketRange range = b == 29 ? BucketRange::ToMax(begin)
                                : *BucketRange::Make(begin, (uint64_t{1} << 58) * (b + 1));
    buckets.push_back({.id = BucketId(b),
                       .range = range,
                       .replicas = Nodes({b < 20 ? 1u : 2u}),
                       .transition = std::nullopt});
  }
  std::vector<NodeInfo> nodes = {{NodeId(1), NodeState::kActive},
                                 {NodeId(2), NodeState::kActive},
                                 {NodeId(3), NodeState::kActive}};
  Fixture f{.map = *ShardMap::Create(MapEpoch(1), 1, nodes, buckets), .load = {}};
  for (uint32_t b = 0; b < 30; ++b) {
    f.load.buckets[BucketId(b)] = {
        .bytes = 10, .hits_ema = static_cast<double>(b % 7), .split_point = std::nullopt};
  }
  f.load.node_utilization = {{NodeId(1), 0.9}, {NodeId(2), 0.3}, {NodeId(3), 0.0}};
  return f;
}

TEST(EmaTest, FollowsEquationThree) {
  EXPECT_DOUBLE_EQ(EmaUpdate(10.0, 20.0, 0.25), 0.25 * 20.0 + 0.75 * 10.0);
  EXPECT_DOUBLE_EQ(EmaUpdate(10.0, 20.0, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(EmaUpdate(10.0, 20.0, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(EmaUpdate(10.0, 20.0, 7.0), 20.0);  // alpha clamped
  double ema = 0;
  for (int i = 0; i < 200; ++i) ema = EmaUpdate(ema, 5.0, 0.1);
  EXPECT_NEAR(ema, 5.0, 1e-6);
}

TEST(BootstrapPlannerTest, PreBootstrapTakesASmallShareFromHeavyNodesOnly) {
  Fixture f = ThreeNodes();
  auto plan = BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // n1 is heavy (0.9 > 0.5 and >= 1.2 * 0.6); n2 is not. 10% of 20 buckets = 2.
  ASSERT_EQ(plan->moves.size(), 2u) << plan->DebugString();
  for (const MoveIntent& move : plan->moves) {
    EXPECT_EQ(move.source, Nodes({1}));
    EXPECT_EQ(move.destination, Nodes({3}));
    EXPECT_EQ(move.mode, TransitionMode::kSwitchThenCopy);
    EXPECT_EQ(move.reason, MoveReason::kPreBootstrap);
  }
  // Middle of n1's buckets sorted by (hits, id), hits = b % 7: index 10 of 20, then index 9 of
  // the 19 left (the same as index 9 of the 20).
  std::vector<BucketId> sorted;
  for (uint32_t b = 0; b < 20; ++b) sorted.push_back(BucketId(b));
  std::sort(sorted.begin(), sorted.end(), [&](BucketId a, BucketId b) {
    return std::make_pair(f.load.HitsOf(a), a) < std::make_pair(f.load.HitsOf(b), b);
  });
  EXPECT_EQ(plan->moves[0].bucket, sorted[10]);
  EXPECT_EQ(plan->moves[1].bucket, sorted[9]);

  // Nobody is heavy: the paper's rule hands over nothing; by default the most loaded node
  // (n1: 0.4 against 0.3) still gives one bucket, so that the new node serves at once.
  f.load.node_utilization[NodeId(1)] = 0.4;
  EXPECT_TRUE(
      BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {.min_pre_bootstrap_moves = 0})
          ->empty());
  auto one = BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {});
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->moves.size(), 1u) << one->DebugString();
  EXPECT_EQ(one->moves[0].source, Nodes({1}));
  EXPECT_EQ(one->moves[0].mode, TransitionMode::kSwitchThenCopy);
  EXPECT_EQ(one->moves[0].bucket, sorted[10]);
  // Heavy nodes that gave enough already: no extra move.
  f.load.node_utilization[NodeId(1)] = 0.9;
  EXPECT_EQ(BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {.min_pre_bootstrap_moves = 2})
                ->moves.size(),
            2u);
  EXPECT_FALSE(BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(9), {}).ok());
}

TEST(BootstrapPlannerTest, PostBootstrapReachesTheAverageFromTheLoadedNodes) {
  Fixture f = ThreeNodes();
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  auto pre = BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {});
  ASSERT_TRUE(pre.ok());
  auto after_pre = ExecutePlan(f.map, *pre, &ids, &f.load);
  ASSERT_TRUE(after_pre.ok()) << after_pre.status();
  auto post = BootstrapPlanner::PostBootstrap(*after_pre, f.load, NodeId(3), {});
  ASSERT_TRUE(post.ok());
  // R̄ = 30 / 3 = 10: n3 has 2 and takes 8 more, all from n1 (n2 holds exactly R̄).
  ASSERT_EQ(post->moves.size(), 8u) << post->DebugString();
  for (const MoveIntent& move : post->moves) {
    EXPECT_EQ(move.source, Nodes({1}));
    EXPECT_EQ(move.mode, TransitionMode::kCopyThenSwitch);
  }
  auto done = ExecutePlan(*after_pre, *post, &ids, &f.load);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->BucketsOf(NodeId(3)).size(), 10u);
  EXPECT_EQ(done->BucketsOf(NodeId(1)).size(), 10u);
  EXPECT_TRUE(BootstrapPlanner::PostBootstrap(*done, f.load, NodeId(3), {})->empty());
}

TEST(BootstrapPlannerTest, MovesInFlightCountAsDoneAndAreNotReplanned) {
  Fixture f = ThreeNodes();
  auto post =
      BootstrapPlanner::PostBootstrap(f.map, f.load, NodeId(3), {.max_post_bootstrap_moves = 3});
  ASSERT_TRUE(post.ok());
  ASSERT_EQ(post->moves.size(), 3u);
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  ShardMap started = *Apply(f.map, *ToBeginEdit(f.map, *post, &ids));
  auto next = BootstrapPlanner::PostBootstrap(started, f.load, NodeId(3), {});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->moves.size(), 7u);
  for (const MoveIntent& move : next->moves) {
    EXPECT_FALSE(started.Find(move.bucket)->transition.has_value()) << move.DebugString();
  }
}

TEST(DecommissionPlannerTest, EveryBucketGoesToTheLeastLoadedRemainingNode) {
  Fixture f = ThreeNodes();
  auto plan = DecommissionPlanner::Plan(f.map, f.load, NodeId(1));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->moves.size(), 20u);
  std::map<NodeId, int> received;
  for (const MoveIntent& move : plan->moves) {
    EXPECT_EQ(move.reason, MoveReason::kDrain);
    ++received[move.destination[0]];
  }
  // n2 starts with 100 bytes and n3 with 0: n3 takes 15, then they alternate.
  EXPECT_EQ(received[NodeId(3)], 15);
  EXPECT_EQ(received[NodeId(2)], 5);
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  auto done = ExecutePlan(f.map, *plan, &ids, &f.load);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->BucketsOf(NodeId(1)).empty());
  EXPECT_TRUE(Apply(*done, ShardMapEdit(done->epoch()).RemoveNode(NodeId(1))).ok());
}

TEST(BootstrapPlannerTest, TheNewNodeTakesNoMoreThanItsRoom) {
  Fixture f = ThreeNodes();
  f.load.node_room_bytes[NodeId(3)] = 35;  // three buckets of 10 bytes
  auto pre = BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {});
  ASSERT_TRUE(pre.ok());
  EXPECT_EQ(pre->moves.size(), 2u);
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  ShardMap started = *Apply(f.map, *ToBeginEdit(f.map, *pre, &ids));
  // The two moves in flight use 20 bytes of the room: one more bucket fits.
  auto post = BootstrapPlanner::PostBootstrap(started, f.load, NodeId(3), {});
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->moves.size(), 1u) << post->DebugString();
  f.load.node_room_bytes[NodeId(3)] = 5;
  EXPECT_TRUE(BootstrapPlanner::PreBootstrap(f.map, f.load, NodeId(3), {})->moves.empty());
}

TEST(DecommissionPlannerTest, PrefersNodesWithRoom) {
  Fixture f = ThreeNodes();
  f.load.node_room_bytes[NodeId(3)] = 30;  // n3 is the least loaded but takes 3 buckets only
  auto plan = DecommissionPlanner::Plan(f.map, f.load, NodeId(1));
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<NodeId, int> received;
  for (const MoveIntent& move : plan->moves) ++received[move.destination[0]];
  EXPECT_EQ(received[NodeId(3)], 3);
  EXPECT_EQ(received[NodeId(2)], 17);
  // Nobody has room: the replicas still leave, to the least loaded as without limits.
  f.load.node_room_bytes = {{NodeId(2), 0}, {NodeId(3), 0}};
  plan = DecommissionPlanner::Plan(f.map, f.load, NodeId(1));
  ASSERT_TRUE(plan.ok());
  received.clear();
  for (const MoveIntent& move : plan->moves) ++received[move.destination[0]];
  EXPECT_EQ(received[NodeId(3)], 15);
}

TEST(DecommissionPlannerTest, KeepsReplicationAboveK) {
  ShardMap map =
      *ShardMap::Initial({.nodes = Nodes({1, 2}), .bucket_count = 2, .replication_factor = 2});
  // Two nodes, K = 2: the leaving node's replicas have nowhere to go (rule 2).
  EXPECT_EQ(DecommissionPlanner::Plan(map, {}, NodeId(1)).status().code(),
            StatusCode::kFailedPrecondition);
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(3)));
  auto plan = DecommissionPlanner::Plan(map, {}, NodeId(1));
  ASSERT_TRUE(plan.ok());
  for (const MoveIntent& move : plan->moves) {
    EXPECT_EQ(move.destination.size(), 2u);
    EXPECT_TRUE(std::find(move.destination.begin(), move.destination.end(), NodeId(3)) !=
                move.destination.end());
  }
}

// Bootstrapping any cluster: the new node ends with floor(R̄) replicas or the givers all reach
// R̄, and no node ever gives below R̄.
RC_GTEST_PROP(BootstrapPlannerProperty, PostBootstrapNeverOvershootsTheAverage, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(1, 6);
  const uint32_t buckets = *rc::gen::inRange<uint32_t>(1, 50);
  std::vector<NodeId> ids;
  for (uint32_t n = 0; n < nodes; ++n) ids.push_back(NodeId(n));
  ShardMap map = *ShardMap::Initial({.nodes = ids, .bucket_count = buckets});
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(50)));
  LoadReport load;
  for (uint32_t n = 0; n < nodes; ++n) {
    load.node_utilization[NodeId(n)] = *rc::gen::inRange(0, 101) / 100.0;
  }
  IdSource next_ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  auto pre = BootstrapPlanner::PreBootstrap(map, load, NodeId(50), {});
  RC_ASSERT(pre.ok());
  map = *ExecutePlan(map, *pre, &next_ids, &load);
  auto post = BootstrapPlanner::PostBootstrap(map, load, NodeId(50), {});
  RC_ASSERT(post.ok());
  map = *ExecutePlan(map, *post, &next_ids, &load);
  const double r_bar = static_cast<double>(buckets) / (nodes + 1);
  RC_ASSERT(map.BucketsOf(NodeId(50)).size() == static_cast<size_t>(r_bar));
  RC_ASSERT(BootstrapPlanner::PostBootstrap(map, load, NodeId(50), {})->empty());
}

}  // namespace
}  // namespace shoal::cluster
