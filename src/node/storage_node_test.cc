// Unit tests of StorageNode outside moves: epochs and ownership, options, the load report (moves
// are in storage_node_move_test.cc; the fixture is in storage_node_test_fixture.h). Each test
// pins one rule of docs/design/cluster.md ("Storage node").

#include "src/node/storage_node.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <numbers>
#include <string>
#include <variant>

#include "src/node/storage_node_test_fixture.h"

namespace shoal::node {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

TEST_F(StorageNodeTest, WriteToABucketNotOwnedAnswersWrongShardWithTheNodesMap) {
  Run([&] {
    // b1 belongs to n2.
    auto response = Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(transport::ClusterErrorOf(response->status), ClusterError::kWrongShard)
        << response->status;
    EXPECT_EQ(response->status.code(), StatusCode::kFailedPrecondition);
    ASSERT_NE(response->route, nullptr);
    EXPECT_EQ(response->route->epoch(), maps_.initial->epoch());
    EXPECT_EQ(response->route->Find(kB1)->replicas, std::vector<NodeId>{kN2});
    EXPECT_EQ(node(kN1).counters().wrong_shard, 1u);
    EXPECT_EQ(node(kN1).counters().writes, 0u);

    // A read is refused the same way, and the owner serves both.
    auto get = Get(kN1, maps_.initial, KeyIn(kB1, 0));
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(get)), ClusterError::kWrongShard);
    EXPECT_TRUE(
        StatusOf(Write(kN2, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})")).ok());
  });
}

TEST_F(StorageNodeTest, ClientWithAnOlderEpochIsServedWhereTheNodeOwnsTheBucket) {
  Run([&] {
    ShardMapPtr newer = Next(maps_.initial, [](ShardMapEdit& e) { e.AddNode(NodeId(3)); });
    newer = Next(newer, [&](ShardMapEdit& e) {
      e.SplitBucket(kB1, maps_.initial->Find(kB1)->range.Midpoint(), BucketId(2));
    });
    Publish(newer);
    ASSERT_EQ(node(kN1).epoch(), MapEpoch(3));

    const std::string key = KeyIn(kB0, 0);
    auto written = Write(kN1, maps_.initial, WriteOp::kInsert, key, R"({"v":"old epoch"})");
    ASSERT_TRUE(StatusOf(written).ok()) << StatusOf(written);
    auto got = Get(kN1, maps_.initial, key);
    ASSERT_TRUE(StatusOf(got).ok()) << StatusOf(got);
    EXPECT_EQ(std::get<transport::GetResponse>(got->body).document.body, R"({"v":"old epoch"})");
    EXPECT_EQ(node(kN1).counters().wrong_shard, 0u);
  });
}

TEST_F(StorageNodeTest, BackgroundNiceOutsideItsRangeIsRefused) {
  for (const int nice : {-1, kMaxBackgroundNice + 1}) {
    NodeOptions options;
    options.id = kN1;
    options.data_dir = fmt::format("{}/nice-{}", dir_, nice);
    options.background_nice = nice;
    auto node = StorageNode::Open(sim_, options);
    EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument) << nice;
    // Refused before anything was created.
    EXPECT_FALSE(std::filesystem::exists(options.data_dir)) << nice;
  }
  for (const int nice : {0, kMaxBackgroundNice}) {
    NodeOptions options;
    options.id = kN1;
    options.data_dir = fmt::format("{}/nice-{}", dir_, nice);
    options.background_nice = nice;
    auto node = StorageNode::Open(sim_, options);
    EXPECT_TRUE(node.ok()) << nice << ": " << node.status();
  }
}

