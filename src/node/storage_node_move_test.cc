// Unit tests of StorageNode in a bucket move (docs/design/cluster.md, "Storage node"): fencing,
// the prepare map, commit and abort, dropping a bucket, and a move carried out by hand. The
// fixture is in storage_node_test_fixture.h.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "src/node/storage_node_test_fixture.h"

namespace shoal::node {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

TEST_F(StorageNodeTest, FencedSourceQueuesThenAnswersNotServing) {
  Run([&] {
    Publish(maps_.copy);
    const std::string key = KeyIn(kB0, 0);
    // The source of an uncommitted move serves until it is fenced.
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.copy, WriteOp::kUpsert, key, R"({"v":1})")).ok());
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kLeaving);
    EXPECT_TRUE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));

    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    EXPECT_GT(std::get<transport::FenceResponse>(fenced->body).sequence, 0u);
    EXPECT_FALSE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));

    const Micros start = sim_.Now();
    auto write = Write(kN1, maps_.copy, WriteOp::kUpsert, key, R"({"v":2})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing)
        << StatusOf(write);
    EXPECT_EQ(StatusOf(write).code(), StatusCode::kUnavailable);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);
    // Reads are fenced too.
    auto read = Get(kN1, maps_.copy, key);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(read)), ClusterError::kNotServing);
    EXPECT_GE(node(kN1).counters().queued, 2u);
    EXPECT_GE(node(kN1).counters().fence_timeouts, 2u);
    // The refused write changed nothing.
    auto stored = node(kN1).store()->Get(kDocs, key);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->body, R"({"v":1})");
  });
}

TEST_F(StorageNodeTest, PrepareMapQueuesAndAnAbortReleasesTheQueuedWrite) {
  Run([&] {
    Publish(maps_.prepare);
    const std::string key = KeyIn(kB0, 1);
    // kPrepare in the map fences the source by itself, without a FenceRequest.
    const Micros start = sim_.Now();
    auto refused = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":"refused"})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(refused)), ClusterError::kNotServing);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);

    // A write queued while the abort arrives is served once the map without the transition is
    // installed.
    bool done = false;
    Status queued_status;
    Micros queued_for = 0;
    sim_.Spawn(Address::Client(2), "queued-writer", [&] {
      const Micros begin = sim_.Now();
      auto r = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":"queued"})");
      queued_status = StatusOf(r);
      queued_for = sim_.Now() - begin;
      done = true;
    });
    ASSERT_TRUE(sim_.Sleep(10 * kMs).ok());
    EXPECT_FALSE(done);
    Publish(maps_.aborted);
    while (!done) ASSERT_TRUE(sim_.Sleep(kMs).ok());
    EXPECT_TRUE(queued_status.ok()) << queued_status;
    EXPECT_GE(queued_for, 10 * kMs);
    EXPECT_LT(queued_for, kFenceTimeout);
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kReadWrite);
    auto got = Get(kN1, maps_.aborted, key);
    ASSERT_TRUE(StatusOf(got).ok()) << StatusOf(got);
    EXPECT_EQ(std::get<transport::GetResponse>(got->body).document.body, R"({"v":"queued"})");
  });
}

TEST_F(StorageNodeTest, AfterTheCommitTheSourceAnswersWrongShardAndTheDestinationServes) {
  Run([&] {
    Publish(maps_.committed);
    const std::string key = KeyIn(kB0, 0);
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kLeaving);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kReadWrite);
    EXPECT_FALSE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));
    EXPECT_TRUE(node(kN2).CanAcknowledgeWrite(PointOf(kDocs, key)));

    auto at_source = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":1})");
    ASSERT_TRUE(at_source.ok()) << at_source.status();
    EXPECT_EQ(transport::ClusterErrorOf(at_source->status), ClusterError::kWrongShard);
    ASSERT_NE(at_source->route, nullptr);
    EXPECT_EQ(at_source->route->epoch(), maps_.committed->epoch());
    // A read from a client with the old map too (FAILURE-PATTERNS 4): the source still holds the
    // document, but no longer answers for it.
    auto read_at_source = Get(kN1, maps_.prepare, key);
    ASSERT_TRUE(read_at_source.ok()) << read_at_source.status();
    EXPECT_EQ(transport::ClusterErrorOf(read_at_source->status), ClusterError::kWrongShard);
    ASSERT_NE(read_at_source->route, nullptr);
    EXPECT_EQ(read_at_source->route->epoch(), maps_.committed->epoch());

    auto at_destination = Write(kN2, maps_.committed, WriteOp::kUpsert, key, R"({"v":1})");
    EXPECT_TRUE(StatusOf(at_destination).ok()) << StatusOf(at_destination);
    auto got = Get(kN2, maps_.committed, key);
    EXPECT_TRUE(StatusOf(got).ok()) << StatusOf(got);
  });
}

