#include "src/cluster/balancer.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "src/cluster/cluster_test_util.h"
#include "src/partition/balance.h"

namespace shoal::cluster {
namespace {

using testing::ExecutePlan;
using testing::Nodes;

constexpr int kMaxRounds = 200;

// A copy's weight in the balancer: its bucket's bytes, and at least 1 (balancer.h).
uint64_t WeightOf(const LoadReport& load, BucketId bucket) {
  return std::max<uint64_t>(1, load.BytesOf(bucket));
}

std::map<NodeId, uint64_t> Loads(const ShardMap& map, const LoadReport& load) {
  std::map<NodeId, uint64_t> loads;
  for (NodeId node : map.ActiveNodes()) loads[node] = 0;
  for (const BucketPlacement& bucket : map.buckets()) {
    for (NodeId node : bucket.replicas) loads[node] += WeightOf(load, bucket.id);
  }
  return loads;
}

// Plans and executes until the plan is empty; returns the final map (or fails the property).
ShardMap RunToFixedPoint(ShardMap map, LoadReport* load, const BalancerOptions& options,
                         int* rounds) {
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  std::string last;  // the last rounds' plans, for a failure's message
  for (*rounds = 0; *rounds < kMaxRounds; ++*rounds) {
    auto plan = Balancer::Plan(map, *load, options);
    RC_ASSERT(plan.ok());
    if (*rounds >= kMaxRounds - 4) last += plan->DebugString() + "\n";
    // Pure and idempotent: the same inputs give the same plan.
    RC_ASSERT(*Balancer::Plan(map, *load, options) == *plan);
    if (plan->empty()) return map;
    auto next = ExecutePlan(map, *plan, &ids, load);
    if (!next.ok()) RC_FAIL(std::string(MessageOf(next.status())) + "\n" + plan->DebugString());
    map = *std::move(next);
    RC_ASSERT(map.CheckInvariants().ok());
  }
  RC_FAIL("balancer did not converge; its last plans:\n" + last + map.DebugString());
}

// Plans and executes (at most max_moves_per_node per node and plan) until the plan is empty.
void PlanUntilEmpty(ShardMap* map, LoadReport* load, uint32_t max_moves_per_node, IdSource* ids) {
  for (int round = 0; round < 50; ++round) {
    auto plan = Balancer::Plan(*map, *load, {.max_moves_per_node = max_moves_per_node});
    ASSERT_TRUE(plan.ok()) << plan.status();
    if (plan->empty()) return;
    auto next = ExecutePlan(*map, *plan, ids, load);
    ASSERT_TRUE(next.ok()) << next.status();
    *map = *std::move(next);
  }
  FAIL() << "no fixed point within 50 plans";
}

TEST(BalancerTest, MovesInFlightCountAsDone) {
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 4});
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(2)));
  LoadReport load;
  for (uint32_t b = 0; b < 4; ++b) load.buckets[BucketId(b)].bytes = 10;
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 2u) << plan->DebugString();
  // Start the first move only: the next plan keeps the second and does not touch the first.
  MigrationPlan first;
  first.moves.push_back(plan->moves[0]);
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  map = *Apply(map, *ToBeginEdit(map, first, &ids));
  auto again = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->moves.size(), 1u) << again->DebugString();
  EXPECT_EQ(again->moves[0], plan->moves[1]);
}

TEST(BalancerTest, DrainComesFirstAndRespectsTheConcurrencyLimit) {
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 9});
  map = *Apply(map, ShardMapEdit(map.epoch()).SetNodeState(NodeId(3), NodeState::kLeaving));
  LoadReport load;
  for (uint32_t b = 0; b < 9; ++b) load.buckets[BucketId(b)].bytes = 1 + b;
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 1});
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->moves.empty());
  EXPECT_EQ(plan->moves[0].reason, MoveReason::kDrain);
  std::map<NodeId, int> per_node;
  for (const MoveIntent& move : plan->moves) {
    ++per_node[move.source[0]];
    ++per_node[move.destination[0]];
    EXPECT_NE(move.destination[0], NodeId(3));
  }
  for (const auto& [node, count] : per_node) EXPECT_LE(count, 1) << node;
}