TEST_F(StorageNodeTest, LoadReportShowsTheMostWrittenKeyFirst) {
  Run([&] {
    const std::string hot = KeyIn(kB0, 0);
    const std::string cold = KeyIn(kB0, 1);
    const std::string other = KeyIn(kB0, 2);
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, hot, R"({"v":1})")).ok());
    }
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, cold, R"({"v":1})")).ok());
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, other, R"({"v":1})")).ok());
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kDelete, other)).ok());
    // Refused writes do not count: a duplicate insert, and a key of n2's bucket.
    for (int i = 0; i < 5; ++i) {
      EXPECT_FALSE(StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, cold, "{}")).ok());
      EXPECT_FALSE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), "{}")).ok());
    }

    auto load = Call(kN1, transport::BucketLoadRequest{});
    ASSERT_TRUE(StatusOf(load).ok()) << StatusOf(load);
    const auto& hot_keys = std::get<transport::BucketLoadResponse>(load->body).hot_keys;
    ASSERT_EQ(hot_keys.size(), 3u);
    EXPECT_EQ(hot_keys[0].collection, kDocs);
    EXPECT_EQ(hot_keys[0].primary_key, hot);
    // Milliseconds of simulated time: 40 writes at a 10 s half-life, barely decayed.
    EXPECT_NEAR(hot_keys[0].writes_per_second, 40 * std::numbers::ln2 / 10, 0.01);
    EXPECT_EQ(hot_keys[0].error_per_second, 0);
    EXPECT_EQ(hot_keys[1].primary_key, other);
    EXPECT_NEAR(hot_keys[1].writes_per_second, hot_keys[0].writes_per_second * 2 / 40, 0.001);
    EXPECT_EQ(hot_keys[2].primary_key, cold);
    EXPECT_NEAR(hot_keys[2].writes_per_second, hot_keys[0].writes_per_second / 40, 0.001);
    // n2 acknowledged nothing.
    auto n2_load = Call(kN2, transport::BucketLoadRequest{});
    ASSERT_TRUE(StatusOf(n2_load).ok()) << StatusOf(n2_load);
    EXPECT_TRUE(std::get<transport::BucketLoadResponse>(n2_load->body).hot_keys.empty());
  });
}

TEST_F(StorageNodeTest, LoadReportRescansABucketOnlyOnceWritesChangedItsSize) {
  Run([&] {
    const auto load = [&]() {
      std::map<BucketId, transport::BucketLoad> out;
      auto response = Call(kN1, transport::BucketLoadRequest{});
      EXPECT_TRUE(StatusOf(response).ok()) << StatusOf(response);
      if (!StatusOf(response).ok()) return out;
      for (const auto& bucket : std::get<transport::BucketLoadResponse>(response->body).buckets) {
        out[bucket.bucket] = bucket;
      }
      return out;
    };
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(
          StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, KeyIn(kB0, i), R"({"v":"aaaa"})"))
              .ok());
    }
    auto first = load();
    ASSERT_TRUE(first.contains(kB0));
    EXPECT_EQ(first[kB0].documents, 8u);
    const uint64_t scans = node(kN1).counters().load_scans;
    EXPECT_EQ(scans, first.size());  // every served bucket, once

    // Overwrites of the same size, reported long after the sizes were taken: nothing to rescan.
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(
          StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB0, i), R"({"v":"bbbb"})"))
              .ok());
    }
    ASSERT_TRUE(sim_.Sleep(3 * NodeOptions{}.load_stats_max_age).ok());
    auto second = load();
    EXPECT_EQ(node(kN1).counters().load_scans, scans);
    EXPECT_EQ(second[kB0].bytes, first[kB0].bytes);

    // Inserts that grow b0 by more than an eighth: b0 alone is scanned again.
    transport::BatchWriteRequest batch{.epoch = maps_.initial->epoch(), .writes = {}};
    for (int i = 8; i < 11; ++i) {
      batch.writes.push_back(transport::WriteRequest{.epoch = maps_.initial->epoch(),
                                                     .op = WriteOp::kInsert,
                                                     .collection = kDocs,
                                                     .primary_key = KeyIn(kB0, i),
                                                     .body = R"({"v":"aaaa"})"});
    }
    ASSERT_TRUE(StatusOf(Call(kN1, std::move(batch))).ok());
    auto third = load();
    EXPECT_EQ(node(kN1).counters().load_scans, scans + 1);
    EXPECT_EQ(third[kB0].documents, 11u);
    EXPECT_GT(third[kB0].bytes, first[kB0].bytes);
  });
}

}  // namespace
}  // namespace shoal::node