TEST_F(StorageNodeTest, DestinationOfAnUncommittedMoveDoesNotServe) {
  Run([&] {
    Publish(maps_.copy);
    const std::string key = KeyIn(kB0, 0);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kAdding);
    EXPECT_FALSE(node(kN2).CanAcknowledgeWrite(PointOf(kDocs, key)));

    const int fetches = coordinator_->get_map_requests();
    const Micros start = sim_.Now();
    auto write = Write(kN2, maps_.copy, WriteOp::kUpsert, key, R"({"v":1})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing)
        << StatusOf(write);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);
    // A client that routes to the destination may know the commit: the node asked for the map.
    EXPECT_GT(coordinator_->get_map_requests(), fetches);
    EXPECT_FALSE(node(kN2).store()->Get(kDocs, key).ok());

    // Once the coordinator holds the commit, the same request is served: the node learns it.
    coordinator_->SetMap(maps_.committed);
    auto served = Write(kN2, maps_.committed, WriteOp::kUpsert, key, R"({"v":2})");
    EXPECT_TRUE(StatusOf(served).ok()) << StatusOf(served);
    EXPECT_EQ(node(kN2).epoch(), maps_.committed->epoch());
  });
}

TEST_F(StorageNodeTest, DropBucketIsRefusedWhileTheNodeServesOrReceivesTheRange) {
  Run([&] {
    const std::string key = KeyIn(kB0, 0);
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, key, R"({"v":1})")).ok());

    // Stable replica.
    auto refused = Drop(kN1, maps_.initial, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);

    Publish(maps_.copy);
    // Source of an uncommitted move, and destination staging it.
    refused = Drop(kN1, maps_.copy, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
    refused = Drop(kN2, maps_.copy, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
    EXPECT_TRUE(node(kN1).store()->Get(kDocs, key).ok());

    // The drop carries the epoch that justifies it: a node behind it fetches the map first.
    coordinator_->SetMap(maps_.committed);
    auto dropped = Drop(kN1, maps_.committed, kB0);
    EXPECT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    EXPECT_EQ(node(kN1).epoch(), maps_.committed->epoch());
    EXPECT_TRUE(storage::Is(node(kN1).store()->Get(kDocs, key), storage::ErrorReason::kNotFound));
    // Dropping again is idempotent.
    EXPECT_TRUE(StatusOf(Drop(kN1, maps_.committed, kB0)).ok());

    // The committed destination serves the range: refused there.
    Install(kN2, maps_.committed);
    refused = Drop(kN2, maps_.committed, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
  });
}

