#include "src/client/coalescer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/client/client.h"
#include "src/client/fake_node.h"
#include "src/cluster/shard_map.h"
#include "src/transport/thread_runtime.h"

namespace shoal::client {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fake node

class CoalescerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_shared<FakeNode>(runtime_, MapOn(2, 2));
    runtime_.Serve(Address::Node(NodeId(1)), node_);
  }
  void TearDown() override { runtime_.Shutdown(); }

  // Holds the node and starts one call that it keeps in flight; returns its thread.
  std::thread HoldLane(Coalescer& coalescer, Request first) {
    node_->hold_all = true;
    std::thread t([&coalescer, first = std::move(first)]() mutable {
      (void)coalescer.Call(NodeId(1), std::move(first), 30'000'000);
    });
    EXPECT_TRUE(WaitFor([&] { return node_->held.load() == 1; }));
    return t;
  }

  transport::ThreadRuntime runtime_;
  std::shared_ptr<FakeNode> node_;
};

TEST_F(CoalescerTest, AloneGoesAtOnceAsASingleCall) {
  Coalescer coalescer(runtime_);
  auto response = coalescer.Call(NodeId(1), Upsert("a"), 5'000'000);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(std::get<transport::WriteResponse>(response->body).version, VersionOf("a"));
  const CoalescerCounters counters = coalescer.counters();
  EXPECT_EQ(counters.single_calls, 1u);
  EXPECT_EQ(counters.batch_calls, 0u);
}

// Operations queued behind a call in flight go out as one batch per kind when it returns, and
// each caller gets its own slot's result, errors included.
TEST_F(CoalescerTest, QueuedOperationsShareOneCallWithTheirOwnResults) {
  Coalescer coalescer(runtime_);
  std::thread first = HoldLane(coalescer, Upsert("first"));
  const std::vector<std::string> write_keys = {"w0", "w1", "dup-w2", "wrong-w3", "w4"};
  const std::vector<std::string> get_keys = {"g0", "missing-g1", "wrong-g2", "g3"};
  std::vector<StatusOr<Response>> writes(write_keys.size(), InternalError("unset"));
  std::vector<StatusOr<Response>> gets(get_keys.size(), InternalError("unset"));
  std::vector<std::thread> threads;
  // The get lane is idle: hold its first get too, so that the other gets queue.
  threads.emplace_back([&] { gets[0] = coalescer.Call(NodeId(1), Get(get_keys[0]), 30'000'000); });
  ASSERT_TRUE(WaitFor([&] { return node_->held.load() == 2; }));
  for (size_t i = 0; i < write_keys.size(); ++i) {
    threads.emplace_back(
        [&, i] { writes[i] = coalescer.Call(NodeId(1), Upsert(write_keys[i]), 30'000'000); });
  }
  for (size_t i = 1; i < get_keys.size(); ++i) {
    threads.emplace_back(
        [&, i] { gets[i] = coalescer.Call(NodeId(1), Get(get_keys[i]), 30'000'000); });
  }
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == 8; }));
  node_->hold_all = false;
  first.join();
  for (auto& t : threads) t.join();

  for (size_t i = 0; i < write_keys.size(); ++i) {
    ASSERT_TRUE(writes[i].ok()) << write_keys[i];
    const Response& r = *writes[i];
    if (write_keys[i].starts_with("dup")) {
      EXPECT_EQ(r.status.code(), StatusCode::kAlreadyExists);
    } else if (write_keys[i].starts_with("wrong")) {
      EXPECT_EQ(transport::ClusterErrorOf(r.status), ClusterError::kWrongShard);
      ASSERT_NE(r.route, nullptr);
      EXPECT_EQ(r.route->epoch(), MapEpoch(2));
    } else {
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(std::get<transport::WriteResponse>(r.body).version, VersionOf(write_keys[i]));
      EXPECT_EQ(r.route, nullptr);
    }
  }
  for (size_t i = 0; i < get_keys.size(); ++i) {
    ASSERT_TRUE(gets[i].ok()) << get_keys[i];
    const Response& r = *gets[i];
    if (get_keys[i].starts_with("missing")) {
      EXPECT_EQ(r.status.code(), StatusCode::kNotFound);
    } else if (get_keys[i].starts_with("wrong")) {
      EXPECT_EQ(transport::ClusterErrorOf(r.status), ClusterError::kWrongShard);
      EXPECT_NE(r.route, nullptr);
    } else {
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(std::get<transport::GetResponse>(r.body).document.primary_key, get_keys[i]);
    }
  }
  // Two held single calls, then one batch of the queued writes and one of the queued gets.
  const CoalescerCounters counters = coalescer.counters();
  EXPECT_EQ(counters.single_calls, 2u);
  EXPECT_EQ(counters.batch_calls, 2u);
  EXPECT_EQ(counters.batched_operations, 8u);
  EXPECT_EQ(node_->calls().size(), 4u);
}

