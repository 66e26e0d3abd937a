#include "src/partition/ring_scheme.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

SchemeOptions RingOptions(uint32_t vnodes, uint64_t seed = 0) {
  SchemeOptions options;
  options.kind = SchemeKind::kRing;
  options.vnodes = vnodes;
  options.hash_seed = seed;
  return options;
}

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

// A ring whose tokens are all chosen by hand: `nodes[i]` gets `tokens[i]`, added in that order.
RingScheme ManualRing(const std::vector<std::pair<NodeId, std::vector<uint64_t>>>& nodes) {
  const NodeId scaffold(0xffffffff);
  const std::array<NodeId, 1> initial = {scaffold};
  RingScheme ring(RingOptions(1), initial);
  for (const auto& [node, tokens] : nodes) EXPECT_TRUE(ring.AddNodeWithTokens(node, tokens).ok());
  EXPECT_TRUE(ring.RemoveNode(scaffold).ok());
  EXPECT_TRUE(ring.CheckInvariants().ok());
  return ring;
}

// The owner by Definition 6.1 computed the plain way, as the reference for the radix index.
NodeId ReferenceOwner(const RingScheme& ring, uint64_t point) {
  auto tokens = ring.tokens();
  auto it = std::lower_bound(tokens.begin(), tokens.end(), point);
  const size_t i = it == tokens.end() ? 0 : static_cast<size_t>(it - tokens.begin());
  return ring.token_owners()[i];
}

TEST(RingSchemeTest, VnodeTokenHashesNodeThenVnodeLittleEndian) {
  const char bytes[8] = {0x04, 0x03, 0x02, 0x01, 0x07, 0x00, 0x00, 0x00};
  EXPECT_EQ(RingScheme::VnodeToken(NodeId(0x01020304), 7, 99),
            Hash64(std::string_view(bytes, sizeof(bytes)), 99));
  EXPECT_NE(RingScheme::VnodeToken(NodeId(1), 0, 0), RingScheme::VnodeToken(NodeId(1), 0, 1));
}

TEST(RingSchemeTest, HoldsVnodesTokensPerNode) {
  const std::vector<NodeId> nodes = NodeRange(1, 3);
  RingScheme ring(RingOptions(5, 42), nodes);
  ASSERT_EQ(ring.tokens().size(), 15u);
  for (NodeId node : nodes) {
    for (uint32_t i = 0; i < 5; ++i) {
      const uint64_t token = RingScheme::VnodeToken(node, i, 42);
      auto it = std::lower_bound(ring.tokens().begin(), ring.tokens().end(), token);
      ASSERT_NE(it, ring.tokens().end());
      EXPECT_EQ(*it, token);
      EXPECT_EQ(ring.token_owners()[static_cast<size_t>(it - ring.tokens().begin())], node);
    }
  }
  EXPECT_TRUE(std::is_sorted(ring.tokens().begin(), ring.tokens().end()));
  ASSERT_TRUE(ring.CheckInvariants().ok());
}

TEST(RingSchemeTest, OwnerIsNodeOfFirstTokenAtOrAbovePoint) {
  // Definition 6.1: n2 owns [0, 100] and (300, max], n3 owns (100, 300].
  RingScheme ring = ManualRing({{NodeId(2), {100}}, {NodeId(3), {200, 300}}});
  EXPECT_EQ(ring.Owner(Point(0)), NodeId(2));
  EXPECT_EQ(ring.Owner(Point(99)), NodeId(2));
  EXPECT_EQ(ring.Owner(Point(100)), NodeId(2));  // exactly on a token
  EXPECT_EQ(ring.Owner(Point(101)), NodeId(3));
  EXPECT_EQ(ring.Owner(Point(200)), NodeId(3));
  EXPECT_EQ(ring.Owner(Point(300)), NodeId(3));
  EXPECT_EQ(ring.Owner(Point(301)), NodeId(2));  // above the highest token: wraps
  EXPECT_EQ(ring.Owner(Point(kMax)), NodeId(2));
  EXPECT_EQ(ring.RangesOf(NodeId(2)), (std::vector<PointInterval>{{0, 100}, {301, kMax}}));
  EXPECT_EQ(ring.RangesOf(NodeId(3)), (std::vector<PointInterval>{{101, 300}}));
}

