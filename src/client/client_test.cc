// Unit tests of the Client against an EmbeddedCluster (coordinator, metadata store, three
// storage nodes) on a SimRuntime without loss: single-key semantics and error reasons, routing
// with a stale map across moves, and queries that return each document exactly once while
// buckets move (docs/design/cluster.md, "Client").

#include "src/client/client.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "src/node/sim_test_options.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/transport/sim_runtime.h"

namespace shoal::client {
namespace {

using cluster::ShardMapPtr;
using storage::ErrorReason;
using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;

std::string Key(int i) { return fmt::format("d{}", i); }
std::string Body(int i) { return fmt::format(R"({{"i":{}}})", i); }

class ClientTest : public ::testing::Test {
 protected:
  ClientTest()
      : sim_(transport::SimOptions{.seed = 5, .min_delay = 100, .max_delay = 300, .loss = 0}) {
    dir_ = node::test::UniqueTestDir("shoal-client-test");
  }

  ~ClientTest() override {
    sim_.Shutdown();
    client_.reset();
    cluster_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts the cluster (no balancer) on a task, opens the collection, runs `body`, closes.
  void Run(const std::function<void()>& body) {
    server::EmbeddedClusterOptions options;
    options.data_dir = dir_;
    options.initial_nodes = 3;
    options.buckets = 8;
    options.sync = false;
    options.coordinator.auto_balance = false;
    options.coordinator.call_timeout = 200 * kMs;
    options.node.call_timeout = 200 * kMs;
    options.node.fence_timeout = 500 * kMs;
    options.node.heartbeat_interval = 50 * kMs;
    node::test::UseSmallTestStore(options.node.store);
    cluster_ = std::make_unique<server::EmbeddedCluster>(sim_, options);
    client_ = std::make_unique<Client>(sim_);
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      if (Status s = cluster_->Start(); !s.ok()) {
        ADD_FAILURE() << "start: " << s;
      } else if (auto collection = client_->OpenCollection("docs"); !collection.ok()) {
        ADD_FAILURE() << "collection: " << collection.status();
      } else {
        collection_ = *collection;
        body();
      }
      EXPECT_TRUE(cluster_->StopAll().ok());
      finished = true;
    });
    sim_.RunUntil(3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  coordinator::Coordinator& coordinator() { return *cluster_->coordinator(); }

  void Load(int documents) {
    for (int i = 0; i < documents; ++i) {
      auto written = client_->Insert(collection_, Key(i), Body(i));
      ASSERT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
  }

  // Runs `fn` on a task of the coordinator process and waits for it.
  Status Admin(std::function<Status(coordinator::Coordinator&)> fn) {
    struct State {
      bool done = false;
      Status status;
    };
    auto state = std::make_shared<State>();
    std::shared_ptr<coordinator::Coordinator> c = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "admin", [c, fn = std::move(fn), state] {
      state->status = fn(*c);
      state->done = true;
    });
    while (!state->done) {
      if (!sim_.Sleep(kMs).ok()) return CancelledError("test task stopped");
    }
    return state->status;
  }

  // Moves `bucket` to the next node (in id order) that does not hold it.
  Status MoveToNextNode(BucketId bucket) {
    ShardMapPtr map = coordinator().map();
    const cluster::BucketPlacement* placement = map->Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    const uint32_t from = placement->replicas.front().value();
    const NodeId to(from % 3 + 1);
    return Admin([bucket, to](coordinator::Coordinator& c) { return c.MoveBucket(bucket, to); });
  }

  transport::SimRuntime sim_;
  std::string dir_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::unique_ptr<Client> client_;
  CollectionId collection_;
};

TEST_F(ClientTest, SingleKeyOperationsAndTheirErrorReasons) {
  Run([&] {
    const CollectionId c = collection_;
    // Insert, then a second insert of the same key.
    auto v1 = client_->Insert(c, "a", R"({"n":1})");
    ASSERT_TRUE(v1.ok()) << v1.status();
    EXPECT_GT(*v1, 0u);
    auto again = client_->Insert(c, "a", R"({"n":2})");
    EXPECT_TRUE(storage::Is(again, ErrorReason::kDuplicate)) << again.status();
    EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
    auto got = client_->Get(c, "a");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, R"({"n":1})");
    EXPECT_EQ(got->version, *v1);
    EXPECT_EQ(got->primary_key, "a");

    // Update needs a live document.
    auto v2 = client_->Update(c, "a", R"({"n":3})");
    ASSERT_TRUE(v2.ok()) << v2.status();
    EXPECT_GT(*v2, *v1);
    EXPECT_TRUE(storage::Is(client_->Update(c, "missing", R"({"n":0})"), ErrorReason::kNotFound));

    // Upsert creates or replaces.
    auto u1 = client_->Upsert(c, "b", R"({"n":4})");
    ASSERT_TRUE(u1.ok()) << u1.status();
    auto u2 = client_->Upsert(c, "b", R"({"n":5})");
    ASSERT_TRUE(u2.ok()) << u2.status();
    EXPECT_GT(*u2, *u1);
    EXPECT_EQ(client_->Get(c, "b")->body, R"({"n":5})");

    // CompareAndSet on the version read; a stale version fails and changes nothing.
    auto cas = client_->CompareAndSet(c, "a", *v2, R"({"n":6})");
    ASSERT_TRUE(cas.ok()) << cas.status();
    EXPECT_GT(*cas, *v2);
    auto stale = client_->CompareAndSet(c, "a", *v2, R"({"n":7})");
    EXPECT_TRUE(storage::Is(stale, ErrorReason::kConditionFailed)) << stale.status();
    EXPECT_EQ(client_->Get(c, "a")->body, R"({"n":6})");
    EXPECT_TRUE(
        storage::Is(client_->CompareAndSet(c, "missing", 1, R"({"n":0})"), ErrorReason::kNotFound));

    // Delete, then the key is gone for every operation that needs it, and may be inserted again.
    auto deleted = client_->Delete(c, "a");
    ASSERT_TRUE(deleted.ok()) << deleted.status();
    EXPECT_GT(*deleted, *cas);
    EXPECT_TRUE(storage::Is(client_->Get(c, "a"), ErrorReason::kNotFound));
    EXPECT_TRUE(storage::Is(client_->Delete(c, "a"), ErrorReason::kNotFound));
    EXPECT_TRUE(storage::Is(client_->Update(c, "a", R"({"n":8})"), ErrorReason::kNotFound));
    auto reinserted = client_->Insert(c, "a", R"({"n":9})");
    ASSERT_TRUE(reinserted.ok()) << reinserted.status();
    EXPECT_GT(*reinserted, *deleted);

    // Invalid documents and unknown collections.
    auto not_json = client_->Insert(c, "j", "not json");
    EXPECT_TRUE(storage::Is(not_json, ErrorReason::kInvalidDocument)) << not_json.status();
    auto not_object = client_->Upsert(c, "j", "[1,2]");
    EXPECT_TRUE(storage::Is(not_object, ErrorReason::kInvalidDocument)) << not_object.status();
    EXPECT_TRUE(storage::Is(client_->Get(c, "j"), ErrorReason::kNotFound));
    auto unknown = client_->Get(CollectionId(77), "a");
    EXPECT_TRUE(storage::Is(unknown, ErrorReason::kUnknownCollection)) << unknown.status();

    // OpenCollection is idempotent by name.
    auto same = client_->OpenCollection("docs");
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(*same, c);
    EXPECT_EQ(client_->counters().wrong_shard, 0u);
  });
}

TEST_F(ClientTest, AClientWithAStaleMapFollowsMoves) {
  Run([&] {
    constexpr int kDocuments = 40;
    Load(kDocuments);
    if (HasFatalFailure()) return;
    Client stale(sim_);
    ASSERT_TRUE(stale.Refresh().ok());
    const MapEpoch stale_epoch = stale.map()->epoch();

    // Every bucket changes its owner, some twice.
    for (int round = 0; round < 2; ++round) {
      for (uint32_t b = 0; b < 8; b += round + 1) {
        Status moved = MoveToNextNode(BucketId(b));
        ASSERT_TRUE(moved.ok()) << "b" << b << ": " << moved;
      }
    }
    ASSERT_EQ(stale.map()->epoch(), stale_epoch);

    for (int i = 0; i < kDocuments; ++i) {
      auto got = stale.Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, Body(i));
    }
    EXPECT_GT(stale.counters().wrong_shard, 0u);
    EXPECT_EQ(stale.map()->epoch(), coordinator().map()->epoch());

    // A second stale client writes first, then reads.
    Client writer(sim_);
    ASSERT_TRUE(writer.Refresh().ok());
    ASSERT_TRUE(MoveToNextNode(BucketId(0)).ok());
    ASSERT_TRUE(MoveToNextNode(BucketId(3)).ok());
    for (int i = 0; i < kDocuments; ++i) {
      auto written = writer.Update(collection_, Key(i), R"({"updated":true})");
      ASSERT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
    EXPECT_GT(writer.counters().wrong_shard, 0u);
    for (int i = 0; i < kDocuments; ++i) {
      auto got = client_->Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, R"({"updated":true})") << Key(i);
    }
  });
}

TEST_F(ClientTest, QueryReturnsEveryDocumentOnceWhileBucketsMove) {
  Run([&] {
    constexpr int kDocuments = 60;
    Load(kDocuments);
    if (HasFatalFailure()) return;

    // Moves (and a split now and then) in another task until the query is done.
    bool query_done = false;
    bool mover_done = false;
    int moves = 0;
    std::vector<std::string> failures;
    sim_.Spawn(Address::Client(2), "mover", [&] {
      for (uint32_t round = 0; !query_done; ++round) {
        ShardMapPtr map = coordinator().map();
        const auto buckets = map->buckets();
        const BucketId bucket = buckets[round % buckets.size()].id;
        Status status =
            round % 5 == 4
                ? Admin([bucket](coordinator::Coordinator& c) { return c.SplitBucket(bucket); })
                : MoveToNextNode(bucket);
        if (status.ok()) {
          ++moves;
        } else {
          failures.push_back(status.ToString());
        }
        if (!sim_.Sleep(kMs).ok()) break;
      }
      mover_done = true;
    });

    Client reader(sim_);
    QueryOptions query;
    query.collection = collection_;
    query.limit = 3;
    std::map<std::string, int> seen;
    const uint64_t committed_before = coordinator().progress().committed;
    int pages = 0;
    for (; pages < 1000; ++pages) {
      auto page = reader.Query(query);
      ASSERT_TRUE(page.ok()) << "page " << pages << ": " << page.status();
      EXPECT_LE(page->documents.size(), 3u);
      for (const auto& document : page->documents) {
        ++seen[document.primary_key];
        EXPECT_EQ(document.collection, collection_);
      }
      if (page->next_cursor.empty()) break;
      query.cursor = page->next_cursor;
      ASSERT_TRUE(sim_.Sleep(2 * kMs).ok());
    }
    query_done = true;
    const uint64_t committed_during = coordinator().progress().committed - committed_before;
    while (!mover_done) ASSERT_TRUE(sim_.Sleep(kMs).ok());

    EXPECT_GE(pages, kDocuments / 3 - 1);
    EXPECT_GE(committed_during, 2u) << "the moves did not overlap the query";
    EXPECT_TRUE(failures.empty()) << failures.front();
    EXPECT_GT(moves, 0);
    EXPECT_EQ(seen.size(), static_cast<size_t>(kDocuments));
    for (int i = 0; i < kDocuments; ++i) {
      EXPECT_EQ(seen[Key(i)], 1) << Key(i);
    }
  });
}

// QueryStream over the simulation (Runtime::StreamScan's paged default): the documents of paged
// Query in the same order, each exactly once, while buckets move and split under the stream.
TEST_F(ClientTest, QueryStreamReturnsEveryDocumentOnceWhileBucketsMove) {
  Run([&] {
    constexpr int kDocuments = 60;
    Load(kDocuments);
    if (HasFatalFailure()) return;
    QueryOptions query;
    query.collection = collection_;
    query.limit = 4;
    std::vector<std::string> paged;
    for (int pages = 0; pages < 1000; ++pages) {
      auto page = client_->Query(query);
      ASSERT_TRUE(page.ok()) << page.status();
      for (const auto& document : page->documents) paged.push_back(document.primary_key);
      if (page->next_cursor.empty()) break;
      query.cursor = page->next_cursor;
    }
    ASSERT_EQ(paged.size(), static_cast<size_t>(kDocuments));
    query.cursor.clear();

    bool stream_done = false;
    bool mover_done = false;
    std::vector<std::string> failures;
    sim_.Spawn(Address::Client(2), "mover", [&] {
      for (uint32_t round = 0; !stream_done; ++round) {
        const auto buckets = coordinator().map()->buckets();
        const BucketId bucket = buckets[round % buckets.size()].id;
        Status status =
            round % 5 == 4
                ? Admin([bucket](coordinator::Coordinator& c) { return c.SplitBucket(bucket); })
                : MoveToNextNode(bucket);
        if (!status.ok()) failures.push_back(status.ToString());
        if (!sim_.Sleep(kMs).ok()) break;
      }
      mover_done = true;
    });
    Client reader(sim_);
    std::vector<std::string> streamed;
    const uint64_t committed_before = coordinator().progress().committed;
    Status status = reader.QueryStream(query, [&](storage::Document document) -> Status {
      EXPECT_EQ(document.collection, collection_);
      streamed.push_back(std::move(document.primary_key));
      // A slow reader: the moves overlap the stream.
      return sim_.Sleep(kMs);
    });
    stream_done = true;
    const uint64_t committed_during = coordinator().progress().committed - committed_before;
    while (!mover_done) ASSERT_TRUE(sim_.Sleep(kMs).ok());
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_GE(committed_during, 2u) << "the moves did not overlap the stream";
    EXPECT_TRUE(failures.empty()) << failures.front();
    EXPECT_GT(reader.counters().wrong_shard, 0u) << "no stream met a moved bucket";
    EXPECT_EQ(streamed, paged);

    // A non-OK status from the callback stops the stream and is returned as is.
    int delivered = 0;
    status = reader.QueryStream(query, [&](const storage::Document&) -> Status {
      return ++delivered == 5 ? AbortedError("enough") : OkStatus();
    });
    EXPECT_EQ(status.code(), StatusCode::kAborted) << status;
    EXPECT_EQ(delivered, 5);
    // Bad input is refused before anything is sent.
    query.limit = 0;
    EXPECT_EQ(reader.QueryStream(query, [](storage::Document) { return OkStatus(); }).code(),
              StatusCode::kInvalidArgument);
    query.limit = 4;
    query.cursor = "garbage";
    EXPECT_EQ(reader.QueryStream(query, [](storage::Document) { return OkStatus(); }).code(),
              StatusCode::kInvalidArgument);
  });
}

TEST_F(ClientTest, InvalidQueryInputIsRejected) {
  Run([&] {
    Load(5);
    if (HasFatalFailure()) return;
    QueryOptions query;
    query.collection = collection_;
    query.limit = 0;
    EXPECT_EQ(client_->Query(query).status().code(), StatusCode::kInvalidArgument);

    query.limit = 10;
    // Not a cursor, too short, a wrong tag, and a right header before a scan cursor that is not
    // one.
    const std::vector<std::string> malformed = {
        "garbage", "\x01short", std::string(9, '\x02'),
        std::string("\x01") + std::string(8, '\0') + "not a scan cursor"};
    for (const std::string& cursor : malformed) {
      query.cursor = cursor;
      auto page = client_->Query(query);
      EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument) << page.status();
    }

    // A valid cursor of a two-document page continues where it stopped.
    query.cursor.clear();
    query.limit = 2;
    auto first = client_->Query(query);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(first->documents.size(), 2u);
    ASSERT_FALSE(first->next_cursor.empty());
    query.cursor = first->next_cursor;
    query.limit = 10;
    auto rest = client_->Query(query);
    ASSERT_TRUE(rest.ok()) << rest.status();
    EXPECT_EQ(rest->documents.size(), 3u);
    EXPECT_TRUE(rest->next_cursor.empty());

    auto empty_name = client_->OpenCollection("");
    EXPECT_EQ(empty_name.status().code(), StatusCode::kInvalidArgument) << empty_name.status();
  });
}