TEST(BalancerTest, RepairsUnderReplicatedBuckets) {
  ShardMap map =
      *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 3, .replication_factor = 2});
  map = *Apply(map, ShardMapEdit(map.epoch()).RemoveNode(NodeId(3)).AddNode(NodeId(4)));
  LoadReport load;
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plan.ok());
  int repairs = 0;
  for (const MoveIntent& move : plan->moves) {
    if (move.reason == MoveReason::kRepair) ++repairs;
    EXPECT_EQ(move.destination.size(), 2u) << move.DebugString();
    EXPECT_EQ(move.destination[0], move.source[0]) << "the primary stays: " << move.DebugString();
  }
  EXPECT_EQ(repairs, 2) << plan->DebugString();
}

// With K > 1 a node that does not answer receives nothing and its backups are rebuilt on the
// live nodes (paper 001 §3.2 rule 2); at K = 1 nothing can be copied off it, so it changes nothing.
TEST(BalancerTest, CopiesOnAnUnavailableNodeAreRebuiltElsewhereOnlyWithReplicas) {
  ShardMap map = *ShardMap::Initial(
      {.nodes = Nodes({1, 2, 3, 4}), .bucket_count = 8, .replication_factor = 3});
  LoadReport load;
  for (uint32_t b = 0; b < 8; ++b) load.buckets[BucketId(b)].bytes = 10;
  ASSERT_TRUE(Balancer::Plan(map, load, {.max_moves_per_node = 8})->empty());
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8, .unavailable = {NodeId(4)}});
  ASSERT_TRUE(plan.ok());
  int replaced_backups = 0;
  for (const MoveIntent& move : plan->moves) {
    EXPECT_EQ(move.reason, MoveReason::kDrain) << move.DebugString();
    EXPECT_FALSE(std::count(move.destination.begin(), move.destination.end(), NodeId(4)))
        << move.DebugString();
    if (move.destination[0] == move.source[0]) ++replaced_backups;
  }
  int backups_on_4 = 0;
  for (const BucketPlacement& bucket : map.buckets()) {
    for (size_t i = 1; i < bucket.replicas.size(); ++i)
      backups_on_4 += bucket.replicas[i] == NodeId(4);
  }
  EXPECT_GT(backups_on_4, 0);
  EXPECT_EQ(replaced_backups, backups_on_4) << plan->DebugString();

  ShardMap single = *ShardMap::Initial({.nodes = Nodes({1, 2}), .bucket_count = 4});
  EXPECT_TRUE(
      Balancer::Plan(single, load, {.max_moves_per_node = 8, .unavailable = {NodeId(2)}})->empty());
}

