// The primary-evening step of Balancer::Plan (handoffs): by read load when the load report has
// read rates, by count otherwise.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "src/cluster/balancer.h"
#include "src/cluster/cluster_test_util.h"

namespace shoal::cluster {
namespace {

using testing::ExecutePlan;
using testing::Nodes;

constexpr int kMaxRounds = 20;

bool IsHandoff(const MoveIntent& move) {
  return move.source.size() == move.destination.size() &&
         std::is_permutation(move.source.begin(), move.source.end(), move.destination.begin()) &&
         move.source.front() != move.destination.front();
}

// Per active node, the read load of its primaries.
std::map<NodeId, double> PrimaryReads(const ShardMap& map, const LoadReport& load) {
  std::map<NodeId, double> reads;
  for (NodeId node : map.ActiveNodes()) reads[node] = 0;
  for (const BucketPlacement& bucket : map.buckets()) {
    reads[bucket.replicas.front()] += load.HitsOf(bucket.id);
  }
  return reads;
}

// Plans and applies until the plan is empty; returns every plan, in order. Each plan must be
// handoffs only, and the same when asked twice.
std::vector<MigrationPlan> RunToFixedPoint(ShardMap* map, LoadReport* load,
                                           const BalancerOptions& options) {
  std::vector<MigrationPlan> plans;
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  for (int round = 0; round < kMaxRounds; ++round) {
    auto plan = Balancer::Plan(*map, *load, options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok() || plan->empty()) return plans;
    EXPECT_EQ(*Balancer::Plan(*map, *load, options), *plan);
    for (const MoveIntent& move : plan->moves) EXPECT_TRUE(IsHandoff(move)) << move.DebugString();
    auto next = ExecutePlan(*map, *plan, &ids, load);
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok()) return plans;
    *map = *std::move(next);
    plans.push_back(*std::move(plan));
  }
  ADD_FAILURE() << "the handoffs did not converge in " << kMaxRounds << " plans";
  return plans;
}

// Six buckets at K = 3 over three nodes: two primaries each, so even by count.
ShardMap EvenByCount() {
  return *ShardMap::Initial(
      {.nodes = Nodes({1, 2, 3}), .bucket_count = 6, .replication_factor = 3});
}

// The two buckets whose primary is n1 take nearly every read: the count rule sees nothing to do,
// the read rule splits them across two nodes, then stops and stays stopped.
TEST(BalancerHandoffTest, TwoHotPrimariesOnOneNodeAreSplitAcrossNodes) {
  ShardMap map = EvenByCount();
  LoadReport load;
  std::vector<BucketId> hot;
  for (const BucketPlacement& bucket : map.buckets()) {
    load.buckets[bucket.id].bytes = 10;
    const bool on_n1 = bucket.replicas.front() == NodeId(1);
    load.buckets[bucket.id].hits_ema = on_n1 ? 100 : 1;
    if (on_n1) hot.push_back(bucket.id);
  }
  ASSERT_EQ(hot.size(), 2u);
  LoadReport no_reads = load;
  for (auto& [bucket, bucket_load] : no_reads.buckets) bucket_load.hits_ema = 0;
  EXPECT_TRUE(Balancer::Plan(map, no_reads, {.max_moves_per_node = 2})->empty());

  const std::vector<MigrationPlan> plans = RunToFixedPoint(&map, &load, {.max_moves_per_node = 2});
  ASSERT_FALSE(plans.empty());
  // The first handoff gives a hot bucket away.
  ASSERT_FALSE(plans.front().moves.empty());
  EXPECT_TRUE(std::find(hot.begin(), hot.end(), plans.front().moves.front().bucket) != hot.end())
      << plans.front().DebugString();
  EXPECT_NE(map.Find(hot[0])->replicas.front(), map.Find(hot[1])->replicas.front());
  const std::map<NodeId, double> reads = PrimaryReads(map, load);
  double max = 0;
  for (const auto& [node, node_reads] : reads) max = std::max(max, node_reads);
  EXPECT_EQ(max, 100.0);  // one hot bucket per node: the best there is
  // No bucket changed its primary twice: no handoff undid another.
  std::map<BucketId, int> handed;
  for (const MigrationPlan& plan : plans) {
    for (const MoveIntent& move : plan.moves) EXPECT_EQ(++handed[move.bucket], 1) << move.bucket;
  }
  for (const auto& [bucket, bucket_load] : load.buckets)
    EXPECT_EQ(map.Find(bucket)->replicas.size(), 3u);
}

// Once balanced by reads, read rates that drift by less than the margin plan nothing: no handoff
// goes back and forth over repeated plans.
TEST(BalancerHandoffTest, DriftingReadsBelowTheMarginPlanNoHandoff) {
  ShardMap map = EvenByCount();
  LoadReport load;
  for (const BucketPlacement& bucket : map.buckets()) {
    load.buckets[bucket.id] = {.bytes = 10,
                               .hits_ema = bucket.replicas.front() == NodeId(1) ? 100.0 : 1.0,
                               .split_point = std::nullopt};
  }
  (void)RunToFixedPoint(&map, &load, {.max_moves_per_node = 2});
  const std::map<NodeId, double> before = PrimaryReads(map, load);
  for (int round = 0; round < 10; ++round) {
    LoadReport drifted = load;
    uint32_t i = 0;
    for (auto& [bucket, bucket_load] : drifted.buckets) {
      // +-10% per bucket, alternating by round and bucket.
      bucket_load.hits_ema *= ((round + i++) % 2 == 0) ? 1.1 : 0.9;
    }
    auto plan = Balancer::Plan(map, drifted, {.max_moves_per_node = 2});
    ASSERT_TRUE(plan.ok());
    EXPECT_TRUE(plan->empty()) << "round " << round << ": " << plan->DebugString();
  }
  EXPECT_EQ(PrimaryReads(map, load), before);
}

// With the same read rate on every bucket, the read rule plans exactly the handoffs of the count
// rule, plan after plan: the primaries of 8 buckets piled on n1 end 3, 3, 2.
TEST(BalancerHandoffTest, EqualReadsPlanTheHandoffsOfTheCountRule) {
  ShardMap piled =
      *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 8, .replication_factor = 3});
  ShardMapEdit pile(piled.epoch());
  for (const BucketPlacement& bucket : piled.buckets()) {
    if (bucket.replicas.front() != NodeId(1)) pile.PromoteReplica(bucket.id, NodeId(1));
  }
  piled = *Apply(piled, pile);
  // Repairs first (each promotion dropped a copy), then the handoffs from a whole map.
  LoadReport counts;
  for (uint32_t b = 0; b < 8; ++b) counts.buckets[BucketId(b)].bytes = 10;
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  for (int round = 0; round < kMaxRounds; ++round) {
    auto plan = Balancer::Plan(piled, counts, {.max_moves_per_node = 2});
    ASSERT_TRUE(plan.ok());
    if (plan->moves.empty() || IsHandoff(plan->moves.front())) break;
    piled = *ExecutePlan(piled, *plan, &ids, &counts);
  }
  LoadReport reads = counts;
  for (auto& [bucket, bucket_load] : reads.buckets) bucket_load.hits_ema = 7.5;

  ShardMap by_count = piled;
  ShardMap by_reads = piled;
  const std::vector<MigrationPlan> count_plans =
      RunToFixedPoint(&by_count, &counts, {.max_moves_per_node = 2});
  const std::vector<MigrationPlan> read_plans =
      RunToFixedPoint(&by_reads, &reads, {.max_moves_per_node = 2});
  ASSERT_EQ(read_plans.size(), count_plans.size());
  size_t handoffs = 0;
  for (size_t i = 0; i < read_plans.size(); ++i) {
    ASSERT_EQ(read_plans[i].moves.size(), count_plans[i].moves.size());
    for (size_t m = 0; m < read_plans[i].moves.size(); ++m) {
      EXPECT_EQ(read_plans[i].moves[m].bucket, count_plans[i].moves[m].bucket);
      EXPECT_EQ(read_plans[i].moves[m].destination, count_plans[i].moves[m].destination);
      ++handoffs;
    }
  }
  EXPECT_EQ(handoffs, 5u);
  std::map<NodeId, int> primaries;
  for (const BucketPlacement& bucket : by_reads.buckets()) ++primaries[bucket.replicas.front()];
  for (const auto& [node, count] : primaries) {
    EXPECT_GE(count, 2) << node;
    EXPECT_LE(count, 3) << node;
  }
}

