#include "src/partition/extendible_scheme.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kMaxPoint = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kRecordBytes = 100;

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

SchemeOptions Options(uint64_t theta_max, uint32_t initial_depth = 0, uint32_t max_depth = 24) {
  SchemeOptions options;
  options.kind = SchemeKind::kExtendible;
  options.theta_max_bytes = theta_max;
  options.theta_min_bytes = theta_max / 2;
  options.initial_depth = initial_depth;
  options.max_depth = max_depth;
  return options;
}

std::unique_ptr<ExtendibleScheme> Make(const SchemeOptions& options,
                                       const std::vector<NodeId>& nodes) {
  auto scheme = ExtendibleScheme::Create(options, nodes);
  EXPECT_TRUE(scheme.ok()) << scheme.status();
  return std::move(scheme).value();
}

KeyRef At(uint64_t point) { return KeyRef{Point(point), {}}; }

// The owner of `point` by a linear scan of the reported partitions.
NodeId BruteForceOwner(const std::vector<PartitionInfo>& partitions, uint64_t point) {
  for (const PartitionInfo& p : partitions) {
    if (p.begin_point <= point && (p.end_is_max || point < p.end_point)) return p.owner;
  }
  ADD_FAILURE() << "no partition holds " << point;
  return NodeId();
}

// Partitions must tile [0, 2^64) in order.
void ExpectTiling(const std::vector<PartitionInfo>& partitions) {
  ASSERT_FALSE(partitions.empty());
  EXPECT_EQ(partitions.front().begin_point, 0u);
  for (size_t i = 0; i + 1 < partitions.size(); ++i) {
    EXPECT_FALSE(partitions[i].end_is_max);
    EXPECT_EQ(partitions[i].end_point, partitions[i + 1].begin_point);
  }
  EXPECT_TRUE(partitions.back().end_is_max);
}

// Normalized size 2^(D-d) of a reported bucket.
uint64_t NormalizedSize(const PartitionInfo& p, uint32_t depth) {
  const uint64_t width = p.end_is_max ? 0 - p.begin_point : p.end_point - p.begin_point;
  if (width == 0) return uint64_t{1} << depth;  // the single depth-0 bucket
  return width >> (64 - depth);
}