TEST(RingSchemeTest, WrapsAroundOnHashedTokens) {
  RingScheme ring(RingOptions(20, 7), NodeRange(1, 5));
  const auto tokens = ring.tokens();
  const auto owners = ring.token_owners();
  ASSERT_LT(tokens.back(), kMax);
  EXPECT_EQ(ring.Owner(Point(tokens.back() + 1)), owners[0]);
  EXPECT_EQ(ring.Owner(Point(kMax)), owners[0]);
  EXPECT_EQ(ring.Owner(Point(0)), owners[0]);
  EXPECT_EQ(ring.Owner(Point(tokens.back())), owners.back());
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(ring.Owner(Point(tokens[i])), owners[i]);
    if (i + 1 < tokens.size()) {
      EXPECT_EQ(ring.Owner(Point(tokens[i] + 1)), owners[i + 1]);
    }
  }
}

TEST(RingSchemeTest, TokenAtTopOfSpaceOwnsTheTop) {
  RingScheme ring = ManualRing({{NodeId(1), {10}}, {NodeId(2), {kMax}}});
  EXPECT_EQ(ring.Owner(Point(kMax)), NodeId(2));
  EXPECT_EQ(ring.Owner(Point(kMax - 1)), NodeId(2));
  EXPECT_EQ(ring.Owner(Point(10)), NodeId(1));
  EXPECT_EQ(ring.RangesOf(NodeId(1)), (std::vector<PointInterval>{{0, 10}}));
  EXPECT_EQ(ring.RangesOf(NodeId(2)), (std::vector<PointInterval>{{11, kMax}}));
  const std::vector<PartitionInfo> parts = ring.Partitions();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[1].end_is_max);
  EXPECT_EQ(parts[1].owner, NodeId(2));
}

TEST(RingSchemeTest, SingleNodeWithOneVnodeOwnsEverything) {
  const std::array<NodeId, 1> nodes = {NodeId(7)};
  RingScheme ring(RingOptions(1, 3), nodes);
  ASSERT_EQ(ring.tokens().size(), 1u);
  const uint64_t token = ring.tokens()[0];
  for (uint64_t p : {uint64_t{0}, token - 1, token, token + 1, kMax}) {
    EXPECT_EQ(ring.Owner(Point(p)), NodeId(7)) << p;
  }
  EXPECT_EQ(ring.RangesOf(NodeId(7)), (std::vector<PointInterval>{{0, kMax}}));
  EXPECT_TRUE(ring.RangesOf(NodeId(8)).empty());
  const std::vector<PartitionInfo> parts = ring.Partitions();
  ASSERT_EQ(parts.size(), 2u);  // [0, token] and the wrap range (token, max]
  EXPECT_EQ(parts[0].begin_point, 0u);
  EXPECT_EQ(parts[0].end_point, token + 1);
  EXPECT_EQ(parts[1].begin_point, token + 1);
  EXPECT_TRUE(parts[1].end_is_max);
  EXPECT_EQ(ring.index_bits(), 1);
  ASSERT_TRUE(ring.CheckInvariants().ok());
}

TEST(RingSchemeTest, RangesOfAllNodesCoverTheSpaceExactlyOnce) {
  const std::vector<NodeId> nodes = NodeRange(10, 8);
  RingScheme ring(RingOptions(40, 5), nodes);
  std::vector<std::pair<PointInterval, NodeId>> all;
  for (NodeId node : nodes) {
    std::vector<PointInterval> ranges = ring.RangesOf(node);
    ASSERT_FALSE(ranges.empty());
    for (size_t i = 0; i < ranges.size(); ++i) {
      ASSERT_LE(ranges[i].first, ranges[i].last);
      if (i > 0) {
        ASSERT_GT(ranges[i].first, ranges[i - 1].last + 1);  // sorted, adjacent ones merged
      }
      all.push_back({ranges[i], node});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first.first < b.first.first; });
  ASSERT_EQ(all.front().first.first, 0u);
  ASSERT_EQ(all.back().first.last, kMax);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& [range, node] = all[i];
    if (i > 0) {
      ASSERT_EQ(range.first, all[i - 1].first.last + 1) << "gap or overlap at " << i;
    }
    EXPECT_EQ(ring.Owner(Point(range.first)), node);
    EXPECT_EQ(ring.Owner(Point(range.last)), node);
  }
}