// Flap damping (replication.md §4.1): a damped node receives no repair and no primary while it
// is damped, keeps serving what it holds, and is planned for as usual once it is not.
TEST(BalancerTest, ADampedNodeReceivesNoCopyNorPrimaryUntilItIsNot) {
  ShardMap map =
      *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 6, .replication_factor = 3});
  // n3 was removed from every bucket (it stopped answering) and is back.
  ShardMapEdit removed(map.epoch());
  for (const BucketPlacement& bucket : map.buckets()) {
    if (bucket.replicas.front() == NodeId(3)) {
      removed.PromoteReplica(bucket.id, NodeId(1));
    } else {
      removed.RemoveReplica(bucket.id, NodeId(3));
    }
  }
  map = *Apply(map, removed);
  LoadReport load;
  for (uint32_t b = 0; b < 6; ++b) load.buckets[BucketId(b)].bytes = 10;
  const BalancerOptions damped{.max_moves_per_node = 8, .damped = {NodeId(3)}};
  auto held = Balancer::Plan(map, load, damped);
  ASSERT_TRUE(held.ok());
  for (const MoveIntent& move : held->moves) {
    EXPECT_FALSE(std::count(move.destination.begin(), move.destination.end(), NodeId(3)))
        << move.DebugString();
  }
  EXPECT_TRUE(held->splits.empty() && held->merges.empty());

  auto repair = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(repair.ok());
  int repairs_to_3 = 0;
  for (const MoveIntent& move : repair->moves) {
    repairs_to_3 += move.reason == MoveReason::kRepair &&
                    std::count(move.destination.begin(), move.destination.end(), NodeId(3));
  }
  EXPECT_EQ(repairs_to_3, 6) << repair->DebugString();

  // Once every copy is back, a damped node takes no primary either.
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  for (int round = 0; round < 10; ++round) {
    auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
    ASSERT_TRUE(plan.ok());
    if (plan->moves.empty() || plan->moves.front().reason != MoveReason::kRepair) break;
    map = *ExecutePlan(map, *plan, &ids, &load);
  }
  auto handoffs = Balancer::Plan(map, load, damped);
  ASSERT_TRUE(handoffs.ok());
  for (const MoveIntent& move : handoffs->moves) {
    EXPECT_NE(move.destination.front(), NodeId(3)) << move.DebugString();
  }
  auto undamped = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(undamped.ok());
  EXPECT_TRUE(std::any_of(undamped->moves.begin(), undamped->moves.end(), [](const MoveIntent& m) {
    return m.destination.front() == NodeId(3);
  })) << undamped->DebugString();
}

// docs/design/replication.md §6.1, "Copies outside the replicas": n4 was removed from one
// bucket's replicas and still holds its copy while an empty n5 joined. The repair goes to n4,
// which may resume from the primary's log, and not to the least loaded n5; balance moves wait
// for the next plan, and the plans still end balanced. A holder that may not receive the copy
// (damped or down) is passed over; one at its move limit is waited for.
TEST(BalancerTest, ARepairPrefersANodeHoldingACopyOfTheBucket) {
  ShardMap map = *ShardMap::Initial(
      {.nodes = Nodes({1, 2, 3, 4}), .bucket_count = 8, .replication_factor = 3});
  BucketId short_bucket;
  for (const BucketPlacement& bucket : map.buckets()) {
    if (bucket.replicas.front() != NodeId(4) && bucket.HasReplica(NodeId(4))) {
      short_bucket = bucket.id;
      break;
    }
  }
  map = *Apply(map, ShardMapEdit(map.epoch()).RemoveReplica(short_bucket, NodeId(4)));
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(5)));
  LoadReport load;
  for (uint32_t b = 0; b < 8; ++b) load.buckets[BucketId(b)].bytes = 10;
  const auto repair_of = [&](const MigrationPlan& plan) -> std::optional<MoveIntent> {
    for (const MoveIntent& move : plan.moves) {
      if (move.bucket == short_bucket) return move;
    }
    return std::nullopt;
  };
  const auto added = [](const MoveIntent& move) {
    for (NodeId node : move.destination) {
      if (!std::count(move.source.begin(), move.source.end(), node)) return node;
    }
    return NodeId(0);
  };

  auto plain = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(repair_of(*plain).has_value()) << plain->DebugString();
  EXPECT_EQ(repair_of(*plain)->reason, MoveReason::kRepair);
  EXPECT_EQ(added(*repair_of(*plain)), NodeId(5)) << plain->DebugString();

  BalancerOptions options{.max_moves_per_node = 8, .held_copies = {{short_bucket, {NodeId(4)}}}};
  auto preferred = Balancer::Plan(map, load, options);
  ASSERT_TRUE(preferred.ok());
  ASSERT_TRUE(repair_of(*preferred).has_value()) << preferred->DebugString();
  EXPECT_EQ(repair_of(*preferred)->reason, MoveReason::kRepair);
  EXPECT_EQ(added(*repair_of(*preferred)), NodeId(4)) << preferred->DebugString();
  for (const MoveIntent& move : preferred->moves) {
    EXPECT_NE(move.reason, MoveReason::kBalance) << move.DebugString();
  }
  EXPECT_EQ(*Balancer::Plan(map, load, options), *preferred);  // pure

  // Passed over when it may not receive the copy.
  BalancerOptions damped = options;
  damped.damped = {NodeId(4)};
  EXPECT_NE(added(*repair_of(*Balancer::Plan(map, load, damped))), NodeId(4));
  BalancerOptions down = options;
  down.unavailable = {NodeId(4)};
  auto without_4 = Balancer::Plan(map, load, down);
  ASSERT_TRUE(without_4.ok());
  for (const MoveIntent& move : without_4->moves) {
    EXPECT_FALSE(std::count(move.destination.begin(), move.destination.end(), NodeId(4)))
        << move.DebugString();
  }
  ShardMap busy = map;
  for (const BucketPlacement& bucket : map.buckets()) {
    if (bucket.id == short_bucket || !bucket.HasReplica(NodeId(4))) continue;
    std::vector<NodeId> target = bucket.replicas;
    std::replace(target.begin(), target.end(), NodeId(4), NodeId(5));
    MigrationPlan one;
    one.moves.push_back({.bucket = bucket.id, .source = bucket.replicas, .destination = target});
    IdSource ids{.next_move = busy.NextMoveId(), .next_bucket = busy.NextBucketId()};
    busy = *Apply(busy, *ToBeginEdit(busy, one, &ids));
    break;
  }
  auto limited = Balancer::Plan(
      busy, load, {.max_moves_per_node = 1, .held_copies = {{short_bucket, {NodeId(4)}}}});
  ASSERT_TRUE(limited.ok());
  EXPECT_FALSE(repair_of(*limited).has_value())
      << "waits for n4 rather than a snapshot elsewhere: " << limited->DebugString();

  // Once the copy is a replica its node reports it no more; the plans end balanced.
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  map = *ExecutePlan(map, *preferred, &ids, &load);
  ASSERT_TRUE(map.Find(short_bucket)->HasReplica(NodeId(4)));
  ASSERT_NO_FATAL_FAILURE(PlanUntilEmpty(&map, &load, 8, &ids));
  for (const auto& [node, bytes] : Loads(map, load)) {
    EXPECT_GE(bytes, 40u) << node;
    EXPECT_LE(bytes, 50u) << node;
  }
}

