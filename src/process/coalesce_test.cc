// Coalescing over gRPC (docs/design/network.md, "Coalescing"): many threads share one client
// (ClientOptions::coalesce) of a 3-node cluster while every bucket moves, twice. Every
// acknowledged write reads back, each thread reads its own writes, no insert of an existing key
// is accepted, and the node refuses a batch get past its limit before reading anything. The same
// through the asynchronous operations, from chains of callbacks.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/net/grpc_runtime.h"
#include "src/process/processes.h"

namespace shoal::process {
namespace {

constexpr uint32_t kNodes = 3;
constexpr int kThreads = 16;
constexpr int kRaceKeys = 200;  // keys every thread tries to insert

class NetCoalesceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "shoal-net-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    CoordinatorProcessOptions options;
    options.data_dir = dir_ + "/coordinator";
    options.listen = "127.0.0.1:0";
    options.initial_nodes = kNodes;
    options.buckets = 8;
    options.sync = false;
    options.coordinator.auto_balance = false;
    auto coordinator = CoordinatorProcess::Start(options);
    ASSERT_TRUE(coordinator.ok()) << coordinator.status();
    coordinator_ = std::move(*coordinator);
    for (uint32_t id = 1; id <= kNodes; ++id) {
      NodeProcessOptions node;
      node.id = id;
      node.data_dir = fmt::format("{}/node-{}", dir_, id);
      node.listen = "127.0.0.1:0";
      node.coordinator = coordinator_->address();
      auto process = NodeProcess::Start(node);
      ASSERT_TRUE(process.ok()) << process.status();
      nodes_.push_back(std::move(*process));
    }
    auto runtime = net::GrpcRuntime::Start({.listen = {},
                                            .advertise = {},
                                            .coordinator = coordinator_->address(),
                                            .address_book_path = {},
                                            .max_message_bytes = net::kDefaultMaxMessageBytes,
                                            .server_mode = net::GrpcServerMode::kSync});
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    runtime_ = std::move(*runtime);
  }
  void TearDown() override {
    runtime_.reset();
    nodes_.clear();
    coordinator_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Moves every bucket to the next node, twice; returns the moves that committed.
  int MoveEveryBucketTwice() {
    int moved = 0;
    for (int round = 0; round < 2; ++round) {
      const cluster::ShardMapPtr map = coordinator_->coordinator().map();
      for (const auto& placement : map->buckets()) {
        const NodeId to(placement.replicas.front().value() % kNodes + 1);
        Status status = coordinator_->coordinator().MoveBucket(placement.id, to);
        EXPECT_TRUE(status.ok()) << status;
        moved += status.ok() ? 1 : 0;
      }
    }
    return moved;
  }

  // Every acknowledged write (key -> last acknowledged body) reads back.
  static void ExpectReadBack(client::Client& client, CollectionId c,
                             const std::map<std::string, std::string>& acknowledged) {
    ASSERT_GT(acknowledged.size(), 100u);
    for (const auto& [key, body] : acknowledged) {
      auto doc = client.Get(c, key);
      ASSERT_TRUE(doc.ok()) << key << ": " << doc.status();
      EXPECT_EQ(doc->body, body) << key;
    }
  }

  std::string dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;
  std::unique_ptr<net::GrpcRuntime> runtime_;
};

TEST_F(NetCoalesceTest, SharedClientKeepsEveryWriteThroughMoves) {
  client::ClientOptions options;
  options.call_timeout = 10'000'000;
  options.coalesce = true;
  client::Client client(*runtime_, options);
  ASSERT_TRUE(client.Refresh().ok());
  auto collection = client.OpenCollection("c");
  ASSERT_TRUE(collection.ok()) << collection.status();
  const CollectionId c = *collection;

  std::mutex mu;
  std::map<std::string, std::string> acknowledged;  // key -> last acknowledged body
  std::map<int, int> race_wins;                     // race key -> accepted inserts
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};          // results no single call could have given
  std::atomic<int> unknown{0};         // kUnknown (a lost reply): allowed, counted
  std::atomic<int> own_mismatches{0};  // a thread did not read its own write
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::map<std::string, std::string> mine;
      for (int i = 0; !stop.load(); ++i) {
        const std::string body = fmt::format(R"({{"t": {}, "i": {}}})", t, i);
        switch (i % 4) {
          case 0: {  // a new key of this thread, then a second insert of it
            const std::string key = fmt::format("t{}-{}", t, i);
            auto inserted = client.Insert(c, key, body);
            if (inserted.ok()) {
              mine[key] = body;
              auto again = client.Insert(c, key, "{}");
              if (again.ok()) ++errors;  // a duplicate insert was accepted
              if (!again.ok() && again.status().code() != StatusCode::kAlreadyExists &&
                  again.status().code() != StatusCode::kUnknown) {
                ++errors;
              }
            } else if (inserted.status().code() == StatusCode::kUnknown) {
              ++unknown;
            } else {
              ++errors;
            }
            break;
          }
          case 1: {  // overwrite one of 20 keys of this thread
            const std::string key = fmt::format("u{}-{}", t, i % 20);
            auto written = client.Upsert(c, key, body);
            if (written.ok()) {
              mine[key] = body;
            } else if (written.status().code() == StatusCode::kUnknown) {
              ++unknown;
              mine.erase(key);  // its value is one of two now
            } else {
              ++errors;
            }
            break;
          }
          case 2: {  // read back a key this thread wrote
            if (mine.empty()) break;
            auto it = mine.begin();
            std::advance(it, i % mine.size());
            auto doc = client.Get(c, it->first);
            if (!doc.ok() || doc->body != it->second) ++own_mismatches;
            break;
          }
          case 3: {  // every thread races to insert the same keys
            const int race = i / 4 % kRaceKeys;
            auto inserted = client.Insert(c, fmt::format("race-{}", race), body);
            std::lock_guard<std::mutex> lock(mu);
            if (inserted.ok()) {
              ++race_wins[race];
            } else if (inserted.status().code() == StatusCode::kUnknown) {
              ++unknown;
            } else if (inserted.status().code() != StatusCode::kAlreadyExists) {
              ++errors;
            }
            break;
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      acknowledged.insert(mine.begin(), mine.end());
    });
  }