TEST(RingSchemeTest, PartitionsAreVnodeRangesInPointOrder) {
  RingScheme ring(RingOptions(30, 9), NodeRange(1, 6));
  const std::vector<PartitionInfo> parts = ring.Partitions();
  ASSERT_EQ(parts.size(), ring.tokens().size() + 1);  // plus the wrap range
  EXPECT_EQ(parts.front().begin_point, 0u);
  EXPECT_TRUE(parts.back().end_is_max);
  EXPECT_EQ(parts.back().owner, parts.front().owner);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i + 1 < parts.size()) {
      ASSERT_FALSE(parts[i].end_is_max);
      ASSERT_EQ(parts[i].end_point, parts[i + 1].begin_point);
      ASSERT_LT(parts[i].begin_point, parts[i].end_point);
      EXPECT_EQ(ring.Owner(Point(parts[i].end_point - 1)), parts[i].owner);
    }
    EXPECT_EQ(ring.Owner(Point(parts[i].begin_point)), parts[i].owner);
  }
}

TEST(RingSchemeTest, IndexAgreesWithLowerBound) {
  RingScheme ring(RingOptions(200, 1), NodeRange(1, 100));
  ASSERT_EQ(ring.tokens().size(), 20000u);
  ASSERT_EQ(ring.index_bits(), 15);  // 2^15 >= 20000 > 2^14
  ASSERT_TRUE(ring.CheckInvariants().ok());
  Random random(12345);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t p = random.Next64();
    ASSERT_EQ(ring.Owner(Point(p)), ReferenceOwner(ring, p)) << p;
  }
  // Every token, its neighbours and the index's bucket boundaries.
  for (uint64_t token : ring.tokens()) {
    for (uint64_t p : {token - 1, token, token + 1}) {
      ASSERT_EQ(ring.Owner(Point(p)), ReferenceOwner(ring, p)) << p;
    }
  }
  const int shift = 64 - ring.index_bits();
  for (uint64_t b = 0; b < (uint64_t{1} << ring.index_bits()); ++b) {
    for (uint64_t p : {(b << shift) - 1, b << shift}) {
      ASSERT_EQ(ring.Owner(Point(p)), ReferenceOwner(ring, p)) << p;
    }
  }
}

TEST(RingSchemeTest, IndexFollowsAddAndRemove) {
  RingScheme ring(RingOptions(3, 2), NodeRange(1, 1));
  Random random(77);
  for (uint32_t node = 2; node < 60; ++node) {
    ASSERT_TRUE(ring.AddNode(NodeId(node)).ok());
    if (node % 3 == 0) {
      ASSERT_TRUE(ring.RemoveNode(NodeId(node - 1)).ok());
    }
    ASSERT_TRUE(ring.CheckInvariants().ok()) << ring.DebugString();
    ASSERT_GE(size_t{1} << ring.index_bits(), ring.tokens().size());
    for (int i = 0; i < 500; ++i) {
      const uint64_t p = random.Next64();
      ASSERT_EQ(ring.Owner(Point(p)), ReferenceOwner(ring, p));
    }
  }
}

TEST(RingSchemeTest, TokenCollisionsGoToLowerIdWhateverTheOrder) {
  const std::vector<std::pair<NodeId, std::vector<uint64_t>>> spec = {
      {NodeId(5), {10, 20, 30}}, {NodeId(3), {20, 40}}, {NodeId(9), {20, 30, 30}}};
  std::vector<size_t> order = {0, 1, 2};
  const RingScheme reference = ManualRing(spec);
  do {
    std::vector<std::pair<NodeId, std::vector<uint64_t>>> permuted;
    for (size_t i : order) permuted.push_back(spec[i]);
    const RingScheme ring = ManualRing(permuted);
    ASSERT_TRUE(std::ranges::equal(ring.tokens(), reference.tokens()));
    ASSERT_TRUE(std::ranges::equal(ring.token_owners(), reference.token_owners()));
    EXPECT_EQ(ring.Owner(Point(15)), NodeId(3));  // token 20: n3 < n5 < n9
    EXPECT_EQ(ring.Owner(Point(20)), NodeId(3));
    EXPECT_EQ(ring.Owner(Point(25)), NodeId(5));  // token 30: n5 < n9
    EXPECT_EQ(ring.Owner(Point(35)), NodeId(3));
    EXPECT_EQ(ring.Owner(Point(41)), NodeId(5));  // wraps to token 10
  } while (std::next_permutation(order.begin(), order.end()));

  RingScheme ring = ManualRing(spec);
  EXPECT_EQ(ring.tokens().size(), 7u);      // n9's duplicate 30 counts once
  EXPECT_EQ(ring.Partitions().size(), 5u);  // the losing entries own nothing
  EXPECT_EQ(ring.RangesOf(NodeId(9)), std::vector<PointInterval>{});
  ASSERT_TRUE(ring.RemoveNode(NodeId(3)).ok());
  EXPECT_EQ(ring.Owner(Point(15)), NodeId(5));
  EXPECT_EQ(ring.Owner(Point(35)), NodeId(5));  // wraps: 40 left with n3
  ASSERT_TRUE(ring.RemoveNode(NodeId(5)).ok());
  EXPECT_EQ(ring.Owner(Point(15)), NodeId(9));
  EXPECT_EQ(ring.RangesOf(NodeId(9)), (std::vector<PointInterval>{{0, kMax}}));
  ASSERT_TRUE(ring.CheckInvariants().ok());
}