// A cluster that holds no data yet still spreads its copies: a node that joins gets its share of
// the empty buckets' copies (and can then lead some), at K = 1 and at K = 3. Without it a node
// whose copies were rebuilt elsewhere while it started late held nothing until data arrived.
TEST(BalancerTest, CopiesOfEmptyBucketsAreSpreadByCount) {
  for (uint32_t k : {1u, 3u}) {
    ShardMap map = *ShardMap::Initial(
        {.nodes = Nodes({1, 2, 3}), .bucket_count = 12, .replication_factor = k});
    map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(4)));
    LoadReport load;  // no bucket holds a byte
    IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
    ASSERT_NO_FATAL_FAILURE(PlanUntilEmpty(&map, &load, 2, &ids));
    for (uint32_t n = 1; n <= 4; ++n) {
      EXPECT_EQ(map.BucketsOf(NodeId(n)).size(), 3u * k) << "K = " << k << ", n" << n;
    }
  }
}

// After failovers piled the primaries on one node (each promotion also dropped the old primary's
// copy), repairs bring every bucket back to three copies first; then handoffs (no data moved)
// bring every node within one primary of the others, and the plans stop.
TEST(BalancerTest, HandoffsSpreadPrimariesWithinOne) {
  ShardMap map =
      *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 8, .replication_factor = 3});
  ShardMapEdit pile(map.epoch());
  for (const BucketPlacement& bucket : map.buckets()) {
    if (bucket.replicas.front() != NodeId(1)) pile.PromoteReplica(bucket.id, NodeId(1));
  }
  map = *Apply(map, pile);
  LoadReport load;
  for (uint32_t b = 0; b < 8; ++b) load.buckets[BucketId(b)].bytes = 10;
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  int handoffs = 0;
  for (int round = 0; round < 20; ++round) {
    auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 2});
    ASSERT_TRUE(plan.ok());
    if (plan->empty()) break;
    for (const MoveIntent& move : plan->moves) {
      const bool handoff =
          move.source.size() == move.destination.size() &&
          std::is_permutation(move.source.begin(), move.source.end(), move.destination.begin());
      if (handoff) {
        EXPECT_NE(move.source.front(), move.destination.front()) << move.DebugString();
        ++handoffs;
      } else {
        // A repair keeps the primary and adds a copy.
        EXPECT_EQ(move.reason, MoveReason::kRepair) << move.DebugString();
        EXPECT_EQ(move.source.front(), move.destination.front()) << move.DebugString();
      }
    }
    auto next = ExecutePlan(map, *plan, &ids, &load);
    ASSERT_TRUE(next.ok()) << next.status();
    map = *std::move(next);
  }
  std::map<NodeId, int> primaries;
  for (const BucketPlacement& bucket : map.buckets()) {
    EXPECT_EQ(bucket.replicas.size(), 3u) << bucket.DebugString();
    ++primaries[bucket.replicas.front()];
  }
  ASSERT_EQ(primaries.size(), 3u);
  for (const auto& [node, count] : primaries) {
    EXPECT_GE(count, 2) << node.DebugString();
    EXPECT_LE(count, 3) << node.DebugString();
  }
  EXPECT_EQ(handoffs, 5);  // 8 on n1 -> 3, 3, 2: each handoff narrows the spread
  EXPECT_TRUE(Balancer::Plan(map, load, {.max_moves_per_node = 2})->empty());
}