TEST_F(StorageNodeTest, MoveByHandCarriesEveryWriteIncludingLaterDeletes) {
  Run([&] {
    std::vector<std::string> keys;
    for (int i = 0; i < 8; ++i) keys.push_back(KeyIn(kB0, i));
    // What the source acknowledged: body by key ("" = deleted) and version by key.
    std::map<std::string, std::string> expected;
    std::map<std::string, uint64_t> versions;
    auto write = [&](const ShardMapPtr& map, WriteOp op, const std::string& key,
                     const std::string& body) {
      auto r = Write(kN1, map, op, key, body);
      ASSERT_TRUE(StatusOf(r).ok()) << transport::ToString(op) << " " << key << ": " << StatusOf(r);
      versions[key] = std::get<transport::WriteResponse>(r->body).version;
      expected[key] = op == WriteOp::kDelete ? "" : body;
    };
    for (int i = 0; i < 5; ++i) {
      write(maps_.initial, WriteOp::kInsert, keys[i], fmt::format(R"({{"v":{}}})", i));
    }

    // Snapshot.
    Publish(maps_.copy);
    transport::ExportBucketRequest export_request;
    export_request.move = kMove;
    export_request.bucket = kB0;
    auto exported_response = Call(kN1, export_request);
    ASSERT_TRUE(StatusOf(exported_response).ok()) << StatusOf(exported_response);
    const storage::ExportedRange exported =
        std::get<transport::ExportBucketResponse>(exported_response->body).exported;
    EXPECT_EQ(exported.entries, 5u);
    transport::IngestBucketRequest ingest;
    ingest.move = kMove;
    ingest.bucket = kB0;
    ingest.exported = exported;
    auto ingested = Call(kN2, ingest);
    ASSERT_TRUE(StatusOf(ingested).ok()) << StatusOf(ingested);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kAdding);

    // Writes after the snapshot, including deletes of documents the snapshot holds.
    write(maps_.copy, WriteOp::kUpdate, keys[0], R"({"v":"updated"})");
    write(maps_.copy, WriteOp::kDelete, keys[1], "");
    write(maps_.copy, WriteOp::kInsert, keys[5], R"({"v":"new"})");

    // A catch-up round while the source still serves.
    Publish(maps_.catch_up);
    transport::CatchUpRequest round;
    round.move = kMove;
    round.bucket = kB0;
    round.source = kN1;
    round.after_sequence = exported.sequence;
    round.stop_below = 64;
    auto caught = Call(kN2, round);
    ASSERT_TRUE(StatusOf(caught).ok()) << StatusOf(caught);
    const auto first_round = std::get<transport::CatchUpResponse>(caught->body);
    EXPECT_EQ(first_round.applied, 3u);

    write(maps_.catch_up, WriteOp::kUpsert, keys[2], R"({"v":"upserted"})");
    write(maps_.catch_up, WriteOp::kDelete, keys[3], "");
    write(maps_.catch_up, WriteOp::kInsert, keys[6], R"({"v":"late"})");
    write(maps_.catch_up, WriteOp::kDelete, keys[6], "");

    // Prepare, fence, drain to the fence's sequence.
    Publish(maps_.prepare);
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    const uint64_t fence_sequence = std::get<transport::FenceResponse>(fenced->body).sequence;
    transport::CatchUpRequest drain;
    drain.move = kMove;
    drain.bucket = kB0;
    drain.source = kN1;
    drain.after_sequence = first_round.applied_sequence;
    drain.until_sequence = fence_sequence;
    drain.stop_below = 0;
    auto drained = Call(kN2, drain);
    ASSERT_TRUE(StatusOf(drained).ok()) << StatusOf(drained);
    EXPECT_GE(std::get<transport::CatchUpResponse>(drained->body).applied_sequence, fence_sequence);

    Publish(maps_.committed);
    uint64_t max_version = 0;
    for (const std::string& key : keys) {
      if (expected.count(key) == 0) continue;
      max_version = std::max(max_version, versions[key]);
      auto got = Get(kN2, maps_.committed, key);
      if (expected[key].empty()) {
        EXPECT_TRUE(storage::Is(StatusOf(got), storage::ErrorReason::kNotFound))
            << key << ": " << StatusOf(got);
        storage::GetOptions with_tombstones;
        with_tombstones.include_tombstones = true;
        auto tombstone = node(kN2).store()->Get(kDocs, key, with_tombstones);
        ASSERT_TRUE(tombstone.ok()) << key << ": " << tombstone.status();
        EXPECT_TRUE(tombstone->tombstone) << key;
        EXPECT_EQ(tombstone->version, versions[key]) << key;
      } else {
        ASSERT_TRUE(StatusOf(got).ok()) << key << ": " << StatusOf(got);
        const auto& document = std::get<transport::GetResponse>(got->body).document;
        EXPECT_EQ(document.body, expected[key]) << key;
        EXPECT_EQ(document.version, versions[key]) << key;
      }
    }
    EXPECT_EQ(node(kN2).counters().changes_applied, 7u);
    // The destination's own writes get versions above everything it received.
    auto own = Write(kN2, maps_.committed, WriteOp::kUpsert, keys[7], R"({"v":"dest"})");
    ASSERT_TRUE(StatusOf(own).ok()) << StatusOf(own);
    EXPECT_GT(std::get<transport::WriteResponse>(own->body).version, max_version);
  });
}

