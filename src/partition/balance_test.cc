#include "src/partition/balance.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "src/common/random.h"

namespace shoal::partition {
namespace {

constexpr uint32_t kNodeIds = 12;  // node ids are drawn from [0, kNodeIds)

BalanceBucket B(uint32_t id, uint64_t size, std::optional<uint32_t> owner) {
  BalanceBucket bucket{BucketId(id), size, std::nullopt};
  if (owner.has_value()) bucket.owner = NodeId(*owner);
  return bucket;
}

std::vector<NodeId> Nodes(std::initializer_list<uint32_t> ids) {
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

// The final owner of each bucket id.
std::map<BucketId, NodeId> OwnersById(const std::vector<BalanceBucket>& buckets,
                                      const BalanceResult& result) {
  std::map<BucketId, NodeId> owners;
  for (size_t i = 0; i < buckets.size(); ++i) owners[buckets[i].id] = result.owners[i];
  return owners;
}

std::vector<BalanceBucket> Applied(std::vector<BalanceBucket> buckets,
                                   const BalanceResult& result) {
  for (size_t i = 0; i < buckets.size(); ++i) buckets[i].owner = result.owners[i];
  return buckets;
}

// `count` buckets of size 1 with ids 0..count-1: the first `on_first` on node 1, the rest on 2.
std::vector<BalanceBucket> UnitBuckets(uint32_t count, uint32_t on_first) {
  std::vector<BalanceBucket> buckets;
  for (uint32_t i = 0; i < count; ++i) buckets.push_back(B(i, 1, i < on_first ? 1 : 2));
  return buckets;
}

// ---- generators ------------------------------------------------------------------------------

std::vector<NodeId> GenNodes() {
  const auto ids = *rc::gen::nonEmpty(
      rc::gen::container<std::set<uint32_t>>(rc::gen::inRange<uint32_t>(0, kNodeIds)));
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

uint64_t GenSize() {
  return *rc::gen::weightedOneOf<uint64_t>({
      {1, rc::gen::just<uint64_t>(0)},
      {4, rc::gen::inRange<uint64_t>(1, 16)},
      {4, rc::gen::inRange<uint64_t>(1, 1000)},
      {1, rc::gen::inRange<uint64_t>(1, uint64_t{1} << 40)},
  });
}

// Buckets with distinct ids; owners among `nodes` only (all assigned) or anywhere (none, a
// member, or a node that is leaving).
std::vector<BalanceBucket> GenBuckets(const std::vector<NodeId>& nodes, bool all_assigned) {
  const size_t count = *rc::gen::inRange<size_t>(0, 60);
  std::vector<BalanceBucket> buckets;
  for (size_t i = 0; i < count; ++i) {
    BalanceBucket bucket{BucketId(static_cast<uint32_t>(i * 7 + 3)), GenSize(), std::nullopt};
    bucket.keep = *rc::gen::inRange<int>(0, 4) == 0;  // the properties hold with kept units
    if (all_assigned) {
      bucket.owner = *rc::gen::elementOf(nodes);
    } else {
      const int code = *rc::gen::inRange<int>(-1, static_cast<int>(kNodeIds));
      if (code >= 0) bucket.owner = NodeId(static_cast<uint32_t>(code));
    }
    buckets.push_back(bucket);
  }
  return buckets;
}

// `values` in a random order drawn by RapidCheck.
template <typename T>
std::vector<T> Shuffled(std::vector<T> values) {
  Random random(*rc::gen::arbitrary<uint64_t>());
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[random.Uniform(i)]);
  return values;
}

// The most loaded node in the order of balance.h: highest load, then highest id.
size_t MostLoaded(const std::vector<uint64_t>& loads) {
  size_t best = 0;
  for (size_t i = 1; i < loads.size(); ++i) {
    if (loads[i] >= loads[best]) best = i;
  }
  return best;
}

// ---- properties ------------------------------------------------------------------------------

RC_GTEST_PROP(BalanceProperty, TerminatesAndAssignsEveryBucket, ()) {
  const std::vector<NodeId> nodes = GenNodes();
  const std::vector<BalanceBucket> buckets = GenBuckets(nodes, /*all_assigned=*/false);
  auto result = Balance(buckets, nodes);
  RC_ASSERT(result.ok());
  RC_ASSERT(result->owners.size() == buckets.size());
  RC_ASSERT(result->step2_moves <
            BalanceOptions::kMinMaxSteps + BalanceOptions::kDefaultMaxStepsPerBucket * 60);
  size_t moved = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    RC_ASSERT(std::count(nodes.begin(), nodes.end(), result->owners[i]) == 1);
    if (buckets[i].owner != result->owners[i]) {
      RC_ASSERT(moved < result->moves.size());
      const BalanceMove expected{buckets[i].id, buckets[i].owner, result->owners[i]};
      RC_ASSERT(result->moves[moved] == expected);
      ++moved;
    }
  }
  RC_ASSERT(moved == result->moves.size());
  RC_ASSERT(result->loads == NodeLoads(Applied(buckets, *result), result->nodes));
}

// With or without room limits (every bucket assigned, so every step is a step-2 move): each
// move narrows its pair, the spread never widens, and a limited node receives at most its room.
RC_GTEST_PROP(BalanceProperty, EachMoveNarrowsAndTheSpreadNeverWidens, ()) {
  const std::vector<NodeId> nodes = GenNodes();
  const std::vector<BalanceBucket> buckets = GenBuckets(nodes, /*all_assigned=*/true);
  BalanceOptions options;
  if (*rc::gen::arbitrary<bool>()) {
    for (NodeId node : nodes) {
      if (*rc::gen::arbitrary<bool>()) options.room[node] = GenSize();
    }
  }
  auto result = Balance(buckets, nodes, options);
  RC_ASSERT(result.ok());
  RC_ASSERT(result->step2_moves == result->steps.size());  // nothing was unassigned

  std::map<BucketId, uint64_t> size_of;
  for (const BalanceBucket& bucket : buckets) size_of[bucket.id] = bucket.size;
  std::map<NodeId, uint64_t> received;
  std::vector<uint64_t> loads = NodeLoads(buckets, nodes);
  const uint64_t initial_spread = MaxMinSpread(loads);
  auto index = [&](NodeId node) {
    return static_cast<size_t>(std::find(nodes.begin(), nodes.end(), node) - nodes.begin());
  };
  for (const BalanceMove& step : result->steps) {
    RC_ASSERT(step.from.has_value());
    received[step.to] += size_of[step.bucket];
    const size_t from = index(*step.from);
    const size_t to = index(step.to);
    const uint64_t spread_before = MaxMinSpread(loads);
    RC_ASSERT(loads[from] >= loads[to]);  // from is Pmax
    const uint64_t pair_before = loads[from] - loads[to];
    loads[from] -= size_of[step.bucket];
    loads[to] += size_of[step.bucket];
    const uint64_t pair_after =
        loads[from] > loads[to] ? loads[from] - loads[to] : loads[to] - loads[from];
    RC_ASSERT(pair_after < pair_before);
    RC_ASSERT(MaxMinSpread(loads) <= spread_before);
  }
  for (const auto& [node, room] : options.room) RC_ASSERT(received[node] <= room);
  RC_ASSERT(loads == NodeLoads(Applied(buckets, *result), nodes));
  RC_ASSERT(MaxMinSpread(loads) <= initial_spread);
}

RC_GTEST_PROP(BalanceProperty, EndsWithinTheSmallestBucketOfTheMostLoadedNode, ()) {
  const std::vector<NodeId> nodes = GenNodes();
  const bool all_assigned = *rc::gen::arbitrary<bool>();
  const std::vector<BalanceBucket> buckets = GenBuckets(nodes, all_assigned);
  auto result = Balance(buckets, nodes);
  RC_ASSERT(result.ok());
  const size_t pmax = MostLoaded(result->loads);
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (result->owners[i] == result->nodes[pmax] && buckets[i].size > 0) {
      smallest = std::min(smallest, buckets[i].size);
    }
  }
  if (smallest == std::numeric_limits<uint64_t>::max()) smallest = 0;  // Pmax holds no load
  RC_ASSERT(MaxMinSpread(result->loads) <= smallest);
}

RC_GTEST_PROP(BalanceProperty, DeterministicAndIndependentOfInputOrder, ()) {
  const std::vector<NodeId> nodes = GenNodes();
  const std::vector<BalanceBucket> buckets = GenBuckets(nodes, *rc::gen::arbitrary<bool>());
  auto first = Balance(buckets, nodes);
  auto again = Balance(buckets, nodes);
  RC_ASSERT(first.ok() && again.ok());
  RC_ASSERT(first->owners == again->owners);
  RC_ASSERT(first->steps == again->steps);
  RC_ASSERT(first->moves == again->moves);

  const auto shuffled_buckets = Shuffled(buckets);
  const auto shuffled_nodes = Shuffled(nodes);
  auto shuffled = Balance(shuffled_buckets, shuffled_nodes);
  RC_ASSERT(shuffled.ok());
  RC_ASSERT(OwnersById(buckets, *first) == OwnersById(shuffled_buckets, *shuffled));
  RC_ASSERT(first->steps == shuffled->steps);
  RC_ASSERT(first->loads == shuffled->loads);
}

RC_GTEST_PROP(BalanceProperty, RoomForEverythingIsThePapersAlgorithm, ()) {
  const std::vector<NodeId> nodes = GenNodes();
  const std::vector<BalanceBucket> buckets = GenBuckets(nodes, *rc::gen::arbitrary<bool>());
  BalanceOptions options;
  for (NodeId node : nodes) options.room[node] = std::numeric_limits<uint64_t>::max();
  auto limited = Balance(buckets, nodes, options);
  auto plain = Balance(buckets, nodes);
  RC_ASSERT(limited.ok() && plain.ok());
  RC_ASSERT(limited->steps == plain->steps);
  RC_ASSERT(limited->owners == plain->owners);
}

// ---- unit tests ------------------------------------------------------------------------------

// Paper 004 §5.1 orders equally loaded partitions by the load of their node; with nodes as the
// unit the tie-break is the id: among equal loads the higher id is "more loaded" (it gives) and
// the lower id is "less loaded" (it receives).
TEST(BalanceTest, TieBreakHigherIdGivesLowerIdReceives) {
  const std::vector<BalanceBucket> buckets = {B(1, 1, 1), B(2, 1, 1), B(3, 1, 2), B(4, 1, 2)};
  auto result = Balance(buckets, Nodes({1, 2, 3}));
  ASSERT_TRUE(result.ok());
  // Pmax: nodes 1 and 2 both hold 2; node 2 has the higher id and gives its smallest bucket
  // (sizes tie: the lowest id, 3) to node 3. Then loads are 2,1,1: Pmax = 1, Pmin = 2 (lower id
  // than 3), and moving 1 would not narrow |2 - 1|, so it stops.
  ASSERT_EQ(result->steps.size(), 1u);
  EXPECT_EQ(result->steps[0], (BalanceMove{BucketId(3), NodeId(2), NodeId(3)}));
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{2, 1, 1}));
}