// A join and a leave at K = 3 move exactly the copies they must (paper 001 §3.2-3.3): the
// joining node receives its share, a quarter of the 96 copies, one copy per move, and the leaving
// node's 24 copies go elsewhere. Algorithm 2 works on one unit per copy; the units of a bucket
// form a group (partition/balance.h), so that the greedy never wants a second copy of a bucket on
// a node that holds one. Without the groups its next step, after the first copy reached n4, was
// always to give n4 another copy of the same bucket: the plan came back empty with n4 holding 1
// copy of 96.
TEST(BalancerTest, AJoinAndALeaveAtKThreeMoveOnlyTheCopiesTheyMust) {
  ShardMap map =
      *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 32, .replication_factor = 3});
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(4)));
  LoadReport load;
  for (uint32_t b = 0; b < 32; ++b) load.buckets[BucketId(b)].bytes = 117'000 + b * 37;
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  // Plans and applies to a fixed point; returns the copies moved (handoffs move none).
  const auto run = [&] {
    int copies_moved = 0;
    for (int round = 0; round < kMaxRounds; ++round) {
      auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 1});
      EXPECT_TRUE(plan.ok()) << plan.status();
      if (!plan.ok() || plan->empty()) return copies_moved;
      for (const MoveIntent& move : plan->moves) {
        for (NodeId node : move.destination) {
          if (std::find(move.source.begin(), move.source.end(), node) == move.source.end()) {
            ++copies_moved;
          }
        }
      }
      auto next = ExecutePlan(map, *plan, &ids, &load);
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok()) return copies_moved;
      map = *std::move(next);
    }
    ADD_FAILURE() << "no fixed point";
    return copies_moved;
  };
  const auto copies = [&] {
    std::map<NodeId, int> out;
    for (const BucketPlacement& bucket : map.buckets()) {
      EXPECT_EQ(bucket.replicas.size(), 3u);
      for (NodeId node : bucket.replicas) ++out[node];
    }
    return out;
  };

  EXPECT_EQ(run(), 24);
  for (const auto& [node, count] : copies()) EXPECT_EQ(count, 24) << node.DebugString();

  map = *Apply(map, ShardMapEdit(map.epoch()).SetNodeState(NodeId(1), NodeState::kLeaving));
  EXPECT_EQ(run(), 24);
  const std::map<NodeId, int> after = copies();
  EXPECT_FALSE(after.contains(NodeId(1)));
  for (const auto& [node, count] : after) EXPECT_EQ(count, 32) << node.DebugString();
}