// The destination's first load report after the commit takes the moved bucket's size from the
// export (plus the catch-up's writes as churn) instead of scanning it again.
TEST_F(StorageNodeTest, AMovedInBucketArrivesWithItsSizeAndIsNotScannedAgain) {
  Run([&] {
    InsertInto(kB0, 8);
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kDelete, KeyIn(kB0, 0), "")).ok());
    Publish(maps_.copy);
    auto exported_response =
        Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0});
    ASSERT_TRUE(StatusOf(exported_response).ok()) << StatusOf(exported_response);
    const storage::ExportedRange exported =
        std::get<transport::ExportBucketResponse>(exported_response->body).exported;
    EXPECT_EQ(exported.entries, 8u);
    EXPECT_EQ(exported.live_documents, 7u);
    ASSERT_TRUE(StatusOf(Call(kN2,
                              transport::IngestBucketRequest{
                                  .move = kMove, .bucket = kB0, .exported = exported}))
                    .ok());
    // While the bucket is moving in, n2 reports what it serves (b1) and keeps b0's size.
    auto adding = Loads(kN2);
    EXPECT_FALSE(adding.contains(kB0));
    const uint64_t scans = node(kN2).counters().load_scans;

    Publish(maps_.committed);
    auto committed = Loads(kN2);
    ASSERT_TRUE(committed.contains(kB0));
    EXPECT_EQ(node(kN2).counters().load_scans, scans);
    auto exact = node(kN2).store()->ComputeStats(RangeOf(*maps_.initial, kB0));
    ASSERT_TRUE(exact.ok()) << exact.status();
    EXPECT_EQ(committed[kB0].documents, exact->documents);
    EXPECT_EQ(committed[kB0].bytes, exact->live_bytes);
    EXPECT_EQ(committed[kB0].documents, 7u);
  });
}

// An export from a binary that does not count the live part (the fields read as 0) must not
// make the bucket look empty: the destination scans it at its first report instead.
TEST_F(StorageNodeTest, AnExportWithoutItsLivePartIsScannedAtTheDestination) {
  Run([&] {
    InsertInto(kB0, 5);
    Publish(maps_.copy);
    auto exported_response =
        Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0});
    ASSERT_TRUE(StatusOf(exported_response).ok()) << StatusOf(exported_response);
    storage::ExportedRange exported =
        std::get<transport::ExportBucketResponse>(exported_response->body).exported;
    ASSERT_EQ(exported.live_documents, 5u);
    exported.live_documents = 0;
    exported.live_bytes = 0;
    ASSERT_TRUE(StatusOf(Call(kN2,
                              transport::IngestBucketRequest{
                                  .move = kMove, .bucket = kB0, .exported = exported}))
                    .ok());
    const uint64_t scans = node(kN2).counters().load_scans;
    Publish(maps_.committed);
    auto committed = Loads(kN2);
    ASSERT_TRUE(committed.contains(kB0));
    EXPECT_GT(node(kN2).counters().load_scans, scans);
    EXPECT_EQ(committed[kB0].documents, 5u);
  });
}

TEST_F(StorageNodeTest, FenceForAMoveMissingFromTheNodesMapFetchesTheMap) {
  Run([&] {
    // The coordinator has begun the move, but n1 has not heard of it.
    coordinator_->SetMap(maps_.copy);
    ASSERT_EQ(node(kN1).epoch(), maps_.initial->epoch());
    const int fetches = coordinator_->get_map_requests();
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    EXPECT_GT(coordinator_->get_map_requests(), fetches);
    EXPECT_EQ(node(kN1).epoch(), maps_.copy->epoch());
    // The fence holds: the source no longer serves the bucket.
    auto write = Write(kN1, maps_.copy, WriteOp::kUpsert, KeyIn(kB0, 0), R"({"v":1})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing);

    // A move that the coordinator's map does not hold either, or a node that is not its source,
    // is refused as stale.
    auto unknown = Fence(kN1, MoveId(99), kB0);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(unknown)), ClusterError::kStaleMove)
        << StatusOf(unknown);
    Install(kN2, maps_.copy);
    auto not_source = Fence(kN2, kMove, kB0);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(not_source)), ClusterError::kStaleMove)
        << StatusOf(not_source);
    // The other bucket was never fenced.
    EXPECT_TRUE(
        StatusOf(Write(kN2, maps_.copy, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})")).ok());
  });
}