// Handoffs per plan stay within max_moves_per_node per node, as by count.
TEST(BalancerHandoffTest, ReadHandoffsRespectTheConcurrencyLimit) {
  ShardMap map = *ShardMap::Initial(
      {.nodes = Nodes({1, 2, 3, 4}), .bucket_count = 8, .replication_factor = 2});
  LoadReport load;
  for (const BucketPlacement& bucket : map.buckets()) {
    load.buckets[bucket.id] = {.bytes = 10,
                               .hits_ema = bucket.replicas.front() == NodeId(1) ? 50.0 : 0.5,
                               .split_point = std::nullopt};
  }
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 1});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 1u) << plan->DebugString();
  EXPECT_EQ(plan->moves.front().source.front(), NodeId(1));
}

// A node whose disk is at its reserve refuses every write: its primaries go to backups with
// room before anything else, none comes back while it stays full, and once it has room again
// the count rule evens primaries out as before.
TEST(BalancerHandoffTest, ANodeOutOfDiskSpaceGivesItsPrimariesAwayAndTakesNone) {
  ShardMap map = EvenByCount();
  LoadReport load;
  load.node_room_bytes[NodeId(2)] = 0;
  load.node_room_bytes[NodeId(3)] = 1 << 20;  // room: listed, not full
  const std::vector<MigrationPlan> plans = RunToFixedPoint(&map, &load, {.max_moves_per_node = 2});
  ASSERT_EQ(plans.size(), 1u);
  ASSERT_EQ(plans[0].moves.size(), 2u) << plans[0].DebugString();
  std::map<NodeId, int> primaries;
  for (const MoveIntent& move : plans[0].moves) {
    EXPECT_EQ(move.reason, MoveReason::kDiskFull);
    EXPECT_EQ(move.source.front(), NodeId(2));
  }
  for (const BucketPlacement& bucket : map.buckets()) ++primaries[bucket.replicas.front()];
  EXPECT_EQ(primaries[NodeId(2)], 0);
  EXPECT_EQ(primaries[NodeId(1)], 3) << "the heirs share the primaries";
  EXPECT_EQ(primaries[NodeId(3)], 3);

  // Space is back: primaries are evened out by count again.
  load.node_room_bytes.erase(NodeId(2));
  RunToFixedPoint(&map, &load, {.max_moves_per_node = 2});
  primaries.clear();
  for (const BucketPlacement& bucket : map.buckets()) ++primaries[bucket.replicas.front()];
  EXPECT_EQ(primaries[NodeId(2)], 2);
}

// A full node's primary stays where no backup has room (or every backup is down): the bucket's
// writes fail with NO_SPACE until space is freed, and nothing else is planned for it meanwhile.
TEST(BalancerHandoffTest, AFullPrimaryStaysWhenNoBackupMayTakeIt) {
  ShardMap map = EvenByCount();
  LoadReport load;
  load.node_room_bytes = {{NodeId(1), 0}, {NodeId(2), 0}, {NodeId(3), 0}};
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 2});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty()) << plan->DebugString();
  load.node_room_bytes = {{NodeId(2), 0}};
  plan = Balancer::Plan(map, load, {.max_moves_per_node = 2, .unavailable = Nodes({1, 3})});
  ASSERT_TRUE(plan.ok());
  for (const MoveIntent& move : plan->moves) {
    EXPECT_NE(move.reason, MoveReason::kDiskFull) << move.DebugString();
  }
}

}  // namespace
}  // namespace shoal::cluster
