#include "src/partition/rendezvous_scheme.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <vector>

#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

SchemeOptions RendezvousOptions(uint32_t buckets, uint64_t seed = 0) {
  SchemeOptions options;
  options.kind = SchemeKind::kRendezvous;
  options.rendezvous_buckets = buckets;
  options.hash_seed = seed;
  return options;
}

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

// Highest random weight computed the plain way; ties to the lower id.
NodeId ReferenceWinner(const std::vector<NodeId>& nodes, uint64_t input, uint64_t seed) {
  NodeId best = nodes[0];
  uint64_t best_weight = RendezvousScheme::Weight(input, RendezvousScheme::SaltOf(best, seed));
  for (NodeId node : nodes) {
    const uint64_t w = RendezvousScheme::Weight(input, RendezvousScheme::SaltOf(node, seed));
    if (w > best_weight || (w == best_weight && node < best)) {
      best = node;
      best_weight = w;
    }
  }
  return best;
}

TEST(RendezvousSchemeTest, PerKeyOwnerHasHighestWeight) {
  const std::vector<NodeId> nodes = {NodeId(9), NodeId(2), NodeId(40), NodeId(7)};
  RendezvousScheme scheme(RendezvousOptions(0, 5), nodes);
  const std::vector<NodeId> sorted = scheme.Nodes();
  Random random(1);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t p = random.Next64();
    ASSERT_EQ(scheme.Owner(Point(p)), ReferenceWinner(sorted, p, 5));
  }
  for (uint64_t p : {uint64_t{0}, uint64_t{1}, kMax}) {
    EXPECT_EQ(scheme.Owner(Point(p)), ReferenceWinner(sorted, p, 5));
  }
  EXPECT_TRUE(scheme.Partitions().empty());
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(RendezvousSchemeTest, WeightMixesEveryInputBit) {
  // Flipping one input bit flips about half of the weight's bits.
  Random random(3);
  double flipped = 0;
  int trials = 0;
  for (int i = 0; i < 200; ++i) {
    const uint64_t x = random.Next64();
    for (int bit = 0; bit < 64; ++bit) {
      const uint64_t a = RendezvousScheme::Weight(x, 0);
      const uint64_t b = RendezvousScheme::Weight(x ^ (uint64_t{1} << bit), 0);
      flipped += __builtin_popcountll(a ^ b);
      ++trials;
    }
  }
  const double mean = flipped / trials;
  EXPECT_GT(mean, 31.0);
  EXPECT_LT(mean, 33.0);
}

TEST(RendezvousSchemeTest, PerKeySpreadsEvenlyAndStaysEvenAfterRemoval) {
  RendezvousScheme scheme(RendezvousOptions(0, 11), NodeRange(1, 10));
  auto shares = [&scheme](uint64_t points) {
    std::vector<double> counts(11, 0);
    for (uint64_t p = 0; p < points; ++p) {  // sequential points: the weights still mix
      counts[scheme.Owner(Point(p)).value()] += 1;
    }
    return counts;
  };
  constexpr uint64_t kPoints = 100000;
  std::vector<double> counts = shares(kPoints);
  for (uint32_t n = 1; n <= 10; ++n) {
    EXPECT_NEAR(counts[n], kPoints / 10.0, kPoints / 10.0 * 0.05) << n;
  }
  ASSERT_TRUE(scheme.RemoveNode(NodeId(4)).ok());
  counts = shares(kPoints);
  EXPECT_EQ(counts[4], 0);
  for (uint32_t n = 1; n <= 10; ++n) {
    if (n != 4) {
      EXPECT_NEAR(counts[n], kPoints / 9.0, kPoints / 9.0 * 0.05) << n;
    }
  }
}

TEST(RendezvousSchemeTest, PerBucketOwnerIsBucketWinner) {
  constexpr uint32_t kBuckets = 256;
  const std::vector<NodeId> nodes = NodeRange(3, 7);
  RendezvousScheme scheme(RendezvousOptions(kBuckets, 8), nodes);
  EXPECT_EQ(scheme.buckets(), kBuckets);
  const std::vector<PartitionInfo> parts = scheme.Partitions();
  ASSERT_EQ(parts.size(), kBuckets);
  for (uint32_t b = 0; b < kBuckets; ++b) {
    const NodeId winner = ReferenceWinner(nodes, RendezvousScheme::BucketInput(b, 8), 8);
    EXPECT_EQ(parts[b].owner, winner);
    EXPECT_EQ(scheme.Owner(Point(parts[b].begin_point)), winner);
    const uint64_t last = parts[b].end_is_max ? kMax : parts[b].end_point - 1;
    EXPECT_EQ(scheme.Owner(Point(last)), winner);
    if (b + 1 < kBuckets) {
      EXPECT_EQ(parts[b].end_point, parts[b + 1].begin_point);
    }
  }
  EXPECT_EQ(parts.front().begin_point, 0u);
  EXPECT_TRUE(parts.back().end_is_max);
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(RendezvousSchemeTest, PerBucketTableMatchesRecomputationAfterChanges) {
  constexpr uint32_t kBuckets = 1000;
  RendezvousScheme scheme(RendezvousOptions(kBuckets, 2), NodeRange(1, 3));
  for (uint32_t node = 4; node < 20; ++node) {
    ASSERT_TRUE(scheme.AddNode(NodeId(node)).ok());
    ASSERT_TRUE(scheme.CheckInvariants().ok());
    if (node % 2 == 0) {
      ASSERT_TRUE(scheme.RemoveNode(NodeId(node / 2)).ok());
      ASSERT_TRUE(scheme.CheckInvariants().ok());
    }
    RendezvousScheme fresh(RendezvousOptions(kBuckets, 2), scheme.Nodes());
    for (uint32_t b = 0; b < kBuckets; ++b) {
      const Point p(internal::EqualBucketBegin(b, kBuckets));
      ASSERT_EQ(scheme.Owner(p), fresh.Owner(p)) << b;
    }
  }
}

TEST(RendezvousSchemeTest, BucketInputsAreSeparateFromSalts) {
  EXPECT_NE(RendezvousScheme::BucketInput(5, 0), RendezvousScheme::SaltOf(NodeId(5), 0));
}

TEST(RendezvousSchemeTest, AddAndRemoveReportErrors) {
  for (uint32_t buckets : {0u, 16u}) {
    const std::array<NodeId, 1> nodes = {NodeId(1)};
    RendezvousScheme scheme(RendezvousOptions(buckets), nodes);
    EXPECT_EQ(scheme.AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(scheme.RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
    EXPECT_EQ(scheme.RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(scheme.AddNode(NodeId(2)).ok());
    EXPECT_EQ(scheme.Nodes(), (std::vector<NodeId>{NodeId(1), NodeId(2)}));
    ASSERT_TRUE(scheme.CheckInvariants().ok());
  }
}

TEST(RendezvousSchemeTest, NewRendezvousSchemeValidates) {
  EXPECT_EQ(NewRendezvousScheme(RendezvousOptions(0), {}).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<NodeId> dup = {NodeId(3), NodeId(3)};
  EXPECT_EQ(NewRendezvousScheme(RendezvousOptions(0), dup).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewRendezvousScheme(RendezvousOptions((1u << 20) + 1), NodeRange(1, 2)).status().code(),
            StatusCode::kInvalidArgument);
  auto scheme = NewRendezvousScheme(RendezvousOptions(4, 1), NodeRange(1, 2));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kRendezvous);
  EXPECT_EQ((*scheme)->DebugString(), "rendezvous{nodes=[1,2], seed=1, buckets=4}");
}

}  // namespace
}  // namespace shoal::partition
