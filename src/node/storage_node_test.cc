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

// A plain scan asks for at least one document per page, as a streamed one does: 0 is refused,
// not served as 1.
TEST_F(StorageNodeTest, AScanOfZeroDocumentsIsRefused) {
  Run([&] {
    InsertInto(kB0, 3);
    const storage::PointRange b0 = RangeOf(*maps_.initial, kB0);
    auto zero = Scan(kN1, maps_.initial->epoch(), kB0, b0, /*max_documents=*/0);
    ASSERT_TRUE(zero.ok()) << zero.status();
    EXPECT_EQ(zero->status.code(), StatusCode::kInvalidArgument) << zero->status;
    EXPECT_FALSE(std::holds_alternative<transport::ScanResponse>(zero->body));

    auto one = Scan(kN1, maps_.initial->epoch(), kB0, b0, /*max_documents=*/1);
    ASSERT_TRUE(StatusOf(one).ok()) << StatusOf(one);
    const auto& page = std::get<transport::ScanResponse>(one->body);
    EXPECT_EQ(page.documents.size(), 1u);
    EXPECT_FALSE(page.next_cursor.empty());
  });
}

// A scan names a bucket of the node's map whose range holds the scan's range. A client at the
// node's epoch that names another bucket built a wrong request (kInvalidArgument); a client with
// an older map may name a bucket since split (or one that never existed: the node cannot tell)
// and learns the node's map (WRONG_SHARD); a client with a newer map waits for the node to learn
// it (NOT_SERVING once the wait is over).
TEST_F(StorageNodeTest, AScanMustNameABucketWhoseRangeHoldsItsRange) {
  Run([&] {
    InsertInto(kB0, 3);
    const MapEpoch e1 = maps_.initial->epoch();
    const storage::PointRange b0 = RangeOf(*maps_.initial, kB0);
    const storage::PointRange b1 = RangeOf(*maps_.initial, kB1);
    const auto expect_invalid = [&](BucketId bucket, const storage::PointRange& range) {
      auto answer = Scan(kN1, e1, bucket, range);
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(answer->status.code(), StatusCode::kInvalidArgument)
          << bucket.DebugString() << " " << range.DebugString() << ": " << answer->status;
    };
    expect_invalid(BucketId(999999), b0);             // no such bucket
    expect_invalid(kB1, b0);                          // another bucket's range
    expect_invalid(kB0, storage::PointRange::All());  // more than the bucket
    auto served = Scan(kN1, e1, kB0, b0);
    ASSERT_TRUE(StatusOf(served).ok()) << StatusOf(served);
    EXPECT_EQ(std::get<transport::ScanResponse>(served->body).documents.size(), 3u);
    auto part = Scan(kN1, e1, kB0, *storage::PointRange::Make(b0.begin(), b0.begin() + 1));
    EXPECT_TRUE(StatusOf(part).ok()) << StatusOf(part);
    EXPECT_EQ(node(kN1).counters().wrong_shard, 0u);

    // b0 splits: its id now names the lower half only.
    const uint64_t middle = maps_.initial->Find(kB0)->range.Midpoint();
    const ShardMapPtr split =
        Next(maps_.initial, [&](ShardMapEdit& e) { e.SplitBucket(kB0, middle, BucketId(2)); });
    Publish(split);
    for (const BucketId stale : {kB0, BucketId(999999)}) {
      auto answer = Scan(kN1, e1, stale, b0);
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(transport::ClusterErrorOf(answer->status), ClusterError::kWrongShard)
          << stale.DebugString() << ": " << answer->status;
      ASSERT_NE(answer->route, nullptr);
      EXPECT_EQ(answer->route->epoch(), split->epoch());
    }
    EXPECT_EQ(node(kN1).counters().wrong_shard, 2u);
    // What still fits the named bucket is served at the older epoch.
    auto lower = Scan(kN1, e1, kB0, *storage::PointRange::Make(b0.begin(), middle));
    EXPECT_TRUE(StatusOf(lower).ok()) << StatusOf(lower);
    // The split map's own requests: the halves are served, the old range is not.
    EXPECT_TRUE(
        StatusOf(Scan(kN1, split->epoch(), BucketId(2), RangeOf(*split, BucketId(2)))).ok());
    auto old_range = Scan(kN1, split->epoch(), kB0, b0);
    ASSERT_TRUE(old_range.ok()) << old_range.status();
    EXPECT_EQ(old_range->status.code(), StatusCode::kInvalidArgument) << old_range->status;

    // A client ahead of the node (and of the coordinator) naming a bucket it does not know.
    auto ahead = Scan(kN1, MapEpoch(split->epoch().value() + 5), BucketId(7), b1);
    ASSERT_TRUE(ahead.ok()) << ahead.status();
    EXPECT_EQ(transport::ClusterErrorOf(ahead->status), ClusterError::kNotServing) << ahead->status;
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

// The load report carries each bucket's read rate (RequestRates): the reads the node served,
// gets and scan pages alike, whatever they found; refused reads and writes count nothing.
TEST_F(StorageNodeTest, LoadReportCarriesTheReadsServedPerBucket) {
  Run([&] {
    InsertInto(kB0, 4);
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(StatusOf(Get(kN1, maps_.initial, KeyIn(kB0, i % 4))).ok());
    }
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(StatusOf(Get(kN1, maps_.initial, KeyIn(kB0, 100 + i))).code(),
                StatusCode::kNotFound);
      ASSERT_TRUE(
          StatusOf(Scan(kN1, maps_.initial->epoch(), kB0, RangeOf(*maps_.initial, kB0))).ok());
      // n2's bucket: refused here, counted nowhere.
      EXPECT_FALSE(StatusOf(Get(kN1, maps_.initial, KeyIn(kB1, i))).ok());
    }
    auto loads = Loads(kN1);
    ASSERT_TRUE(loads.contains(kB0));
    // 40 reads within milliseconds of simulated time, at a 60 s half-life: barely decayed.
    EXPECT_NEAR(loads[kB0].reads_per_second, 40 * std::numbers::ln2 / 60, 0.01);
    for (const auto& [bucket, load] : loads) {
      if (bucket != kB0) {
        EXPECT_EQ(load.reads_per_second, 0.0) << bucket.DebugString();
      }
    }
    EXPECT_EQ(Loads(kN2)[kB1].reads_per_second, 0.0);
    // Ten half-lives without a read: the rate has decayed a thousandfold.
    const double before = loads[kB0].reads_per_second;
    ASSERT_TRUE(sim_.Sleep(10 * RequestRates::kDefaultHalfLife).ok());
    EXPECT_NEAR(Loads(kN1)[kB0].reads_per_second, before / 1024, before / 1e4);
  });
}

// The load report carries each bucket's write rate too (RequestRates): the writes the node
// served, whatever their outcome (an insert of a key that exists is served and refused by the
// store); a write to a bucket the node does not serve is refused and counts nowhere. Reads do
// not count as writes.
TEST_F(StorageNodeTest, LoadReportCarriesTheWritesServedPerBucket) {
  Run([&] {
    InsertInto(kB0, 12);
    EXPECT_EQ(
        StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, KeyIn(kB0, 0), R"({"v":1})")).code(),
        StatusCode::kAlreadyExists);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(StatusOf(Get(kN1, maps_.initial, KeyIn(kB0, i))).ok());
      // n2's bucket: refused here, counted nowhere.
      EXPECT_FALSE(
          StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, i), R"({"v":1})")).ok());
    }
    auto loads = Loads(kN1);
    ASSERT_TRUE(loads.contains(kB0));
    EXPECT_NEAR(loads[kB0].writes_per_second, 13 * std::numbers::ln2 / 60, 0.01);
    EXPECT_NEAR(loads[kB0].reads_per_second, 5 * std::numbers::ln2 / 60, 0.01);
    for (const auto& [bucket, load] : loads) {
      if (bucket != kB0) {
        EXPECT_EQ(load.writes_per_second, 0.0) << bucket.DebugString();
      }
    }
    EXPECT_EQ(Loads(kN2)[kB1].writes_per_second, 0.0);
  });
}

