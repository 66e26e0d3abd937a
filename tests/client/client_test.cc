// Unit tests of the Client against an EmbeddedCluster (coordinator, metadata store, three
// storage nodes) on a SimRuntime without loss: single-key semantics and error reasons, routing
// with a stale map across moves, and queries that return each document exactly once while
// buckets move (docs/design/cluster.md, "Client"). Batches are in client_batch_test.cc; the
// fixture is in client_test_fixture.h.

#include "src/client/client.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/client_test_fixture.h"

namespace shoal::client {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

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

// FindCollection looks a collection up without creating it; both calls refuse a name outside
// the rule before sending it.
TEST_F(ClientTest, FindCollectionNeverCreatesACollection) {
  Run([&] {
    auto found = client_->FindCollection("docs");
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(*found, collection_);
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto missing = client_->FindCollection("nocoll");
      EXPECT_TRUE(storage::Is(missing, ErrorReason::kUnknownCollection)) << missing.status();
      EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
      EXPECT_EQ(MessageOf(missing.status()), R"(no collection named "nocoll")");
    }
    auto created = client_->OpenCollection("nocoll");
    ASSERT_TRUE(created.ok()) << created.status();
    auto now_found = client_->FindCollection("nocoll");
    ASSERT_TRUE(now_found.ok()) << now_found.status();
    EXPECT_EQ(*now_found, *created);
    const uint64_t refreshes = client_->counters().map_refreshes;
    for (const std::string& bad : {std::string("bad\nname"), std::string("a\0b", 3)}) {
      EXPECT_EQ(client_->FindCollection(bad).status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(client_->OpenCollection(bad).status().code(), StatusCode::kInvalidArgument);
    }
    EXPECT_EQ(client_->counters().map_refreshes, refreshes);  // nothing was sent
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
    auto mover = StartMover();

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
    const uint64_t committed_during = coordinator().progress().committed - committed_before;
    StopMover(*mover);

    EXPECT_GE(pages, kDocuments / 3 - 1);
    EXPECT_GE(committed_during, 2u) << "the moves did not overlap the query";
    EXPECT_TRUE(mover->failures.empty()) << mover->failures.front();
    EXPECT_GT(mover->moves, 0);
    EXPECT_EQ(seen.size(), static_cast<size_t>(kDocuments));
    for (int i = 0; i < kDocuments; ++i) {
      EXPECT_EQ(seen[Key(i)], 1) << Key(i);
    }
  });
}

// FAILURE-PATTERNS field note B (docs/design/failure-patterns.md): a paged query while buckets
// move and split AND a writer changes half of the documents (updates, deletes, re-inserts) and
// adds new ones. No key comes back twice; every document nobody touched comes back exactly once,
// with its body.
TEST_F(ClientTest, QueryNeitherSkipsNorRepeatsWhileWritesAndMovesGoOn) {
  Run([&] {
    constexpr int kDocuments = 60;
    constexpr int kStable = 30;  // d0..d29 are never written again; d30..d59 churn
    Load(kDocuments);
    if (HasFatalFailure()) return;
    auto mover = StartMover();
    bool writer_stop = false;
    bool writer_done = false;
    uint64_t writes = 0;
    sim_.Spawn(Address::Client(3), "writer", [&] {
      Client writer(sim_);
      for (int round = 0; !writer_stop; ++round) {
        const int i = kStable + round % (kDocuments - kStable);
        switch (round % 3) {
          case 0:
            writes += writer.Upsert(collection_, Key(i), Body(1000 + round)).ok() ? 1 : 0;
            break;
          case 1:
            writes += writer.Delete(collection_, Key(i)).ok() ? 1 : 0;
            break;
          case 2:
            writes += writer.Upsert(collection_, fmt::format("n{}", round), Body(round)).ok();
            break;
        }
        if (!sim_.Sleep(kMs / 2).ok()) break;
      }
      writer_done = true;
    });

    Client reader(sim_);
    QueryOptions query;
    query.collection = collection_;
    query.limit = 3;
    std::map<std::string, int> seen;
    std::map<std::string, std::string> bodies;
    const uint64_t committed_before = coordinator().progress().committed;
    const uint64_t writes_before = writes;
    for (int pages = 0; pages < 2000; ++pages) {
      auto page = reader.Query(query);
      ASSERT_TRUE(page.ok()) << "page " << pages << ": " << page.status();
      for (const auto& document : page->documents) {
        ++seen[document.primary_key];
        bodies[document.primary_key] = document.body;
      }
      if (page->next_cursor.empty()) break;
      query.cursor = page->next_cursor;
      ASSERT_TRUE(sim_.Sleep(2 * kMs).ok());
    }
    const uint64_t committed_during = coordinator().progress().committed - committed_before;
    const uint64_t writes_during = writes - writes_before;
    writer_stop = true;
    while (!writer_done) ASSERT_TRUE(sim_.Sleep(kMs).ok());
    StopMover(*mover);

    EXPECT_GE(committed_during, 2u) << "the moves did not overlap the query";
    EXPECT_GE(writes_during, 20u) << "the writes did not overlap the query";
    EXPECT_TRUE(mover->failures.empty()) << mover->failures.front();
    for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key << " came back twice";
    for (int i = 0; i < kStable; ++i) {
      EXPECT_EQ(seen[Key(i)], 1) << Key(i) << " was skipped";
      EXPECT_EQ(bodies[Key(i)], Body(i)) << Key(i);
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

    auto mover = StartMover();
    Client reader(sim_);
    std::vector<std::string> streamed;
    const uint64_t committed_before = coordinator().progress().committed;
    Status status = reader.QueryStream(query, [&](storage::Document document) -> Status {
      EXPECT_EQ(document.collection, collection_);
      streamed.push_back(std::move(document.primary_key));
      // A slow reader: the moves overlap the stream.
      return sim_.Sleep(kMs);
    });
    const uint64_t committed_during = coordinator().progress().committed - committed_before;
    StopMover(*mover);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_GE(committed_during, 2u) << "the moves did not overlap the stream";
    EXPECT_TRUE(mover->failures.empty()) << mover->failures.front();
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

}  // namespace
}  // namespace shoal::client