// Algorithm 2 only ever looks at Pmax: when its smallest bucket is too big to narrow the gap it
// stops, even if another node with the same load could give. Here node 2 (load 2, higher id
// than node 1) is Pmax with a single bucket of 2 = the gap to node 3, so node 3 stays empty.
TEST(BalanceTest, StopsWhenTheMostLoadedNodeOnlyHasABigBucket) {
  const std::vector<BalanceBucket> buckets = {B(1, 1, 1), B(2, 1, 1), B(3, 2, 2)};
  auto result = Balance(buckets, Nodes({1, 2, 3}));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->steps.empty());
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{2, 2, 0}));
}

TEST(BalanceTest, KeptUnitsMoveOnlyWhenNoOtherPasses) {
  // Four equal units on node 1, the lowest id kept: the two that move are the next ones.
  std::vector<BalanceBucket> buckets = {B(0, 1, 1), B(1, 1, 1), B(2, 1, 1), B(3, 1, 1)};
  buckets[0].keep = true;
  auto result = Balance(buckets, Nodes({1, 2}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->moves, (std::vector<BalanceMove>{{BucketId(1), NodeId(1), NodeId(2)},
                                                     {BucketId(2), NodeId(1), NodeId(2)}}));
  // Node 1's other unit is too big to narrow the gap (22 - 18): the kept one moves.
  buckets = {B(0, 2, 1), B(1, 20, 1), B(2, 18, 2)};
  buckets[0].keep = true;
  result = Balance(buckets, Nodes({1, 2}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->moves, (std::vector<BalanceMove>{{BucketId(0), NodeId(1), NodeId(2)}}));
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{20, 20}));
}

