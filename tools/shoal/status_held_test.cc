#include "tools/shoal/status_held.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/cluster/shard_map_edit.h"

namespace shoal::tools {
namespace {

const NodeId kN1{1}, kN2{2}, kN3{3}, kN4{4}, kN5{5};

// Three buckets at K = 3 on n1..n3, one primary each, plus n4 and n5 holding no replica; bucket
// 1 lost its last backup, n1 (removed while down).
cluster::ShardMap ShortMap() {
  auto map = cluster::ShardMap::Initial(
      {.nodes = {kN1, kN2, kN3}, .bucket_count = 3, .replication_factor = 3});
  EXPECT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->Find(BucketId(1))->replicas, (std::vector<NodeId>{kN2, kN3, kN1}));
  EXPECT_EQ(map->Find(BucketId(2))->replicas.front(), kN3);
  cluster::ShardMapEdit edit(map->epoch());
  edit.AddNode(kN4).AddNode(kN5).RemoveReplica(BucketId(1), kN1);
  auto applied = cluster::Apply(*map, edit);
  EXPECT_TRUE(applied.ok()) << applied.status();
  return *applied;
}

wire::AdminResponse Answer() {
  wire::AdminResponse answer;
  const auto add = [&](uint32_t bucket, uint32_t node, uint64_t term, uint64_t rseq) {
    wire::HeldCopyStatus* copy = answer.add_held_copies();
    copy->set_bucket(bucket);
    copy->set_node(node);
    copy->set_term(term);
    copy->set_rseq(rseq);
  };
  add(1, 1, 4, 120);
  add(1, 5, 3, 88);
  add(0, 4, 2, 10);  // a bucket that is whole: listed only when a replica is unreachable
  return answer;
}

TEST(StatusHeldTest, CountsPerNodeAndListsDegradedBucketsWithTheirHolders) {
  const cluster::ShardMap map = ShortMap();
  const std::vector<HeldCopyRow> rows = HeldCopyRows(Answer());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(HeldCopiesPerNode(rows), (std::map<NodeId, uint64_t>{{kN1, 1}, {kN4, 1}, {kN5, 1}}));

  // n3, bucket 2's primary and a backup of buckets 0 and 1, does not answer.
  const std::vector<DegradedBucket> degraded = DegradedBuckets(map, {kN3}, rows);
  ASSERT_EQ(degraded.size(), 3u);
  EXPECT_EQ(degraded[0].bucket, BucketId(0));  // whole, but a backup is unreachable
  EXPECT_FALSE(degraded[0].under_replicated);
  EXPECT_FALSE(degraded[0].below_min_in_sync);  // two reachable, min_in_sync a majority of 3
  EXPECT_EQ(degraded[0].unreachable_backups, std::vector<NodeId>{kN3});
  EXPECT_EQ(degraded[1].bucket, BucketId(1));
  EXPECT_TRUE(degraded[1].under_replicated);
  EXPECT_TRUE(degraded[1].below_min_in_sync);  // n2 alone is reachable
  EXPECT_FALSE(degraded[1].primary_unreachable);
  ASSERT_EQ(degraded[1].held.size(), 2u);
  EXPECT_EQ(degraded[1].held[0].node, kN1);
  EXPECT_EQ(degraded[1].held[1].node, kN5);
  EXPECT_EQ(degraded[2].bucket, BucketId(2));
  EXPECT_FALSE(degraded[2].under_replicated);
  EXPECT_FALSE(degraded[2].below_min_in_sync);  // a failover makes n1 or n2 primary
  EXPECT_TRUE(degraded[2].primary_unreachable);
  EXPECT_TRUE(degraded[2].unreachable_backups.empty());
  EXPECT_TRUE(degraded[2].held.empty());

  EXPECT_EQ(FormatDegradedBuckets(degraded, map.replication_factor()),
            "  bucket 0: backup 3 unreachable; replicas 1,2,3; held by 4 (term 2, rseq 10)\n"
            "  bucket 1: 2 of 3 copies, backup 3 unreachable, below min_in_sync; replicas 2,3; "
            "held by 1 (term 4, rseq 120), 5 (term 3, rseq 88)\n"
            "  bucket 2: primary unreachable; replicas 3,1,2; held by no other node\n");

  const nlohmann::json json = DegradedBucketsJson(degraded);
  ASSERT_EQ(json.size(), 3u);
  EXPECT_EQ(json[0]["unreachable_backups"], nlohmann::json::array({3}));
  EXPECT_EQ(json[1]["bucket"], 1);
  EXPECT_EQ(json[1]["under_replicated"], true);
  EXPECT_EQ(json[1]["below_min_in_sync"], true);
  EXPECT_EQ(json[1]["held_copies"][0], (nlohmann::json{{"node", 1}, {"term", 4}, {"rseq", 120}}));
  EXPECT_EQ(json[1]["held_copies"][1]["node"], 5);
  EXPECT_EQ(json[2]["primary_unreachable"], true);
  EXPECT_TRUE(json[2]["held_copies"].empty());
}

TEST(StatusHeldTest, NothingIsDegradedAtKOneOrWhenWhole) {
  auto single = cluster::ShardMap::Initial({.nodes = {kN1, kN2}, .bucket_count = 2});
  ASSERT_TRUE(single.ok());
  EXPECT_TRUE(DegradedBuckets(*single, {kN1}, {}).empty());
  auto whole = cluster::ShardMap::Initial(
      {.nodes = {kN1, kN2, kN3}, .bucket_count = 4, .replication_factor = 3});
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(DegradedBuckets(*whole, {}, HeldCopyRows(Answer())).empty());
  EXPECT_EQ(FormatDegradedBuckets({}, 3), "");
}

}  // namespace
}  // namespace shoal::tools