TEST(ExtendibleSchemeTest, InitialBucketsAreBalancedRoundRobin) {
  auto scheme = Make(Options(1 << 20, /*initial_depth=*/4), NodeRange(1, 3));
  EXPECT_EQ(scheme->global_depth(), 4u);
  EXPECT_EQ(scheme->bucket_count(), 16u);
  std::map<NodeId, int> count;
  for (const PartitionInfo& p : scheme->Partitions()) ++count[p.owner];
  EXPECT_EQ(count[NodeId(1)], 6);
  EXPECT_EQ(count[NodeId(2)], 5);
  EXPECT_EQ(count[NodeId(3)], 5);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, DepthZeroIsOneBucketOverEverything) {
  auto scheme = Make(Options(1 << 20), NodeRange(5, 2));
  EXPECT_EQ(scheme->global_depth(), 0u);
  EXPECT_EQ(scheme->Owner(Point(0)), NodeId(5));
  EXPECT_EQ(scheme->Owner(Point(kMaxPoint)), NodeId(5));
  const auto partitions = scheme->Partitions();
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_TRUE(partitions[0].end_is_max);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, DirectoryDoublesOnSplitsOfTheDeepestBucket) {
  auto scheme = Make(Options(1000), NodeRange(1, 1));
  // Eleven 100-byte keys in the lower half, six in its first quarter and five in its second: the
  // root splits (D = 1), the lower half is still above 1000 bytes and splits again (D = 2), and
  // the upper half keeps depth 1 (two slots).
  for (uint64_t i = 0; i < 6; ++i) scheme->OnInsert(At(i << 59), kRecordBytes);
  for (uint64_t i = 0; i < 5; ++i) scheme->OnInsert(At((uint64_t{1} << 62) | (i << 59)), 100);
  EXPECT_EQ(scheme->global_depth(), 2u);
  EXPECT_EQ(scheme->bucket_count(), 3u);
  EXPECT_EQ(scheme->splits(), 2u);
  const auto partitions = scheme->Partitions();
  ASSERT_EQ(partitions.size(), 3u);
  ExpectTiling(partitions);
  EXPECT_EQ(partitions[0].end_point, uint64_t{1} << 62);
  EXPECT_EQ(partitions[1].end_point, uint64_t{1} << 63);
  EXPECT_EQ(partitions[0].keys, 6u);
  EXPECT_EQ(partitions[1].keys, 5u);
  EXPECT_EQ(partitions[2].keys, 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, LookupMatchesTheBucketThatContainsThePoint) {
  auto scheme = Make(Options(4000, /*initial_depth=*/2), NodeRange(1, 4));
  Random random(7);
  // Skewed points: a dense cluster forces deep buckets next to shallow ones.
  for (int i = 0; i < 4000; ++i) {
    uint64_t point = random.Next64();
    if (random.OneIn(2)) point = (uint64_t{0x5a} << 56) | (point >> 8);
    scheme->OnInsert(At(point), kRecordBytes);
  }
  scheme->Rebalance();
  ASSERT_TRUE(scheme->CheckInvariants().ok());
  const auto partitions = scheme->Partitions();
  ExpectTiling(partitions);
  for (const PartitionInfo& p : partitions) {
    EXPECT_EQ(scheme->Owner(Point(p.begin_point)), p.owner);
    if (!p.end_is_max) {
      EXPECT_EQ(scheme->Owner(Point(p.end_point - 1)), p.owner);
    }
  }
  EXPECT_EQ(scheme->Owner(Point(kMaxPoint)), BruteForceOwner(partitions, kMaxPoint));
  for (int i = 0; i < 20000; ++i) {
    const uint64_t point = random.Next64();
    ASSERT_EQ(scheme->Owner(Point(point)), BruteForceOwner(partitions, point));
  }
}

TEST(ExtendibleSchemeTest, RandomInsertsAndErasesKeepAccounting) {
  auto scheme = Make(Options(2000, /*initial_depth=*/1), NodeRange(1, 3));
  Random random(11);
  std::vector<std::pair<uint64_t, uint64_t>> live;  // (point, bytes)
  uint64_t bytes = 0;
  for (int step = 0; step < 6000; ++step) {
    if (!live.empty() && random.OneIn(3)) {
      const size_t i = random.Uniform(live.size());
      scheme->OnErase(At(live[i].first), live[i].second);
      bytes -= live[i].second;
      live[i] = live.back();
      live.pop_back();
    } else {
      // Small point space: some keys share a point.
      const uint64_t point = random.Uniform(512) << 55;
      const uint64_t size = random.Range(1, 200);
      scheme->OnInsert(At(point), size);
      live.push_back({point, size});
      bytes += size;
    }
    if (step % 500 == 0) {
      ASSERT_TRUE(scheme->CheckInvariants().ok()) << scheme->DebugString();
    }
  }
  ASSERT_TRUE(scheme->CheckInvariants().ok());
  EXPECT_EQ(scheme->total_keys(), live.size());
  EXPECT_EQ(scheme->total_bytes(), bytes);
  uint64_t reported = 0;
  for (const PartitionInfo& p : scheme->Partitions()) reported += p.bytes;
  EXPECT_EQ(reported, bytes);
}

TEST(ExtendibleSchemeTest, EraseOfAnUnknownPointIsIgnored) {
  auto scheme = Make(Options(1000), NodeRange(1, 2));
  scheme->OnInsert(At(42), 10);
  scheme->OnErase(At(43), 10);
  EXPECT_EQ(scheme->total_keys(), 1u);
  EXPECT_EQ(scheme->total_bytes(), 10u);
  scheme->OnErase(At(42), 10);
  EXPECT_EQ(scheme->total_keys(), 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, MaxDepthIsRespected) {
  auto scheme = Make(Options(500, /*initial_depth=*/1, /*max_depth=*/3), NodeRange(1, 2));
  Random random(3);
  for (int i = 0; i < 1000; ++i) scheme->OnInsert(At(random.Next64()), kRecordBytes);
  EXPECT_EQ(scheme->global_depth(), 3u);
  EXPECT_EQ(scheme->bucket_count(), 8u);
  // Buckets at the maximum depth stay above theta max; the invariants allow exactly that.
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, SplitsStayOnTheirNodeUntilBalance) {
  auto scheme = Make(Options(1000, /*initial_depth=*/1), NodeRange(1, 2));
  EXPECT_EQ(scheme->Owner(Point(0)), NodeId(1));
  EXPECT_EQ(scheme->Owner(Point(kMaxPoint)), NodeId(2));
  Random random(5);
  for (int i = 0; i < 400; ++i) scheme->OnInsert(At(random.Next64() >> 1), kRecordBytes);
  EXPECT_GT(scheme->bucket_count(), 8u);
  for (const PartitionInfo& p : scheme->Partitions()) {
    EXPECT_EQ(p.owner, p.begin_point < (uint64_t{1} << 63) ? NodeId(1) : NodeId(2));
  }
  // Balance weighs buckets by their normalized size 2^(D-d), the share of the hash space they
  // cover (paper 004 §5.1), not by their bytes: each node already holds half of the space, so
  // Rebalance moves nothing even though every key is on node 1 (points are hashes, so on real
  // data the two measures agree).
  const auto before = scheme->Partitions();
  scheme->Rebalance();
  const auto after = scheme->Partitions();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].owner, after[i].owner);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, AddAndRemoveReportErrors) {
  auto scheme = Make(Options(1000), NodeRange(1, 1));
  EXPECT_EQ(scheme->AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(scheme->RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheme->RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(scheme->AddNode(NodeId(2)).ok());
  EXPECT_EQ(scheme->Nodes(), NodeRange(1, 2));
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, AddAndRemoveKeepInvariants) {
  auto scheme = Make(Options(2000, /*initial_depth=*/3), NodeRange(1, 3));
  Random random(9);
  for (int i = 0; i < 3000; ++i) scheme->OnInsert(At(random.Next64()), kRecordBytes);
  for (uint32_t node = 4; node <= 7; ++node) {
    ASSERT_TRUE(scheme->AddNode(NodeId(node)).ok());
    ASSERT_TRUE(scheme->CheckInvariants().ok()) << scheme->DebugString();
  }
  for (uint32_t node : {2u, 6u, 1u}) {
    ASSERT_TRUE(scheme->RemoveNode(NodeId(node)).ok());
    ASSERT_TRUE(scheme->CheckInvariants().ok()) << scheme->DebugString();
    for (const PartitionInfo& p : scheme->Partitions()) EXPECT_NE(p.owner, NodeId(node));
  }
  EXPECT_EQ(scheme->Nodes(), (std::vector<NodeId>{NodeId(3), NodeId(4), NodeId(5), NodeId(7)}));
}

TEST(ExtendibleSchemeTest, NodesDifferByAtMostOneSmallestBucketAfterBalance) {
  auto scheme = Make(Options(3000, /*initial_depth=*/2), NodeRange(1, 6));
  Random random(21);
  for (int i = 0; i < 5000; ++i) {
    uint64_t point = random.Next64();
    if (random.OneIn(3)) point >>= 3;  // skew: deeper buckets near 0
    scheme->OnInsert(At(point), kRecordBytes);
  }
  scheme->Rebalance();
  const uint32_t depth = scheme->global_depth();
  std::map<NodeId, uint64_t> load;
  for (NodeId node : scheme->Nodes()) load[node] = 0;
  for (const PartitionInfo& p : scheme->Partitions()) load[p.owner] += NormalizedSize(p, depth);
  // The most loaded node by the order of balance.h: highest load, then highest id.
  NodeId most = load.begin()->first;
  uint64_t low = load.begin()->second;
  for (const auto& [node, l] : load) {
    if (l >= load[most]) most = node;
    low = std::min(low, l);
  }
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (const PartitionInfo& p : scheme->Partitions()) {
    if (p.owner == most) smallest = std::min(smallest, NormalizedSize(p, depth));
  }
  EXPECT_LE(load[most] - low, smallest);
}

TEST(ExtendibleSchemeTest, AddingAnEleventhNodeMovesCloseToTheOptimum) {
  // 50,000 records of 100 bytes with theta max 8 KiB give about 1024 buckets of depth 10.
  auto scheme = Make(Options(8 * 1024), NodeRange(1, 10));
  Random random(2024);
  std::vector<uint64_t> points;
  for (int i = 0; i < 50000; ++i) {
    points.push_back(random.Next64());
    scheme->OnInsert(At(points.back()), kRecordBytes);
  }
  scheme->Rebalance();
  EXPECT_GE(scheme->bucket_count(), 1000u);
  std::vector<NodeId> before;
  for (uint64_t p : points) before.push_back(scheme->Owner(Point(p)));
  ASSERT_TRUE(scheme->AddNode(NodeId(11)).ok());
  size_t moved = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const NodeId after = scheme->Owner(Point(points[i]));
    if (after != before[i]) {
      ++moved;
      EXPECT_EQ(after, NodeId(11));  // keys only move to the new node
    }
  }
  const double fraction = static_cast<double>(moved) / static_cast<double>(points.size());
  EXPECT_LE(fraction, 1.1 / 11.0);
  EXPECT_GE(fraction, 0.9 / 11.0);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(ExtendibleSchemeTest, ConstructorRejectsBadInputs) {
  SchemeOptions options = Options(1000);
  options.theta_min_bytes = 600;  // theta max < 2 theta min
  EXPECT_EQ(NewExtendibleScheme(options, NodeRange(1, 1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewExtendibleScheme(Options(1000), {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<NodeId> twice = {NodeId(1), NodeId(1)};
  EXPECT_EQ(NewExtendibleScheme(Options(1000), twice).status().code(),
            StatusCode::kInvalidArgument);
  auto scheme = NewExtendibleScheme(Options(1000), NodeRange(1, 2));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kExtendible);
}

TEST(ExtendibleSchemeTest, CloneIsIndependent) {
  auto scheme = Make(Options(1000, /*initial_depth=*/1), NodeRange(1, 2));
  for (uint64_t i = 0; i < 50; ++i) scheme->OnInsert(At(i * 0x0123456789abcdefULL), 100);
  auto clone = scheme->Clone();
  EXPECT_EQ(clone->DebugString(), scheme->DebugString());
  ASSERT_TRUE(clone->AddNode(NodeId(3)).ok());
  EXPECT_EQ(scheme->Nodes(), NodeRange(1, 2));
  EXPECT_TRUE(clone->CheckInvariants().ok());
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

}  // namespace
}  // namespace shoal::partition
