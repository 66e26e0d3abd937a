#include "src/partition/static_scheme.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <vector>

#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

SchemeOptions StaticOptions(uint32_t buckets) {
  SchemeOptions options;
  options.kind = SchemeKind::kStatic;
  options.static_buckets = buckets;
  return options;
}

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

std::vector<uint32_t> Counts(const StaticScheme& scheme) {
  std::vector<uint32_t> counts;
  for (NodeId node : scheme.Nodes()) {
    counts.push_back(static_cast<uint32_t>(scheme.BucketsOf(node).size()));
  }
  return counts;
}

TEST(StaticSchemeTest, EqualBucketsAreContiguousAndCoverTheSpace) {
  for (uint32_t buckets : {1u, 2u, 3u, 7u, 1000u, 1u << 20}) {
    EXPECT_EQ(internal::EqualBucketOf(0, buckets), 0u);
    EXPECT_EQ(internal::EqualBucketOf(kMax, buckets), buckets - 1);
    EXPECT_EQ(internal::EqualBucketBegin(0, buckets), 0u);
    for (uint32_t b : {1u, buckets / 2, buckets - 1}) {
      if (b == 0 || b >= buckets) continue;
      const uint64_t begin = internal::EqualBucketBegin(b, buckets);
      EXPECT_EQ(internal::EqualBucketOf(begin, buckets), b) << buckets;
      EXPECT_EQ(internal::EqualBucketOf(begin - 1, buckets), b - 1) << buckets;
    }
  }
  // B = 4: quarters of the space.
  EXPECT_EQ(internal::EqualBucketBegin(1, 4), uint64_t{1} << 62);
  EXPECT_EQ(internal::EqualBucketBegin(3, 4), uint64_t{3} << 62);
}

TEST(StaticSchemeTest, InitialAssignmentIsRoundRobinById) {
  StaticScheme scheme(StaticOptions(10), std::vector<NodeId>{NodeId(3), NodeId(1), NodeId(2)});
  const std::vector<PartitionInfo> parts = scheme.Partitions();
  ASSERT_EQ(parts.size(), 10u);
  for (uint32_t b = 0; b < 10; ++b) {
    EXPECT_EQ(parts[b].owner, NodeId(1 + b % 3)) << b;
    EXPECT_EQ(scheme.Owner(Point(parts[b].begin_point)), parts[b].owner);
    if (b + 1 < 10) {
      EXPECT_EQ(parts[b].end_point, parts[b + 1].begin_point);
      EXPECT_EQ(scheme.Owner(Point(parts[b].end_point - 1)), parts[b].owner);
    }
  }
  EXPECT_TRUE(parts.back().end_is_max);
  EXPECT_EQ(scheme.Owner(Point(kMax)), NodeId(1));  // bucket 9
  EXPECT_EQ(scheme.BucketsOf(NodeId(1)), (std::vector<uint32_t>{0, 3, 6, 9}));
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{4, 3, 3}));
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(StaticSchemeTest, AddNodeTakesFromMostLoadedWithMinimalMoves) {
  StaticScheme scheme(StaticOptions(10), NodeRange(1, 3));
  ASSERT_TRUE(scheme.AddNode(NodeId(4)).ok());
  // n1 had 4 buckets and gives its highest (9); then all hold 3 and n1 (lowest id) gives 6.
  EXPECT_EQ(scheme.BucketsOf(NodeId(4)), (std::vector<uint32_t>{6, 9}));
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{2, 3, 3, 2}));
  ASSERT_TRUE(scheme.CheckInvariants().ok());
  EXPECT_EQ(scheme.DebugString(), "static{nodes=[1,2,3,4], buckets=10, per_node=[2,3,3,2]}");
}