TEST(RingSchemeTest, InitialOrderDoesNotMatter) {
  const std::vector<NodeId> forward = NodeRange(1, 20);
  std::vector<NodeId> backward(forward.rbegin(), forward.rend());
  RingScheme a(RingOptions(50, 4), forward);
  RingScheme b(RingOptions(50, 4), backward);
  EXPECT_TRUE(std::ranges::equal(a.tokens(), b.tokens()));
  EXPECT_TRUE(std::ranges::equal(a.token_owners(), b.token_owners()));
}

TEST(RingSchemeTest, AddAndRemoveReportErrors) {
  const std::array<NodeId, 1> nodes = {NodeId(1)};
  RingScheme ring(RingOptions(4), nodes);
  EXPECT_EQ(ring.AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ring.RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(ring.RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ring.AddNodeWithTokens(NodeId(2), {}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ring.AddNode(NodeId(2)).ok());
  EXPECT_EQ(ring.Nodes(), (std::vector<NodeId>{NodeId(1), NodeId(2)}));
  EXPECT_EQ(ring.tokens().size(), 8u);
  ASSERT_TRUE(ring.RemoveNode(NodeId(1)).ok());
  EXPECT_EQ(ring.tokens().size(), 4u);
  ASSERT_TRUE(ring.CheckInvariants().ok());
  EXPECT_EQ(ring.DebugString(), "ring{nodes=[2], vnodes=4, seed=0, tokens=4, index_bits=2}");
}

TEST(RingSchemeTest, NewRingSchemeValidates) {
  SchemeOptions options = RingOptions(8);
  EXPECT_EQ(NewRingScheme(options, {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<NodeId> dup = {NodeId(1), NodeId(1)};
  EXPECT_EQ(NewRingScheme(options, dup).status().code(), StatusCode::kInvalidArgument);
  options.vnodes = 0;
  EXPECT_EQ(NewRingScheme(options, NodeRange(1, 2)).status().code(), StatusCode::kInvalidArgument);
  auto scheme = NewRingScheme(RingOptions(8), NodeRange(1, 2));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kRing);
  EXPECT_EQ((*scheme)->Clone()->DebugString(), (*scheme)->DebugString());
}

// Paper 002 §7.1: with 200 tokens per node, 10 nodes share sequential keys closely.
TEST(RingSchemeTest, TwoHundredVnodesSpreadSequentialKeysEvenly) {
  const std::vector<NodeId> nodes = NodeRange(1, 10);
  RingScheme ring(RingOptions(200, 0), nodes);
  std::vector<double> counts(nodes.size(), 0);
  constexpr uint64_t kKeys = 200000;
  for (uint64_t k = 0; k < kKeys; ++k) {
    char key[8];
    EncodeBigEndian64(k, key);
    const NodeId owner = ring.Owner(PointOf(CollectionId(1), std::string_view(key, 8)));
    counts[owner.value() - 1] += 1;
  }
  double mean = static_cast<double>(kKeys) / static_cast<double>(nodes.size());
  double variance = 0;
  for (double c : counts) variance += (c - mean) * (c - mean);
  const double imbalance = std::sqrt(variance / static_cast<double>(counts.size())) / mean;
  EXPECT_LT(imbalance, 0.15);
  EXPECT_GT(imbalance, 0.0);
}

}  // namespace
}  // namespace shoal::partition