// ---- Batch (docs/design/cluster.md, "Batch writes") ----

transport::WriteRequest BatchOp(transport::WriteOp op, CollectionId c, std::string key,
                                std::string body = "", uint64_t expected_version = 0) {
  return transport::WriteRequest{.epoch = {},
                                 .op = op,
                                 .collection = c,
                                 .primary_key = std::move(key),
                                 .body = std::move(body),
                                 .expected_version = expected_version,
                                 .via_move = std::nullopt};
}

// A JSON object of exactly `bytes` bytes (>= 8).
std::string BodyOfSize(size_t bytes) { return R"({"p":")" + std::string(bytes - 8, 'x') + "\"}"; }

TEST_F(ClientTest, BatchMixesOperationsAndAnswersInInputOrder) {
  using transport::WriteOp;
  Run([&] {
    const CollectionId c = collection_;
    auto existing = client_->Insert(c, "e", R"({"n":0})");
    ASSERT_TRUE(existing.ok()) << existing.status();
    std::vector<transport::WriteRequest> writes = {
        BatchOp(WriteOp::kInsert, c, "a", R"({"n":1})"),
        BatchOp(WriteOp::kUpdate, c, "missing", R"({"n":2})"),  // not found, in the middle
        BatchOp(WriteOp::kInsert, c, "e", R"({"n":3})"),        // duplicate
        BatchOp(WriteOp::kUpsert, c, "a", R"({"n":4})"),        // the same key again, in order
        BatchOp(WriteOp::kCompareAndSet, c, "e", R"({"n":5})", *existing),
        BatchOp(WriteOp::kCompareAndSet, c, "e", R"({"n":6})", *existing),  // now stale
        BatchOp(WriteOp::kDelete, c, "a"),
        BatchOp(WriteOp::kInsert, c, "a", R"({"n":7})"),  // again after the delete
        BatchOp(WriteOp::kUpsert, c, "j", "not json"),
    };
    // Enough keys that every node owns some.
    std::set<uint32_t> owners;
    for (int i = 0; i < 100; ++i) {
      writes.push_back(BatchOp(WriteOp::kUpsert, c, Key(i), Body(i)));
      owners.insert(OwnerOf(coordinator().map()->Lookup(PointOf(c, Key(i)))).value());
    }
    EXPECT_EQ(owners.size(), 3u);
    auto results = client_->Batch(writes);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_EQ(results->size(), writes.size());
    const auto& r = *results;
    ASSERT_TRUE(r[0].ok()) << r[0].status();
    EXPECT_TRUE(storage::Is(r[1], ErrorReason::kNotFound)) << r[1].status();
    EXPECT_TRUE(storage::Is(r[2], ErrorReason::kDuplicate)) << r[2].status();
    ASSERT_TRUE(r[3].ok()) << r[3].status();
    EXPECT_GT(*r[3], *r[0]);
    ASSERT_TRUE(r[4].ok()) << r[4].status();
    EXPECT_TRUE(storage::Is(r[5], ErrorReason::kConditionFailed)) << r[5].status();
    ASSERT_TRUE(r[6].ok()) << r[6].status();
    ASSERT_TRUE(r[7].ok()) << r[7].status();
    EXPECT_GT(*r[7], *r[6]);
    EXPECT_GT(*r[6], *r[3]);
    EXPECT_TRUE(storage::Is(r[8], ErrorReason::kInvalidDocument)) << r[8].status();
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(r[9 + i].ok()) << Key(i) << ": " << r[9 + i].status();
      auto got = client_->Get(c, Key(i));
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->body, Body(i));
      EXPECT_EQ(got->version, *r[9 + i]);
    }
    EXPECT_EQ(client_->Get(c, "a")->body, R"({"n":7})");
    EXPECT_EQ(client_->Get(c, "a")->version, *r[7]);
    EXPECT_EQ(client_->Get(c, "e")->body, R"({"n":5})");
    EXPECT_TRUE(storage::Is(client_->Get(c, "missing"), ErrorReason::kNotFound));
    EXPECT_TRUE(storage::Is(client_->Get(c, "j"), ErrorReason::kNotFound));
  });
}