TEST(BalancerTest, ANodeNearItsDiskReserveReceivesOnlyWhatFits) {
  // n1 holds 8 buckets of 10 bytes, n2 has just joined with room for 25 bytes: it takes 2
  // buckets, not 4, and planning again with the moves in flight adds nothing.
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 8});
  map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(2)));
  LoadReport load;
  for (uint32_t b = 0; b < 8; ++b) load.buckets[BucketId(b)].bytes = 10;
  load.node_room_bytes[NodeId(2)] = 25;
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 2u) << plan->DebugString();
  IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
  ShardMap started = *Apply(map, *ToBeginEdit(map, *plan, &ids));
  auto again = Balancer::Plan(started, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->moves.empty()) << again->DebugString();
  // No room at all: nothing is planned; once space is back, the usual 4 moves.
  load.node_room_bytes[NodeId(2)] = 0;
  EXPECT_TRUE(Balancer::Plan(map, load, {.max_moves_per_node = 8})->moves.empty());
  load.node_room_bytes.erase(NodeId(2));
  EXPECT_EQ(Balancer::Plan(map, load, {.max_moves_per_node = 8})->moves.size(), 4u);
}

TEST(BalancerTest, DrainPrefersNodesWithRoomButAlwaysDrains) {
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1, 2, 3}), .bucket_count = 6});
  map = *Apply(map, ShardMapEdit(map.epoch()).SetNodeState(NodeId(3), NodeState::kLeaving));
  LoadReport load;
  for (uint32_t b = 0; b < 6; ++b) load.buckets[BucketId(b)].bytes = 10;
  load.node_room_bytes[NodeId(1)] = 0;
  auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 2u) << plan->DebugString();
  for (const MoveIntent& move : plan->moves) EXPECT_EQ(move.destination, Nodes({2}));
  // Nobody has room: n3 is drained all the same (its moves wait for space at the destination).
  load.node_room_bytes[NodeId(2)] = 0;
  plan = Balancer::Plan(map, load, {.max_moves_per_node = 8});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->moves.size(), 2u) << plan->DebugString();
  for (const MoveIntent& move : plan->moves) EXPECT_EQ(move.reason, MoveReason::kDrain);
}

TEST(BalancerTest, SplitsAboveThetaMaxAndMergesBelowThetaMin) {
  ShardMap map = *ShardMap::Initial({.nodes = Nodes({1}), .bucket_count = 4});
  LoadReport load;
  load.buckets[BucketId(0)] = {.bytes = 100, .hits_ema = 0, .split_point = uint64_t{1} << 60};
  load.buckets[BucketId(1)].bytes = 30;
  load.buckets[BucketId(2)].bytes = 1;
  load.buckets[BucketId(3)].bytes = 2;
  auto plan = Balancer::Plan(map, load, {.theta_max_bytes = 80, .theta_min_bytes = 10});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->splits,
            (std::vector<SplitIntent>{{.bucket = BucketId(0), .at = uint64_t{1} << 60}}));
  EXPECT_EQ(plan->merges, (std::vector<MergeIntent>{{.left = BucketId(2), .right = BucketId(3)}}));
  EXPECT_FALSE(Balancer::Plan(map, load, {.theta_max_bytes = 80, .theta_min_bytes = 41}).ok());
  EXPECT_FALSE(Balancer::Plan(map, load, {.max_moves_per_node = 0}).ok());
  // The floor on the bucket count: four buckets merge into three, never into fewer than four.
  auto floored =
      Balancer::Plan(map, load, {.theta_max_bytes = 80, .theta_min_bytes = 10, .min_buckets = 3});
  ASSERT_TRUE(floored.ok());
  EXPECT_EQ(floored->merges.size(), 1u);
  floored =
      Balancer::Plan(map, load, {.theta_max_bytes = 80, .theta_min_bytes = 10, .min_buckets = 4});
  ASSERT_TRUE(floored.ok());
  EXPECT_TRUE(floored->merges.empty());
}