// FAILURE-PATTERNS 3 and 7 (docs/design/failure-patterns.md): a catch-up round that finds
// nothing to apply is not the end of the move, and compactions of the source and of the
// destination's staged copy between the rounds change nothing. The destination ends equal to the
// source's logical state at the fence: every key's version, tombstone and body.
TEST_F(StorageNodeTest, EmptyRoundsAndCompactionsDuringCatchUpLeaveTheSourcesStateAtTheFence) {
  Run([&] {
    std::vector<std::string> keys;
    for (int i = 0; i < 8; ++i) keys.push_back(KeyIn(kB0, i));
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, keys[i],
                                 fmt::format(R"({{"v":{}}})", i)))
                      .ok());
    }
    const storage::PointRange range = RangeOf(*maps_.initial, kB0);
    auto write = [&](WriteOp op, int i, const std::string& body) {
      ASSERT_TRUE(StatusOf(Write(kN1, maps_.catch_up, op, keys[i], body)).ok()) << keys[i];
    };
    auto round = [&](uint64_t after) -> transport::CatchUpResponse {
      auto caught = Call(kN2, transport::CatchUpRequest{.move = kMove,
                                                        .bucket = kB0,
                                                        .source = kN1,
                                                        .after_sequence = after,
                                                        .until_sequence = {},
                                                        .stop_below = 64});
      EXPECT_TRUE(StatusOf(caught).ok()) << StatusOf(caught);
      if (!StatusOf(caught).ok()) return {};
      return std::get<transport::CatchUpResponse>(caught->body);
    };

    Publish(maps_.copy);
    const storage::ExportedRange exported = SnapshotToN2(kMove, kB0);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(node(kN2).store()->CompactRange(range).ok());

    // Nothing written since the snapshot: an empty round.
    Publish(maps_.catch_up);
    const transport::CatchUpResponse empty = round(exported.sequence);
    EXPECT_EQ(empty.applied, 0u);
    EXPECT_GE(empty.applied_sequence, exported.sequence);

    // Writes, then a compaction of the source, then a round that finds them.
    write(WriteOp::kUpdate, 0, R"({"v":"updated"})");
    write(WriteOp::kDelete, 1, "");
    write(WriteOp::kInsert, 6, R"({"v":"new"})");
    write(WriteOp::kUpsert, 2, R"({"v":"first overwrite"})");
    write(WriteOp::kUpsert, 2, R"({"v":"second overwrite"})");
    ASSERT_TRUE(node(kN1).store()->CompactRange(range).ok());
    const transport::CatchUpResponse second = round(empty.applied_sequence);
    EXPECT_EQ(second.applied, 5u);
    // Nothing new again: another empty round, and the destination compacts.
    const transport::CatchUpResponse third = round(second.applied_sequence);
    EXPECT_EQ(third.applied, 0u);
    ASSERT_TRUE(node(kN2).store()->CompactRange(range).ok());

    // More writes after the last round, a compaction of both, then fence and drain.
    write(WriteOp::kDelete, 0, "");
    write(WriteOp::kInsert, 7, R"({"v":"late"})");
    write(WriteOp::kDelete, 7, "");
    ASSERT_TRUE(node(kN1).store()->CompactRange(range).ok());
    ASSERT_TRUE(node(kN2).store()->CompactRange(range).ok());
    Publish(maps_.prepare);
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    auto drained =
        Call(kN2, transport::CatchUpRequest{
                      .move = kMove,
                      .bucket = kB0,
                      .source = kN1,
                      .after_sequence = third.applied_sequence,
                      .until_sequence = std::get<transport::FenceResponse>(fenced->body).sequence,
                      .stop_below = 0});
    ASSERT_TRUE(StatusOf(drained).ok()) << StatusOf(drained);
    EXPECT_EQ(std::get<transport::CatchUpResponse>(drained->body).applied, 3u);

    storage::GetOptions with_tombstones;
    with_tombstones.include_tombstones = true;
    for (const std::string& key : keys) {
      auto at_source = node(kN1).store()->Get(kDocs, key, with_tombstones);
      auto at_destination = node(kN2).store()->Get(kDocs, key, with_tombstones);
      ASSERT_EQ(at_source.ok(), at_destination.ok())
          << key << ": " << at_source.status() << " / " << at_destination.status();
      if (!at_source.ok()) continue;
      EXPECT_EQ(at_destination->version, at_source->version) << key;
      EXPECT_EQ(at_destination->tombstone, at_source->tombstone) << key;
      EXPECT_EQ(at_destination->body, at_source->body) << key;
    }
    // The deletes are tombstones at both ends, the other keys live.
    for (int i : {0, 1, 7}) {
      auto tombstone = node(kN2).store()->Get(kDocs, keys[i], with_tombstones);
      ASSERT_TRUE(tombstone.ok()) << keys[i] << ": " << tombstone.status();
      EXPECT_TRUE(tombstone->tombstone) << keys[i];
    }
  });
}