TEST(BalanceTest, UnassignedGoLargestFirstToTheLeastLoaded) {
  // Equal loads: the lowest id receives first. Sizes 4, 2, 2, 1 placed in that order.
  const std::vector<BalanceBucket> buckets = {B(9, 1, {}), B(7, 2, {}), B(8, 4, {}), B(6, 2, {})};
  auto result = Balance(buckets, Nodes({20, 10}));
  ASSERT_TRUE(result.ok());
  const std::vector<BalanceMove> expected = {
      {BucketId(8), std::nullopt, NodeId(10)},  // 4 -> n10 (both 0, lower id)
      {BucketId(6), std::nullopt, NodeId(20)},  // 2 -> n20 (size tie: lower bucket id first)
      {BucketId(7), std::nullopt, NodeId(20)},  // 2 -> n20 (2 < 4)
      {BucketId(9), std::nullopt, NodeId(10)},  // 1 -> n10 (4 = 4: lower id)
  };
  EXPECT_EQ(result->steps, expected);
  EXPECT_EQ(result->nodes, Nodes({10, 20}));
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{5, 4}));
  EXPECT_EQ(result->step2_moves, 0u);
}

TEST(BalanceTest, BucketsOfALeavingNodeAreReassigned) {
  // Node 3 leaves: it is absent from the target set, its buckets are unassigned.
  const std::vector<BalanceBucket> buckets = {B(1, 1, 1), B(2, 1, 2), B(3, 1, 3), B(4, 1, 3)};
  auto result = Balance(buckets, Nodes({1, 2}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{2, 2}));
  ASSERT_EQ(result->moves.size(), 2u);
  EXPECT_EQ(result->moves[0], (BalanceMove{BucketId(3), NodeId(3), NodeId(1)}));
  EXPECT_EQ(result->moves[1], (BalanceMove{BucketId(4), NodeId(3), NodeId(2)}));
}