TEST_F(ClientTest, BatchLimitsAreExactAndAnOversizedBatchWritesNothing) {
  using transport::WriteOp;
  Run([&] {
    const CollectionId c = collection_;
    EXPECT_EQ(client_->Batch({}).status().code(), StatusCode::kInvalidArgument);

    // Writes: exactly the limit is accepted, one more is refused whole.
    std::vector<transport::WriteRequest> writes;
    for (size_t i = 0; i <= transport::kMaxBatchWrites; ++i) {
      writes.push_back(BatchOp(WriteOp::kUpsert, c, fmt::format("w{}", i), "{}"));
    }
    auto too_many = client_->Batch(writes);
    EXPECT_EQ(too_many.status().code(), StatusCode::kResourceExhausted) << too_many.status();
    EXPECT_TRUE(storage::Is(client_->Get(c, "w0"), ErrorReason::kNotFound));
    writes.pop_back();
    auto at_limit = client_->Batch(writes);
    ASSERT_TRUE(at_limit.ok()) << at_limit.status();
    for (const auto& result : *at_limit) EXPECT_TRUE(result.ok()) << result.status();

    // Bytes: 16 writes of a 3-byte key and a body that fill kMaxBatchBytes exactly.
    const size_t per_write = transport::kMaxBatchBytes / 16;
    std::vector<transport::WriteRequest> big;
    for (int i = 0; i < 16; ++i) {
      big.push_back(
          BatchOp(WriteOp::kUpsert, c, fmt::format("b{:02}", i), BodyOfSize(per_write - 3)));
    }
    big.back().body = BodyOfSize(per_write - 3 + 1);
    auto too_big = client_->Batch(big);
    EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted) << too_big.status();
    EXPECT_TRUE(storage::Is(client_->Get(c, "b00"), ErrorReason::kNotFound));
    big.back().body = BodyOfSize(per_write - 3);
    auto at_bytes = client_->Batch(big);
    ASSERT_TRUE(at_bytes.ok()) << at_bytes.status();
    for (const auto& result : *at_bytes) EXPECT_TRUE(result.ok()) << result.status();

    // The node enforces the same limits on a hand-crafted request, before writing anything.
    const MapEpoch epoch = client_->map()->epoch();
    const NodeId owner = OwnerOf(client_->map()->Lookup(PointOf(c, "h00")));
    auto send = [&](std::vector<transport::WriteRequest> batch) {
      auto answer = sim_.Call(
          Address::Node(owner),
          transport::BatchWriteRequest{.epoch = epoch, .writes = std::move(batch)}, kSecond);
      return answer.ok() ? answer->status : answer.status();
    };
    EXPECT_EQ(send({}).code(), StatusCode::kInvalidArgument);
    std::vector<transport::WriteRequest> crafted(transport::kMaxBatchWrites + 1,
                                                 BatchOp(WriteOp::kUpsert, c, "h00", "{}"));
    EXPECT_EQ(send(crafted).code(), StatusCode::kResourceExhausted);
    crafted.resize(1);
    crafted[0].via_move = MoveId(1);
    EXPECT_EQ(send(crafted).code(), StatusCode::kInvalidArgument);
    big.back().body = BodyOfSize(per_write - 3 + 1);
    big.front().primary_key = "h00";  // as long as the key it replaces
    EXPECT_EQ(send(big).code(), StatusCode::kResourceExhausted);
    EXPECT_TRUE(storage::Is(client_->Get(c, "h00"), ErrorReason::kNotFound));
  });
}