  const int moved = MoveEveryBucketTwice();
  // Run on until the client has sent a good number of batches (the load decides when).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (client.counters().coalescer.batch_calls < 20 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  for (auto& t : threads) t.join();

  const client::ClientCounters counters = client.counters();
  std::printf(
      "batch calls %llu carrying %llu operations, single calls %llu, wrong shard %llu, "
      "unknown outcomes %d\n",
      static_cast<unsigned long long>(counters.coalescer.batch_calls),
      static_cast<unsigned long long>(counters.coalescer.batched_operations),
      static_cast<unsigned long long>(counters.coalescer.single_calls),
      static_cast<unsigned long long>(counters.wrong_shard), unknown.load());
  EXPECT_EQ(moved, 16);
  EXPECT_GE(counters.coalescer.batch_calls, 20u);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(own_mismatches.load(), 0);
  for (const auto& [race, wins] : race_wins) EXPECT_EQ(wins, 1) << "race-" << race;
  ExpectReadBack(client, c, acknowledged);
}

// The client's runtime sends its asynchronous calls as unary calls (false) or over the pipe
// (true, GrpcRuntimeOptions::pipe).
class NetAsyncTest : public NetCoalesceTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    NetCoalesceTest::SetUp();
    if (HasFatalFailure()) return;
    runtime_.reset();
    auto runtime =
        net::GrpcRuntime::Start({.coordinator = coordinator_->address(), .pipe = GetParam()});
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    runtime_ = std::move(*runtime);
  }
};