TEST(StaticSchemeTest, AddNodeMovesFloorOfShareAndOnlyToNewNode) {
  StaticScheme scheme(StaticOptions(1024), NodeRange(1, 5));
  for (uint32_t node = 6; node <= 40; ++node) {
    StaticScheme before = scheme;
    ASSERT_TRUE(scheme.AddNode(NodeId(node)).ok());
    ASSERT_TRUE(scheme.CheckInvariants().ok());
    uint32_t moved = 0;
    for (uint32_t b = 0; b < 1024; ++b) {
      const Point p(internal::EqualBucketBegin(b, 1024));
      if (before.Owner(p) != scheme.Owner(p)) {
        ++moved;
        EXPECT_EQ(scheme.Owner(p), NodeId(node));
      }
    }
    EXPECT_EQ(moved, 1024 / node) << node;
  }
}

TEST(StaticSchemeTest, RemoveNodeGivesBucketsToLeastLoaded) {
  StaticScheme scheme(StaticOptions(10), NodeRange(1, 3));  // counts 4, 3, 3
  ASSERT_TRUE(scheme.RemoveNode(NodeId(1)).ok());
  // Buckets 0, 3, 6, 9 go to n2, n3, n2, n3.
  EXPECT_EQ(scheme.BucketsOf(NodeId(2)), (std::vector<uint32_t>{0, 1, 4, 6, 7}));
  EXPECT_EQ(scheme.BucketsOf(NodeId(3)), (std::vector<uint32_t>{2, 3, 5, 8, 9}));
  EXPECT_TRUE(scheme.BucketsOf(NodeId(1)).empty());
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(StaticSchemeTest, FewerBucketsThanNodes) {
  StaticScheme scheme(StaticOptions(2), NodeRange(1, 5));
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{1, 1, 0, 0, 0}));
  ASSERT_TRUE(scheme.AddNode(NodeId(6)).ok());
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{1, 1, 0, 0, 0, 0}));
  ASSERT_TRUE(scheme.RemoveNode(NodeId(1)).ok());
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{1, 1, 0, 0, 0}));  // n3 took bucket 0
  EXPECT_EQ(scheme.Owner(Point(0)), NodeId(3));
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(StaticSchemeTest, StaysBalancedThroughChurn) {
  StaticScheme scheme(StaticOptions(1000), NodeRange(1, 4));
  Random random(9);
  uint32_t next = 5;
  for (int step = 0; step < 200; ++step) {
    const std::vector<NodeId> nodes = scheme.Nodes();
    if (nodes.size() > 1 && random.OneIn(2)) {
      ASSERT_TRUE(scheme.RemoveNode(nodes[random.Uniform(nodes.size())]).ok());
    } else {
      ASSERT_TRUE(scheme.AddNode(NodeId(next++)).ok());
    }
    ASSERT_TRUE(scheme.CheckInvariants().ok()) << scheme.DebugString();
  }
}

TEST(StaticSchemeTest, AddAndRemoveReportErrors) {
  StaticScheme scheme(StaticOptions(16), std::vector<NodeId>{NodeId(1)});
  EXPECT_EQ(scheme.AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(scheme.RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheme.RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(scheme.AddNode(NodeId(2)).ok());
  EXPECT_EQ(scheme.Nodes(), (std::vector<NodeId>{NodeId(1), NodeId(2)}));
  EXPECT_EQ(Counts(scheme), (std::vector<uint32_t>{8, 8}));
}

TEST(StaticSchemeTest, NewStaticSchemeValidates) {
  EXPECT_EQ(NewStaticScheme(StaticOptions(8), {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<NodeId> dup = {NodeId(3), NodeId(3)};
  EXPECT_EQ(NewStaticScheme(StaticOptions(8), dup).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NewStaticScheme(StaticOptions(0), NodeRange(1, 2)).status().code(),
            StatusCode::kInvalidArgument);
  auto scheme = NewStaticScheme(StaticOptions(8), NodeRange(1, 2));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kStatic);
  EXPECT_EQ((*scheme)->Partitions().size(), 8u);
}

}  // namespace
}  // namespace shoal::partition