TEST_F(ClientTest, BatchesDuringMovesLoseNoAcknowledgedWrite) {
  Run([&] {
    const CollectionId c = collection_;
    constexpr int kKeys = 60;
    // key -> the last round whose write was acknowledged, and rounds of unknown outcome.
    std::map<int, int> acked;
    std::map<int, std::set<int>> unknown;
    bool moves_done = false;
    bool writer_done = false;
    Client writer(sim_);
    sim_.Spawn(Address::Client(2), "batch-writer", [&] {
      // Until the moves are over, and two rounds more.
      int last_round = 1'000'000;
      for (int round = 1; round <= last_round; ++round) {
        if (moves_done && last_round > round + 2) last_round = round + 2;
        std::vector<transport::WriteRequest> writes;
        for (int k = 0; k < kKeys; ++k) {
          writes.push_back(
              BatchOp(transport::WriteOp::kUpsert, c, Key(k), fmt::format(R"({{"r":{}}})", round)));
        }
        auto results = writer.Batch(std::move(writes));
        if (!results.ok()) {
          ADD_FAILURE() << "round " << round << ": " << results.status();
          break;
        }
        for (int k = 0; k < kKeys; ++k) {
          const auto& result = (*results)[static_cast<size_t>(k)];
          if (result.ok()) {
            acked[k] = round;
          } else if (result.status().code() == StatusCode::kUnknown) {
            unknown[k].insert(round);
          } else {
            ADD_FAILURE() << Key(k) << " round " << round << ": " << result.status();
          }
        }
      }
      writer_done = true;
    });
    // Every bucket moves while the writer runs.
    for (uint32_t b = 0; b < 8; ++b) {
      Status moved = MoveToNextNode(BucketId(b));
      EXPECT_TRUE(moved.ok()) << "b" << b << ": " << moved;
    }
    moves_done = true;
    while (!writer_done) ASSERT_TRUE(sim_.Sleep(10 * kMs).ok());
    EXPECT_GT(writer.counters().wrong_shard, 0u);
    for (int k = 0; k < kKeys; ++k) {
      auto got = client_->Get(c, Key(k));
      ASSERT_TRUE(got.ok()) << Key(k) << ": " << got.status();
      const int stored = std::stoi(got->body.substr(5));
      // The last acknowledged round, or a later one whose outcome was unknown.
      const bool later_unknown = stored > acked[k] && unknown[k].count(stored) != 0;
      EXPECT_TRUE(stored == acked[k] || later_unknown)
          << Key(k) << " holds round " << stored << ", last acknowledged " << acked[k];
    }
  });
}

}  // namespace
}  // namespace shoal::client