INSTANTIATE_TEST_SUITE_P(Calls, NetAsyncTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pipe" : "Unary"; });

// The asynchronous operations (client.h, pipeline.h): many chains of operations in flight from
// callbacks while every bucket moves, twice. Each chain's operations are ordered (the next one
// starts from the previous one's callback), so a chain reads its own writes; every acknowledged
// write reads back; the first attempts that met a moved bucket were finished by the synchronous
// path.
TEST_P(NetAsyncTest, AsyncClientKeepsEveryWriteThroughMoves) {
  constexpr int kChains = 32;
  client::ClientOptions options;
  options.call_timeout = 10'000'000;
  auto client = std::make_unique<client::Client>(*runtime_, options);
  ASSERT_TRUE(client->Refresh().ok());
  auto collection = client->OpenCollection("c");
  ASSERT_TRUE(collection.ok()) << collection.status();
  const CollectionId c = *collection;

  // One chain's state, touched only by its own callbacks (one at a time).
  struct Chain {
    std::map<std::string, std::string> mine;  // key -> last acknowledged body
    int step = 0;
  };
  std::vector<Chain> chains(kChains);
  std::atomic<bool> stop{false};
  std::atomic<int> running{kChains};
  std::atomic<int> errors{0};          // results no single call could have given
  std::atomic<int> unknown{0};         // kUnknown (a lost reply): allowed, counted
  std::atomic<int> own_mismatches{0};  // a chain did not read its own write
  std::atomic<int> operations{0};
  std::function<void(int)> next = [&](int n) {
    Chain& chain = chains[n];
    if (stop.load()) {
      --running;
      return;
    }
    ++operations;
    const int i = chain.step++;
    const std::string body = fmt::format(R"({{"n": {}, "i": {}}})", n, i);
    switch (i % 3) {
      case 0: {  // a new key of this chain
        const std::string key = fmt::format("a{}-{}", n, i);
        client->WriteAsync(
            {.op = transport::WriteOp::kInsert, .collection = c, .primary_key = key, .body = body},
            [&, n, key, body](StatusOr<uint64_t> v) {
              if (v.ok()) {
                chains[n].mine[key] = body;
              } else if (v.status().code() == StatusCode::kUnknown) {
                ++unknown;
              } else {
                ++errors;
              }
              next(n);
            });
        return;
      }
      case 1: {  // overwrite one of 10 keys of this chain
        const std::string key = fmt::format("b{}-{}", n, i % 10);
        client->WriteAsync(
            {.op = transport::WriteOp::kUpsert, .collection = c, .primary_key = key, .body = body},
            [&, n, key, body](StatusOr<uint64_t> v) {
              if (v.ok()) {
                chains[n].mine[key] = body;
              } else if (v.status().code() == StatusCode::kUnknown) {
                ++unknown;
                chains[n].mine.erase(key);  // one of two values now
              } else {
                ++errors;
              }
              next(n);
            });
        return;
      }
      default: {  // read back a key this chain wrote
        if (chain.mine.empty()) return next(n);
        auto it = chain.mine.begin();
        std::advance(it, i % chain.mine.size());
        client->GetAsync(c, it->first,
                         [&, n, expected = it->second](StatusOr<storage::Document> d) {
                           if (!d.ok() || d->body != expected) ++own_mismatches;
                           next(n);
                         });
        return;
      }
    }
  };
  for (int n = 0; n < kChains; ++n) next(n);

  const int moved = MoveEveryBucketTwice();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (client->counters().pipeline.batch_calls < 20 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  client->WaitAsync();
  EXPECT_EQ(running.load(), 0);

  const client::ClientCounters counters = client->counters();
  std::printf(
      "%d operations; batch calls %llu carrying %llu operations, single calls %llu; finished by "
      "the synchronous path %llu; unknown outcomes %d\n",
      operations.load(), static_cast<unsigned long long>(counters.pipeline.batch_calls),
      static_cast<unsigned long long>(counters.pipeline.batched_operations),
      static_cast<unsigned long long>(counters.pipeline.single_calls),
      static_cast<unsigned long long>(counters.async_retried), unknown.load());
  EXPECT_EQ(moved, 16);
  EXPECT_GE(counters.pipeline.batch_calls, 20u);
  EXPECT_GT(counters.async_retried, 0u);  // first attempts met moved buckets
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(own_mismatches.load(), 0);
  std::map<std::string, std::string> acknowledged;
  for (const Chain& chain : chains) acknowledged.insert(chain.mine.begin(), chain.mine.end());
  ExpectReadBack(*client, c, acknowledged);
}

// A batch get past the limit is refused whole; one at the limit is answered slot by slot.
TEST_F(NetCoalesceTest, NodeChecksTheBatchGetLimit) {
  client::Client client(*runtime_);
  ASSERT_TRUE(client.Refresh().ok());
  auto collection = client.OpenCollection("c");
  ASSERT_TRUE(collection.ok()) << collection.status();
  ASSERT_TRUE(client.Upsert(*collection, "k0", R"({"v": 0})").ok());
  const cluster::ShardMapPtr map = client.map();
  std::vector<transport::GetRequest> gets;
  for (size_t i = 0; i < transport::kMaxBatchGets; ++i) {
    gets.push_back(transport::GetRequest{.epoch = {},
                                         .collection = *collection,
                                         .primary_key = fmt::format("k{}", i),
                                         .via_move = std::nullopt,
                                         .include_tombstones = false});
  }
  const NodeId owner = client::OwnerOf(map->Lookup(PointOf(*collection, "k0")));
  auto at_limit =
      runtime_->Call(transport::Address::Node(owner),
                     transport::BatchGetRequest{.epoch = map->epoch(), .gets = gets}, 10'000'000);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  ASSERT_TRUE(at_limit->status.ok()) << at_limit->status;
  auto body = transport::BodyAs<transport::BatchGetResponse>(std::move(*at_limit));
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->results.size(), transport::kMaxBatchGets);
  for (size_t i = 0; i < gets.size(); ++i) {
    const transport::BatchGetResult& result = body->results[i];
    if (i == 0) {
      ASSERT_TRUE(result.status.ok()) << result.status;
      EXPECT_EQ(result.document.body, R"({"v": 0})");
    } else if (client::OwnerOf(map->Lookup(PointOf(*collection, gets[i].primary_key))) == owner) {
      EXPECT_EQ(result.status.code(), StatusCode::kNotFound) << result.status;
    } else {
      EXPECT_EQ(transport::ClusterErrorOf(result.status), transport::ClusterError::kWrongShard)
          << result.status;
    }
  }
  gets.push_back(gets.front());
  auto past_limit =
      runtime_->Call(transport::Address::Node(owner),
                     transport::BatchGetRequest{.epoch = map->epoch(), .gets = gets}, 10'000'000);
  ASSERT_TRUE(past_limit.ok()) << past_limit.status();
  EXPECT_EQ(past_limit->status.code(), StatusCode::kResourceExhausted) << past_limit->status;
}

}  // namespace
}  // namespace shoal::process
