// Unit tests of Client::Batch against an EmbeddedCluster (docs/design/cluster.md, "Batch
// writes"): answers in input order, exact limits, and no acknowledged write lost while buckets
// move. The fixture is in client_test_fixture.h.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/client_test_fixture.h"

namespace shoal::client {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

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