TEST(BalanceTest, NewNodeTakesUpToTheAverage) {
  // Two nodes with 6 unit buckets each and a new node: it ends with 4, the others with 4.
  const std::vector<BalanceBucket> buckets = UnitBuckets(12, 6);
  auto result = Balance(buckets, Nodes({1, 2, 3}));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{4, 4, 4}));
  EXPECT_EQ(result->moves.size(), 4u);  // the optimum: 12/3
  for (const BalanceMove& move : result->moves) EXPECT_EQ(move.to, NodeId(3));
}

TEST(BalanceTest, ANodeWithoutRoomReceivesNothing) {
  // Node 3 joins with no room: nodes 1 and 2 balance between themselves only.
  const std::vector<BalanceBucket> buckets = UnitBuckets(12, 8);
  BalanceOptions options;
  options.room[NodeId(3)] = 0;
  auto result = Balance(buckets, Nodes({1, 2, 3}), options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{6, 6, 0}));
  for (const BalanceMove& move : result->moves) EXPECT_EQ(move.to, NodeId(2));
}

TEST(BalanceTest, ANodeReceivesUpToItsRoom) {
  // Node 3 has room for 2 of the 4 units it would take; the rest stays where it is, since
  // nodes 1 and 2 are already even.
  const std::vector<BalanceBucket> buckets = UnitBuckets(12, 6);
  BalanceOptions options;
  options.room[NodeId(3)] = 2;
  auto result = Balance(buckets, Nodes({1, 2, 3}), options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->loads[2], 2u);
  EXPECT_EQ(result->moves.size(), 2u);
  // A bucket bigger than the room is never given to it.
  const std::vector<BalanceBucket> big = {B(1, 5, 1), B(2, 5, 1)};
  options.room[NodeId(3)] = 4;
  auto none = Balance(big, Nodes({1, 3}), options);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->moves.empty());
}