// The loop the coordinator runs: plan -> execute until the plan is empty. Ends balanced
// (Algorithm 2's bound), drained, fully replicated, and with an empty re-plan.
RC_GTEST_PROP(BalancerProperty, PlanApplyLoopConvergesToABalancedFixedPoint, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(1, 6);
  const uint32_t buckets = *rc::gen::inRange<uint32_t>(1, 40);
  std::vector<NodeId> ids;
  for (uint32_t n = 0; n < nodes; ++n) ids.push_back(NodeId(n));
  ShardMap map = *ShardMap::Initial({.nodes = ids, .bucket_count = buckets});
  ShardMapEdit change(map.epoch());
  const uint32_t added = *rc::gen::inRange<uint32_t>(0, 3);
  for (uint32_t n = 0; n < added; ++n) change.AddNode(NodeId(100 + n));
  const bool drain = nodes + added > 1 && *rc::gen::arbitrary<bool>();
  if (drain) change.SetNodeState(NodeId(0), NodeState::kLeaving);
  map = *Apply(map, change);
  LoadReport load;
  for (uint32_t b = 0; b < buckets; ++b) {
    load.buckets[BucketId(b)].bytes = *rc::gen::inRange<uint64_t>(0, 1000);
  }
  const bool split_merge = *rc::gen::arbitrary<bool>();
  const BalancerOptions options{
      .theta_max_bytes = split_merge ? 600u : 0u,
      .theta_min_bytes = split_merge ? 100u : 0u,
      .max_moves_per_node = *rc::gen::inRange<uint32_t>(1, 4),
      .mode = *rc::gen::element(TransitionMode::kCopyThenSwitch, TransitionMode::kSwitchThenCopy)};
  int rounds = 0;
  map = RunToFixedPoint(std::move(map), &load, options, &rounds);
  RC_TAG(rounds);

  if (drain) RC_ASSERT(map.BucketsOf(NodeId(0)).empty());
  const auto loads = Loads(map, load);
  uint64_t max_load = 0;
  uint64_t min_load = UINT64_MAX;
  NodeId most_loaded;
  for (const auto& [node, node_load] : loads) {
    if (node_load >= max_load) {
      max_load = node_load;
      most_loaded = node;
    }
    min_load = std::min(min_load, node_load);
  }
  uint64_t smallest = UINT64_MAX;
  for (const BucketPlacement& bucket : map.buckets()) {
    RC_ASSERT(bucket.replicas.size() == 1u);
    if (bucket.replicas[0] == most_loaded) smallest = std::min(smallest, WeightOf(load, bucket.id));
    if (split_merge) RC_ASSERT(load.BytesOf(bucket.id) <= options.theta_max_bytes);
  }
  if (max_load > 0) RC_ASSERT(max_load - min_load <= smallest);
}