// Many threads, many operations: each caller gets the result of its own key.
TEST_F(CoalescerTest, ManyThreadsGetTheirOwnResults) {
  Coalescer coalescer(runtime_);
  constexpr int kThreads = 24;
  constexpr int kOps = 200;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (i % 2 == 0) {
          auto r = coalescer.Call(NodeId(1), Upsert(key), 30'000'000);
          if (!r.ok() || !r->status.ok() ||
              std::get<transport::WriteResponse>(r->body).version != VersionOf(key)) {
            ++wrong;
          }
        } else {
          auto r = coalescer.Call(NodeId(1), Get(key), 30'000'000);
          if (!r.ok() || !r->status.ok() ||
              std::get<transport::GetResponse>(r->body).document.primary_key != key) {
            ++wrong;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const CoalescerCounters counters = coalescer.counters();
  EXPECT_EQ(counters.single_calls + counters.batched_operations,
            static_cast<uint64_t>(kThreads * kOps));
  EXPECT_EQ(counters.queued, 0u);
}

// A batch holds at most the configured number of operations (and of write bytes); the rest
// goes in the following calls, oldest first.
TEST_F(CoalescerTest, BatchesStayWithinTheLimits) {
  Coalescer coalescer(
      runtime_, {.max_batch_writes = 3, .max_batch_bytes = 2 * 1000 + 10, .max_batch_gets = 4});
  std::thread first = HoldLane(coalescer, Get("first"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 9; ++i) {
    threads.emplace_back([&, i] {
      auto r = coalescer.Call(NodeId(1), Get("g" + std::to_string(i)), 30'000'000);
      EXPECT_TRUE(r.ok() && r->status.ok());
    });
  }
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == 9; }));
  node_->hold_all = false;
  first.join();
  for (auto& t : threads) t.join();
  // One held single get, then 4 + 4 + 1 (the last batch of one goes as a single call).
  std::vector<size_t> sizes;
  for (const auto& call : node_->calls()) sizes.push_back(call.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 4, 4, 1}));

  // Writes of 1000 bytes of key and body: two fit the byte limit, a third exceeds it by 990.
  threads.clear();
  std::thread held_write = HoldLane(coalescer, Upsert("first-write"));
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      transport::WriteRequest write = Upsert("w" + std::to_string(i));
      write.body.assign(1000 - write.primary_key.size(), 'x');
      auto r = coalescer.Call(NodeId(1), std::move(write), 30'000'000);
      EXPECT_TRUE(r.ok() && r->status.ok());
    });
  }
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == 5; }));
  node_->hold_all = false;
  held_write.join();
  for (auto& t : threads) t.join();
  sizes.clear();
  for (const auto& call : node_->calls()) sizes.push_back(call.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 4, 4, 1, 1, 2, 2, 1}));
}

TEST_F(CoalescerTest, LimitsAreClampedToTheTransport) {
  Coalescer coalescer(runtime_, {.max_batch_writes = transport::kMaxBatchWrites + 1,
                                 .max_batch_bytes = transport::kMaxBatchBytes + 1,
                                 .max_batch_gets = transport::kMaxBatchGets + 1});
  std::thread first = HoldLane(coalescer, Get("first"));
  std::vector<std::thread> threads;
  const size_t queued = transport::kMaxBatchGets + 1;
  for (size_t i = 0; i < queued; ++i) {
    threads.emplace_back([&, i] {
      auto r = coalescer.Call(NodeId(1), Get("g" + std::to_string(i)), 30'000'000);
      EXPECT_TRUE(r.ok() && r->status.ok());
    });
  }
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == queued; }));
  node_->hold_all = false;
  first.join();
  for (auto& t : threads) t.join();
  std::vector<size_t> sizes;
  for (const auto& call : node_->calls()) sizes.push_back(call.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, transport::kMaxBatchGets, 1}));
}