TEST(BalanceTest, PlacementsGoWhereThereIsRoomOrElseToTheLeastLoaded) {
  // Node 3 leaves. Its first bucket fits only on node 2 (node 1, the least loaded, has no room);
  // nobody has room for the second, which goes to the least loaded node all the same.
  const std::vector<BalanceBucket> buckets = {B(1, 1, 1), B(2, 3, 2), B(3, 4, 3), B(4, 9, 3)};
  BalanceOptions options;
  options.room[NodeId(1)] = 0;
  options.room[NodeId(2)] = 4;
  auto result = Balance(buckets, Nodes({1, 2}), options);
  ASSERT_TRUE(result.ok());
  // Largest first: bucket 4 (9) fits nowhere, so node 1 (load 1) takes it; bucket 3 (4) fits
  // on node 2 only.
  EXPECT_EQ(result->steps[0], (BalanceMove{BucketId(4), std::nullopt, NodeId(1)}));
  EXPECT_EQ(result->steps[1], (BalanceMove{BucketId(3), std::nullopt, NodeId(2)}));
}

TEST(BalanceTest, ZeroSizeBucketsAreNeverChosenToMove) {
  // The smallest bucket on node 1 has size 0; the algorithm moves the 3 instead.
  const std::vector<BalanceBucket> buckets = {B(1, 0, 1), B(2, 3, 1), B(3, 5, 1)};
  auto result = Balance(buckets, Nodes({1, 2}));
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->moves.size(), 1u);
  EXPECT_EQ(result->moves[0], (BalanceMove{BucketId(2), NodeId(1), NodeId(2)}));
  EXPECT_EQ(result->loads, (std::vector<uint64_t>{5, 3}));
}

TEST(BalanceTest, SafetyCapReturnsInternal) {
  std::vector<BalanceBucket> buckets;
  for (uint32_t i = 0; i < 8; ++i) buckets.push_back(B(i, 1, 1));
  auto capped = Balance(buckets, Nodes({1, 2}), BalanceOptions{.max_steps = 2, .room = {}});
  EXPECT_EQ(capped.status().code(), StatusCode::kInternal);
  auto enough = Balance(buckets, Nodes({1, 2}), BalanceOptions{.max_steps = 4, .room = {}});
  ASSERT_TRUE(enough.ok());
  EXPECT_EQ(enough->step2_moves, 4u);
}

TEST(BalanceTest, RejectsBadInputs) {
  const std::vector<BalanceBucket> one = {B(1, 1, 1)};
  EXPECT_EQ(Balance(one, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Balance(one, Nodes({1, 1})).status().code(), StatusCode::kInvalidArgument);
  const std::vector<BalanceBucket> same_id = {B(1, 1, 1), B(1, 2, 1)};
  EXPECT_EQ(Balance(same_id, Nodes({1})).status().code(), StatusCode::kInvalidArgument);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const std::vector<BalanceBucket> overflow = {B(1, max, 1), B(2, 1, 1)};
  EXPECT_EQ(Balance(overflow, Nodes({1})).status().code(), StatusCode::kInvalidArgument);
  auto empty = Balance({}, Nodes({1}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->owners.empty());
}

TEST(BalanceTest, LoadHelpers) {
  const std::vector<BalanceBucket> buckets = {B(1, 5, 1), B(2, 3, 2), B(3, 4, 9), B(4, 2, {})};
  EXPECT_EQ(NodeLoads(buckets, Nodes({2, 1, 3})), (std::vector<uint64_t>{3, 5, 0}));
  EXPECT_EQ(LoadSpread(buckets, Nodes({1, 2, 3})), 5u);
  EXPECT_EQ(MaxMinSpread(std::vector<uint64_t>{}), 0u);
}

}  // namespace
}  // namespace shoal::partition