// With K = 2 or 3 the loop still converges while every move changes one replica (Apply
// refuses anything else): each bucket ends with min(K, active) distinct active replicas, and a
// drained node holds none.
RC_GTEST_PROP(BalancerProperty, ReplicatedPlanApplyLoopKeepsKDistinctCopies, ()) {
  const uint32_t k = *rc::gen::inRange<uint32_t>(2, 4);
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(k, 6);
  const uint32_t buckets = *rc::gen::inRange<uint32_t>(1, 30);
  std::vector<NodeId> ids;
  for (uint32_t n = 0; n < nodes; ++n) ids.push_back(NodeId(n));
  ShardMap map =
      *ShardMap::Initial({.nodes = ids, .bucket_count = buckets, .replication_factor = k});
  ShardMapEdit change(map.epoch());
  const uint32_t added = *rc::gen::inRange<uint32_t>(0, 3);
  for (uint32_t n = 0; n < added; ++n) change.AddNode(NodeId(100 + n));
  const bool drain = nodes + added > k && *rc::gen::arbitrary<bool>();
  if (drain) change.SetNodeState(NodeId(0), NodeState::kLeaving);
  map = *Apply(map, change);
  LoadReport load;
  for (uint32_t b = 0; b < buckets; ++b) {
    load.buckets[BucketId(b)].bytes = *rc::gen::inRange<uint64_t>(0, 1000);
  }
  const BalancerOptions options{
      .max_moves_per_node = *rc::gen::inRange<uint32_t>(1, 4),
      .mode = *rc::gen::element(TransitionMode::kCopyThenSwitch, TransitionMode::kSwitchThenCopy)};
  int rounds = 0;
  map = RunToFixedPoint(std::move(map), &load, options, &rounds);
  RC_TAG(rounds);
  const size_t copies = std::min<size_t>(k, map.ActiveNodes().size());
  for (const BucketPlacement& bucket : map.buckets()) {
    RC_ASSERT(bucket.replicas.size() == copies);
    for (NodeId node : bucket.replicas) RC_ASSERT(map.FindNode(node)->state == NodeState::kActive);
  }
  if (drain) RC_ASSERT(map.BucketsOf(NodeId(0)).empty());
}

// A join at K = 3 takes the new node's copies from backups, never from a primary's copy (that
// would first hand the primary to a backup that stays, and the primaries would then need evening
// out again): the only handoffs are the ones that give the new node its share of primaries. With
// empty buckets (every copy weighs the same) and with buckets of different sizes.
TEST(BalancerTest, AJoinAtKThreeMovesBackupCopiesAndHandsOffOnlyTheNewNodesPrimaries) {
  for (bool sized : {false, true}) {
    SCOPED_TRACE(sized ? "buckets of different sizes" : "empty buckets");
    ShardMap map = *ShardMap::Initial(
        {.nodes = Nodes({1, 2, 3}), .bucket_count = 32, .replication_factor = 3});
    map = *Apply(map, ShardMapEdit(map.epoch()).AddNode(NodeId(4)));
    LoadReport load;
    if (sized) {
      for (uint32_t b = 0; b < 32; ++b) load.buckets[BucketId(b)].bytes = 117'000 + b * 37;
    }
    IdSource ids{.next_move = MoveId(1), .next_bucket = BucketId(0)};
    int primary_copies_replaced = 0;
    int handoffs = 0;
    for (int round = 0; round < kMaxRounds; ++round) {
      auto plan = Balancer::Plan(map, load, {.max_moves_per_node = 2});
      ASSERT_TRUE(plan.ok()) << plan.status();
      if (plan->empty()) break;
      for (const MoveIntent& move : plan->moves) {
        const auto& to = move.destination;
        if (std::find(to.begin(), to.end(), move.source.front()) == to.end()) {
          ++primary_copies_replaced;
          ADD_FAILURE() << "replaces the primary's copy: " << move.DebugString();
        } else if (move.source.front() != to.front()) {
          ++handoffs;
        }
      }
      auto next = ExecutePlan(map, *plan, &ids, &load);
      ASSERT_TRUE(next.ok()) << next.status();
      map = *std::move(next);
    }
    EXPECT_EQ(primary_copies_replaced, 0);
    EXPECT_EQ(handoffs, 8);  // 32 primaries over 4 nodes: n4 leads 8, each by a handoff
    std::map<NodeId, int> copies;
    std::map<NodeId, int> primaries;
    for (const BucketPlacement& bucket : map.buckets()) {
      for (NodeId node : bucket.replicas) ++copies[node];
      ++primaries[bucket.replicas.front()];
    }
    for (uint32_t n = 1; n <= 4; ++n) {
      EXPECT_EQ(copies[NodeId(n)], 24) << n;
      EXPECT_EQ(primaries[NodeId(n)], 8) << n;
    }
  }
}

}  // namespace
}  // namespace shoal::cluster