TEST_F(StorageNodeTest, LoadReportRescansABucketOnlyOnceWritesChangedItsSize) {
  Run([&] {
    const auto load = [&] { return Loads(kN1); };
    InsertInto(kB0, 8);
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

// A batch whose buckets are all served here goes to the store in one call; each slot still gets
// the result the same write would have alone, in the batch's order.
TEST_F(StorageNodeTest, ABatchOfServedBucketsIsAppliedAtOnceWithEachWritesOwnResult) {
  Run([&] {
    const MapEpoch epoch = maps_.initial->epoch();
    const std::string a = KeyIn(kB0, 0), b = KeyIn(kB0, 1);
    auto write = [&](WriteOp op, const std::string& key, const std::string& body = "") {
      return transport::WriteRequest{
          .epoch = epoch, .op = op, .collection = kDocs, .primary_key = key, .body = body};
    };
    transport::BatchWriteRequest batch{.epoch = epoch, .writes = {}};
    batch.writes.push_back(write(WriteOp::kInsert, a, R"({"v":1})"));
    batch.writes.push_back(write(WriteOp::kInsert, a, R"({"v":2})"));  // DUPLICATE
    batch.writes.push_back(write(WriteOp::kUpdate, b, R"({"v":3})"));  // NOT_FOUND
    batch.writes.push_back(write(WriteOp::kUpsert, a, R"({"v":4})"));
    batch.writes.push_back(write(WriteOp::kDelete, b));  // NOT_FOUND
    transport::WriteRequest cas = write(WriteOp::kCompareAndSet, a, R"({"v":5})");
    cas.expected_version = 1;  // not the stored version: CONDITION_FAILED
    batch.writes.push_back(cas);
    auto answer = Call(kN1, std::move(batch));
    ASSERT_TRUE(StatusOf(answer).ok()) << StatusOf(answer);
    const auto& results = std::get<transport::BatchWriteResponse>(answer->body).results;
    ASSERT_EQ(results.size(), 6u);
    EXPECT_TRUE(results[0].status.ok()) << results[0].status;
    EXPECT_TRUE(storage::Is(results[1].status, storage::ErrorReason::kDuplicate));
    EXPECT_TRUE(storage::Is(results[2].status, storage::ErrorReason::kNotFound));
    EXPECT_TRUE(results[3].status.ok()) << results[3].status;
    EXPECT_GT(results[3].version, results[0].version);
    EXPECT_TRUE(storage::Is(results[4].status, storage::ErrorReason::kNotFound));
    EXPECT_TRUE(storage::Is(results[5].status, storage::ErrorReason::kConditionFailed));
    EXPECT_EQ(node(kN1).counters().batches_at_once, 1u);
    EXPECT_EQ(node(kN1).counters().batches_one_by_one, 0u);
    auto stored = node(kN1).store()->Get(kDocs, a);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->body, R"({"v":4})");
    EXPECT_EQ(stored->version, results[3].version);
  });
}

// A batch with a write the node cannot serve at once goes write by write: a fenced bucket's write
// waits and is refused (NOT_SERVING), another node's bucket answers WRONG_SHARD with the route,
// and the served write of the batch is still applied.
TEST_F(StorageNodeTest, ABatchWithAFencedOrForeignBucketGoesWriteByWrite) {
  Run([&] {
    Publish(maps_.copy);
    ASSERT_TRUE(StatusOf(Fence(kN1, kMove, kB0)).ok());
    const MapEpoch epoch = maps_.copy->epoch();
    transport::BatchWriteRequest batch{.epoch = epoch, .writes = {}};
    for (const std::string& key : {KeyIn(kB0, 0), KeyIn(kB1, 0)}) {
      batch.writes.push_back(transport::WriteRequest{.epoch = epoch,
                                                     .op = WriteOp::kUpsert,
                                                     .collection = kDocs,
                                                     .primary_key = key,
                                                     .body = R"({"v":1})"});
    }
    auto answer = Call(kN1, std::move(batch));
    ASSERT_TRUE(StatusOf(answer).ok()) << StatusOf(answer);
    const auto& results = std::get<transport::BatchWriteResponse>(answer->body).results;
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(transport::ClusterErrorOf(results[0].status), ClusterError::kNotServing)
        << results[0].status;
    EXPECT_EQ(transport::ClusterErrorOf(results[1].status), ClusterError::kWrongShard)
        << results[1].status;
    EXPECT_NE(answer->route, nullptr);
    EXPECT_EQ(node(kN1).counters().batches_at_once, 0u);
    EXPECT_EQ(node(kN1).counters().batches_one_by_one, 1u);
    EXPECT_FALSE(node(kN1).store()->Get(kDocs, KeyIn(kB0, 0)).ok());
  });
}

// A batch of gets whose buckets are all served here is read in one store call; each slot gets
// what the same get would alone. With a bucket not served here, the batch goes get by get.
TEST_F(StorageNodeTest, ABatchOfGetsIsReadAtOnceOrGetByGet) {
  Run([&] {
    const MapEpoch epoch = maps_.initial->epoch();
    const std::string a = KeyIn(kB0, 0), missing = KeyIn(kB0, 1), foreign = KeyIn(kB1, 0);
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, a, R"({"v":1})")).ok());
    auto get = [&](const std::string& key) {
      return transport::GetRequest{.epoch = epoch, .collection = kDocs, .primary_key = key};
    };
    const uint64_t reads = node(kN1).counters().reads;
    auto served =
        Call(kN1, transport::BatchGetRequest{.epoch = epoch, .gets = {get(a), get(missing)}});
    ASSERT_TRUE(StatusOf(served).ok()) << StatusOf(served);
    const auto& results = std::get<transport::BatchGetResponse>(served->body).results;
    ASSERT_EQ(results.size(), 2u);
    ASSERT_TRUE(results[0].status.ok()) << results[0].status;
    EXPECT_EQ(results[0].document.body, R"({"v":1})");
    EXPECT_TRUE(storage::Is(results[1].status, storage::ErrorReason::kNotFound));
    EXPECT_EQ(node(kN1).counters().reads, reads + 2);

    auto mixed =
        Call(kN1, transport::BatchGetRequest{.epoch = epoch, .gets = {get(foreign), get(a)}});
    ASSERT_TRUE(StatusOf(mixed).ok()) << StatusOf(mixed);
    const auto& mixed_results = std::get<transport::BatchGetResponse>(mixed->body).results;
    ASSERT_EQ(mixed_results.size(), 2u);
    EXPECT_EQ(transport::ClusterErrorOf(mixed_results[0].status), ClusterError::kWrongShard);
    EXPECT_NE(mixed->route, nullptr);
    ASSERT_TRUE(mixed_results[1].status.ok()) << mixed_results[1].status;
    EXPECT_EQ(mixed_results[1].document.body, R"({"v":1})");
  });
}

}  // namespace
}  // namespace shoal::node