// FAILURE-PATTERNS 6 (docs/design/failure-patterns.md): a move of b0 is aborted in kCopy and
// retried at once as another move; every request of the first attempt that arrives late, while
// the retry runs, is refused by its move id and changes nothing, and the retry carries every
// write to the destination.
TEST_F(StorageNodeTest, LateRequestsOfAnAbortedAttemptAreRefusedDuringItsRetry) {
  Run([&] {
    const RetryMaps retry = BuildRetryMaps(maps_, kRetry);

    std::map<std::string, std::string> expected;  // key -> body ("" = deleted)
    auto write = [&](const ShardMapPtr& map, WriteOp op, const std::string& key,
                     const std::string& body) { WriteExpecting(expected, map, op, key, body); };
    for (int i = 0; i < 4; ++i) write(maps_.initial, WriteOp::kInsert, KeyIn(kB0, i), R"({"a":1})");

    // The first attempt: snapshot, staged at the destination.
    Publish(maps_.copy);
    const storage::ExportedRange first = SnapshotToN2(kMove, kB0);
    ASSERT_FALSE(HasFailure());
    write(maps_.copy, WriteOp::kUpdate, KeyIn(kB0, 0), R"({"a":"after first snapshot"})");

    // Aborted, and retried at once; the retry takes its own snapshot.
    Publish(retry.aborted);
    Publish(retry.copy);
    write(retry.copy, WriteOp::kDelete, KeyIn(kB0, 1), "");
    const storage::ExportedRange second = SnapshotToN2(kRetry, kB0);
    ASSERT_FALSE(HasFailure());
    write(retry.copy, WriteOp::kInsert, KeyIn(kB0, 4), R"({"a":"after retry snapshot"})");

    // The first attempt's requests, late: each is refused as stale.
    auto expect_stale = [&](const char* what, const StatusOr<Response>& response) {
      EXPECT_EQ(transport::ClusterErrorOf(StatusOf(response)), ClusterError::kStaleMove)
          << what << ": " << StatusOf(response);
    };
    expect_stale("ingest", Call(kN2, transport::IngestBucketRequest{
                                         .move = kMove, .bucket = kB0, .exported = first}));
    expect_stale("catch-up", Call(kN2, transport::CatchUpRequest{.move = kMove,
                                                                 .bucket = kB0,
                                                                 .source = kN1,
                                                                 .after_sequence = first.sequence,
                                                                 .until_sequence = {}}));
    expect_stale("read changes",
                 Call(kN1, transport::ReadChangesRequest{
                               .move = kMove, .bucket = kB0, .after_sequence = first.sequence}));
    expect_stale("fetch file",
                 Call(kN1, transport::FetchMoveFileRequest{
                               .move = kMove, .bucket = kB0, .sequence = first.sequence}));
    expect_stale("transfer", Call(kN2, transport::TransferBucketRequest{
                                           .move = kMove, .bucket = kB0, .source = kN1}));
    expect_stale("export", Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0}));
    expect_stale("fence", Fence(kN1, kMove, kB0));
    // The abort's drop of the destination's copy, late: n2 now receives the range for the retry.
    auto late_drop = Drop(kN2, retry.aborted, kB0);
    EXPECT_EQ(StatusOf(late_drop).code(), StatusCode::kFailedPrecondition) << StatusOf(late_drop);
    // None of them fenced the source or touched the retry's staged copy.
    EXPECT_TRUE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, KeyIn(kB0, 2))));
    write(retry.copy, WriteOp::kUpsert, KeyIn(kB0, 2), R"({"a":"after the late requests"})");

    // The retry completes: catch-up, fence, drain, commit.
    CommitRetryAndExpect(kRetry, retry, second.sequence, expected);
  });
}

}  // namespace
}  // namespace shoal::node