TEST(BatchGetLimitsTest, ValidateBatchGet) {
  std::vector<transport::GetRequest> gets;
  EXPECT_EQ(transport::ValidateBatchGet(gets).code(), StatusCode::kInvalidArgument);
  for (size_t i = 0; i < transport::kMaxBatchGets; ++i) gets.push_back(Get(std::to_string(i)));
  EXPECT_TRUE(transport::ValidateBatchGet(gets).ok());
  gets.push_back(Get("one too many"));
  EXPECT_EQ(transport::ValidateBatchGet(gets).code(), StatusCode::kResourceExhausted);
  gets.pop_back();
  gets.back().via_move = MoveId(3);
  EXPECT_EQ(transport::ValidateBatchGet(gets).code(), StatusCode::kInvalidArgument);
  gets.back().via_move.reset();
  gets.back().include_tombstones = true;
  EXPECT_EQ(transport::ValidateBatchGet(gets).code(), StatusCode::kInvalidArgument);
}

// An operation still queued when its deadline passes leaves unsent (kUnavailable: certainly
// not handled); one in a batch that stalls returns at its deadline (kDeadlineExceeded).
TEST_F(CoalescerTest, NoOperationWaitsPastItsDeadline) {
  Coalescer coalescer(runtime_);
  std::thread first = HoldLane(coalescer, Upsert("first"));
  const auto start = std::chrono::steady_clock::now();
  auto expired = coalescer.Call(NodeId(1), Upsert("late"), 100'000);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_EQ(expired.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(coalescer.counters().expired_in_queue, 1u);
  EXPECT_EQ(coalescer.counters().queued, 0u);

  // Queue a patient write (it will lead the batch) and an impatient one behind the held call.
  node_->hold_batches = true;
  StatusOr<Response> patient = InternalError("unset");
  std::thread leader([&] { patient = coalescer.Call(NodeId(1), Upsert("patient"), 30'000'000); });
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == 1; }));
  StatusOr<Response> impatient = InternalError("unset");
  std::thread follower(
      [&] { impatient = coalescer.Call(NodeId(1), Upsert("impatient"), 300'000); });
  ASSERT_TRUE(WaitFor([&] { return coalescer.counters().queued == 2; }));
  node_->hold_all = false;  // the held call returns; the batch goes and stalls at the node
  first.join();
  follower.join();
  EXPECT_EQ(impatient.status().code(), StatusCode::kDeadlineExceeded);
  node_->hold_batches = false;
  leader.join();
  // Nothing was sent for "late"; "patient" and "impatient" went in one batch.
  std::vector<std::vector<std::string>> expected = {{"first"}, {"patient", "impatient"}};
  EXPECT_EQ(node_->calls(), expected);
}

// Through Client: a slot answered WRONG_SHARD is re-routed with the batch's route and retried at
// the new owner; the other slots keep their own results.
TEST_F(CoalescerTest, ClientReroutesAWrongShardSlot) {
  auto second = std::make_shared<FakeNode>(runtime_, nullptr);
  runtime_.Serve(Address::Node(NodeId(2)), second);
  Client client(runtime_, {.call_timeout = 30'000'000,
                           .max_attempts = 12,
                           .initial_backoff = 1'000,
                           .max_backoff = 200'000,
                           .stream_timeout = 60'000'000,
                           .coalesce = true});
  ASSERT_TRUE(client.Adopt(MapOn(1, 1)));
  node_->hold_all = true;
  std::thread first([&] { EXPECT_TRUE(client.Upsert(kCollection, "first", "{}").ok()); });
  ASSERT_TRUE(WaitFor([&] { return node_->held.load() == 1; }));
  std::vector<std::thread> threads;
  std::vector<StatusOr<uint64_t>> results(3, InternalError("unset"));
  const std::vector<std::string> keys = {"a", "wrong-b", "c"};
  for (size_t i = 0; i < keys.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = client.Upsert(kCollection, keys[i], "{}"); });
  }
  ASSERT_TRUE(WaitFor([&] { return client.counters().coalescer.queued == 3; }));
  node_->hold_all = false;
  first.join();
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << keys[i] << ": " << results[i].status().ToString();
    EXPECT_EQ(*results[i], VersionOf(keys[i]));
  }
  EXPECT_EQ(client.map()->epoch(), MapEpoch(2));
  EXPECT_GE(client.counters().wrong_shard, 1u);
  EXPECT_EQ(client.counters().coalescer.batch_calls, 1u);
  std::vector<std::vector<std::string>> at_second = {{"wrong-b"}};
  EXPECT_EQ(second->calls(), at_second);
}

}  // namespace
}  // namespace shoal::client
