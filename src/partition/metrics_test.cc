#include "src/partition/metrics.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <vector>

namespace shoal::partition {
namespace {

TEST(MetricsTest, SpreadOfEvenLoadIsZero) {
  const std::vector<double> v{5, 5, 5, 5};
  const Spread s = SpreadOf(v);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.imbalance, 0);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1);
}

TEST(MetricsTest, ImbalanceIsPopulationSigmaOverMean) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};  // μ = 5, σ = 2
  const Spread s = SpreadOf(v);
  EXPECT_DOUBLE_EQ(s.stddev, 2);
  EXPECT_DOUBLE_EQ(s.imbalance, 0.4);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 9.0 / 5.0);
}

TEST(MetricsTest, EmptyAndZeroLoads) {
  EXPECT_DOUBLE_EQ(SpreadOf({}).imbalance, 0);
  const std::vector<double> zeros{0, 0};
  EXPECT_DOUBLE_EQ(SpreadOf(zeros).imbalance, 0);
}

TEST(MetricsTest, ComputeLoadCountsIdleNodes) {
  const std::vector<NodeId> nodes{NodeId(3), NodeId(1), NodeId(2)};
  const std::vector<NodeId> owners{NodeId(1), NodeId(1), NodeId(3)};
  const std::vector<uint32_t> bytes{10, 20, 5};
  const LoadReport r = ComputeLoad(nodes, owners, bytes);
  ASSERT_EQ(r.per_node.size(), 3u);
  EXPECT_EQ(r.per_node[0].node, NodeId(1));
  EXPECT_EQ(r.per_node[0].keys, 2u);
  EXPECT_EQ(r.per_node[0].bytes, 30u);
  EXPECT_EQ(r.per_node[1].keys, 0u);
  EXPECT_EQ(r.per_node[2].bytes, 5u);
  EXPECT_DOUBLE_EQ(r.keys.max_over_mean, 2.0);
}

TEST(MetricsTest, OptimalFractionForAddAndRemove) {
  std::vector<NodeId> ten;
  for (uint32_t i = 0; i < 10; ++i) ten.push_back(NodeId(i));
  std::vector<NodeId> eleven = ten;
  eleven.push_back(NodeId(10));
  std::vector<NodeId> nine(ten.begin(), ten.end() - 1);
  EXPECT_DOUBLE_EQ(OptimalMovedFraction(ten, eleven), 1.0 / 11);
  EXPECT_DOUBLE_EQ(OptimalMovedFraction(ten, nine), 1.0 / 10);
  EXPECT_DOUBLE_EQ(OptimalMovedFraction(ten, ten), 0.0);
}

TEST(MetricsTest, CountMovesCountsKeysAndBytes) {
  const std::vector<NodeId> before{NodeId(1), NodeId(1), NodeId(2), NodeId(2)};
  const std::vector<NodeId> after{NodeId(1), NodeId(3), NodeId(2), NodeId(3)};
  const std::vector<uint32_t> bytes{1, 2, 4, 8};
  const std::vector<NodeId> nb{NodeId(1), NodeId(2)};
  const std::vector<NodeId> na{NodeId(1), NodeId(2), NodeId(3)};
  const MoveReport r = CountMoves(before, after, bytes, nb, na);
  EXPECT_EQ(r.moved_keys, 2u);
  EXPECT_EQ(r.moved_bytes, 10u);
  EXPECT_DOUBLE_EQ(r.moved_fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.optimal_fraction, 1.0 / 3);
}

TEST(MetricsTest, FullnessIsBytesOverThetaMax) {
  std::vector<PartitionInfo> parts(2);
  parts[0].bytes = 50;
  parts[1].bytes = 100;
  const FullnessReport r = ComputeFullness(parts, 100);
  EXPECT_EQ(r.partitions, 2u);
  EXPECT_DOUBLE_EQ(r.fullness.mean, 0.75);
  EXPECT_DOUBLE_EQ(r.fullness.max, 1.0);
}

RC_GTEST_PROP(MetricsTest, ImbalanceIsScaleInvariant, (std::vector<uint16_t> raw, uint8_t k)) {
  RC_PRE(!raw.empty());
  RC_PRE(k > 0);
  std::vector<double> a;
  std::vector<double> b;
  for (uint16_t v : raw) {
    a.push_back(v);
    b.push_back(static_cast<double>(v) * k);
  }
  const Spread sa = SpreadOf(a);
  const Spread sb = SpreadOf(b);
  RC_ASSERT(std::abs(sa.imbalance - sb.imbalance) < 1e-9);
  RC_ASSERT(sa.max_over_mean >= (sa.mean > 0 ? 1.0 - 1e-12 : 0.0));
}

}  // namespace
}  // namespace shoal::partition
