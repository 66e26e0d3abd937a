// ShardedCollection and Rebalancer: the operations in `normal`, adding and removing a shard,
// requests queued (not failed) in a barrier, a dead client leaving a barrier, and an open
// query holding back the cleanup (paper 000 §4, §6.5).

#include "src/clientside/sharded_collection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "src/clientside/consistent_ops.h"
#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/rebalancer.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

// A memory shard whose queries fail with kUnavailable once `fail_queries` is set; its calls count
// as round trips, so the merge reads it on pool threads.
class FlakyQueryShard final : public testing::ForwardingMemoryShard {
 public:
  FlakyQueryShard() : ForwardingMemoryShard("flaky") {}

  std::atomic<bool> fail_queries{false};

  bool RemoteCalls() const override { return true; }
  StatusOr<ShardPage> Query(const ShardQuery& q) override {
    if (fail_queries.load()) return UnavailableError("flaky shard down");
    return ForwardingMemoryShard::Query(q);
  }
};

class ShardedCollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenMetadata(dir_.path());
    for (uint32_t i = 0; i < 3; ++i) {
      catalog_->Set(ShardIndex(i), std::make_shared<MemoryShardBackend>(std::to_string(i)));
    }
  }
  std::unique_ptr<ShardedCollection> Open(std::string name = {}) {
    auto c = ShardedCollection::Open({.metadata = store_.get(),
                                      .catalog = catalog_,
                                      .collection = "c",
                                      .client_name = std::move(name),
                                      .session_ttl = std::chrono::seconds(30),
                                      .query_page_size = 7,
                                      // Small first pages too: queries span several pages.
                                      .rebalancing_first_page_size = 11});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  Status Rebalance() {
    Rebalancer r({.metadata = store_.get(),
                  .catalog = catalog_,
                  .collection = "c",
                  .page_size = 5,
                  .stop_requested = {},
                  .poll = std::chrono::milliseconds(1)});
    return r.Run();
  }
  std::vector<std::string> QueryKeys(ShardedCollection& c) {
    std::vector<std::string> keys;
    auto cursor = c.Query({});
    EXPECT_TRUE(cursor.ok());
    for (;;) {
      auto page = (*cursor)->Next(10);
      EXPECT_TRUE(page.ok());
      if (!page.ok() || page->empty()) break;
      for (const auto& d : *page) keys.push_back(d.primary_key);
    }
    return keys;
  }
  // Every document on shard h(pk) mod n with the current version, no tombstone.
  void ExpectPlaced(const ShardingState& s, size_t documents) {
    size_t seen = 0;
    for (uint32_t i = 0; i < 3; ++i) {
      ShardQuery q;
      q.include_tombstones = true;
      q.limit = 1000000;
      auto page = (*catalog_->Get(ShardIndex(i)))->Query(q);
      ASSERT_TRUE(page.ok());
      for (const auto& d : page->documents) {
        EXPECT_FALSE(d.tombstone) << d.DebugString();
        EXPECT_EQ(d.version, s.version) << d.DebugString();
        EXPECT_EQ(ShardFor(d.primary_key, s.shards), ShardIndex(i)) << d.DebugString();
        ++seen;
      }
    }
    EXPECT_EQ(seen, documents);
  }

  testing::ScopedTempDir dir_;
  std::unique_ptr<metadata::EmbeddedMetadataStore> store_;
  std::shared_ptr<ShardCatalog> catalog_ = std::make_shared<ShardCatalog>();
};

TEST_F(ShardedCollectionTest, NormalOperations) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 2).ok());
  auto c = Open();
  ASSERT_TRUE(c->Add("a", R"({"x":1})").ok());
  EXPECT_EQ(c->Add("a", R"({"x":2})").code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(c->Update("a", R"({"x":3})").ok());
  EXPECT_EQ(c->Update("b", "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(c->Get("a")->body, R"({"x":3})");
  EXPECT_TRUE(c->Delete("a").ok());
  EXPECT_EQ(c->Delete("a").code(), StatusCode::kNotFound);
  EXPECT_EQ(c->Get("a").status().code(), StatusCode::kNotFound);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(c->Add("k" + std::to_string(100 + i), "{}").ok());
  auto keys = QueryKeys(*c);
  EXPECT_EQ(keys.size(), 30u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_TRUE(c->CheckInvariants().ok());
}

TEST_F(ShardedCollectionTest, AddThenRemoveAShard) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 2).ok());
  auto a = Open("a");
  auto b = Open("b");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->Add("k" + std::to_string(i), "{}").ok());
  ASSERT_TRUE(BeginShardCountChange(*store_, "c", 3).ok());
  ASSERT_TRUE(Rebalance().ok());
  auto s = ReadShardingState(*store_, StateKeys("c"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(
      s->state,
      (ShardingState{
          .state = ClientState::kNormal, .version = MapVersion(2), .old_shards = 3, .shards = 3}));
  ExpectPlaced(s->state, 100);
  EXPECT_EQ(QueryKeys(*b).size(), 100u);
  ASSERT_TRUE(BeginShardCountChange(*store_, "c", 2).ok());
  ASSERT_TRUE(Rebalance().ok());
  s = ReadShardingState(*store_, StateKeys("c"));
  EXPECT_EQ(s->state.version, MapVersion(3));
  EXPECT_EQ(s->state.shards, 2u);
  ExpectPlaced(s->state, 100);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(b->Get("k" + std::to_string(i)).ok());
  EXPECT_TRUE(a->CheckInvariants().ok());
}

TEST_F(ShardedCollectionTest, RequestsAreQueuedInABarrierNotFailed) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 2).ok());
  auto a = Open("a");
  // A member that has not joined yet holds the barrier.
  const StateKeys keys("c");
  auto slow = store_->OpenSession(std::chrono::seconds(30));
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(store_->PutEphemeral(*slow, keys.member("slow"), "", metadata::kMustNotExist).ok());
  ASSERT_TRUE(BeginShardCountChange(*store_, "c", 3).ok());
  // Until its watch fires the client may still admit requests under `normal` (the barrier waits
  // for them); once it has seen the barrier state, requests queue.
  for (int i = 0; i < 5000 && a->state().state != ClientState::kEnterRebalance; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(a->state().state, ClientState::kEnterRebalance);
  auto add = std::async(std::launch::async, [&] { return a->Add("q", "{}"); });
  EXPECT_EQ(add.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(ReadShardingState(*store_, keys)->state.state, ClientState::kEnterRebalance);
  // The slow member dies: the barrier completes and the queued add runs in rebalancing.
  ASSERT_TRUE(store_->CloseSession(*slow).ok());
  ASSERT_TRUE(TryCompleteBarrier(*store_, keys).ok());
  EXPECT_TRUE(add.get().ok());
  EXPECT_EQ(a->state().state, ClientState::kRebalancing);
  EXPECT_TRUE(a->Get("q").ok());
  ASSERT_TRUE(Rebalance().ok());
  EXPECT_TRUE(a->Get("q").ok());
}

TEST_F(ShardedCollectionTest, OpenQueryHoldsBackTheCleanup) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 2).ok());
  auto a = Open("a");
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(a->Add("k" + std::to_string(100 + i), "{}").ok());
  ASSERT_TRUE(BeginShardCountChange(*store_, "c", 3).ok());
  // Wait for `rebalancing` (the client completes the barrier itself).
  for (int i = 0; i < 5000 && a->state().state != ClientState::kRebalancing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(a->state().state, ClientState::kRebalancing);
  auto cursor = a->Query({});
  ASSERT_TRUE(cursor.ok());
  auto first = (*cursor)->Next(10);
  ASSERT_TRUE(first.ok());
  auto rebalanced = std::async(std::launch::async, [&] { return Rebalance(); });
  // The rebalancer copies, reaches `cleanup`, and stays there while the cursor is open.
  for (int i = 0; i < 10000; ++i) {
    if (ReadShardingState(*store_, StateKeys("c"))->state.state == ClientState::kCleanup) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ReadShardingState(*store_, StateKeys("c"))->state.state, ClientState::kCleanup);
  EXPECT_EQ(rebalanced.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  // Every document is still there for the open cursor, exactly once.
  size_t total = first->size();
  for (;;) {
    auto page = (*cursor)->Next(10);
    ASSERT_TRUE(page.ok());
    if (page->empty()) break;
    total += page->size();
  }
  EXPECT_EQ(total, 50u);
  EXPECT_TRUE(rebalanced.get().ok());
  // The client learns the last state change by a watch, shortly after the rebalancer ends.
  for (int i = 0; i < 5000 && a->state().state != ClientState::kNormal; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(a->state().state, ClientState::kNormal);
}

TEST_F(ShardedCollectionTest, TwoRebalancersAtOnceAgree) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 2).ok());
  auto a = Open("a");
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(a->Add("k" + std::to_string(i), "{}").ok());
  for (uint32_t target : {3u, 1u, 2u}) {
    ASSERT_TRUE(BeginShardCountChange(*store_, "c", target).ok());
    auto first = std::async(std::launch::async, [&] { return Rebalance(); });
    auto second = std::async(std::launch::async, [&] { return Rebalance(); });
    EXPECT_TRUE(first.get().ok());
    EXPECT_TRUE(second.get().ok());
    auto s = ReadShardingState(*store_, StateKeys("c"));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->state.shards, target);
    ExpectPlaced(s->state, 200);
  }
  // Only the last barrier's join key of the client remains.
  auto joined = store_->List(StateKeys("c").root() + "barrier/");
  ASSERT_TRUE(joined.ok());
  EXPECT_LE(joined->size(), 1u);
}

TEST_F(ShardedCollectionTest, RebalancerResumesFromEveryKillPoint) {
  ASSERT_TRUE(InitShardingState(*store_, "c", 3).ok());
  auto a = Open("a");
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(a->Add("k" + std::to_string(i), "{}").ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(a->Delete("k" + std::to_string(i * 4)).ok());
  ASSERT_TRUE(BeginShardCountChange(*store_, "c", 2).ok());
  // A writer keeps adding while the rebalancer is killed after 1, 2, 3, ... steps until one run
  // completes (its requests queue while the state waits for the rebalancer).
  std::atomic<bool> done{false};
  std::atomic<int> acknowledged{0};
  std::thread writer([&] {
    for (int i = 0; !done.load() && i < 300; ++i) {
      if (a->Add("new" + std::to_string(i), "{}").ok()) acknowledged.fetch_add(1);
    }
  });
  int kills = 0;
  for (int budget = 1;; ++budget) {
    int left = budget;
    Rebalancer r({.metadata = store_.get(),
                  .catalog = catalog_,
                  .collection = "c",
                  .page_size = 3,
                  .stop_requested = [&] { return left-- <= 0; },
                  .poll = std::chrono::milliseconds(1)});
    Status s = r.Run();
    if (s.ok()) break;
    ASSERT_EQ(s.code(), StatusCode::kCancelled) << s;
    ++kills;
  }
  done.store(true);
  writer.join();
  EXPECT_GT(kills, 20);
  auto s = ReadShardingState(*store_, StateKeys("c"));
  size_t added = 0;
  for (const auto& key : QueryKeys(*a)) added += key.starts_with("new") ? 1 : 0;
  EXPECT_EQ(added, static_cast<size_t>(acknowledged.load()));
  ExpectPlaced(s->state, 30 + added);
}

// A query whose shard fails returns the error from then on and deregisters at once (its page
// reads are over), so it no longer holds back a cleanup.
TEST_F(ShardedCollectionTest, FailedQueryDeregistersAtOnce) {
  auto flaky = std::make_shared<FlakyQueryShard>();
  catalog_->Set(ShardIndex(1), flaky);
  ASSERT_TRUE(InitShardingState(*store_, "c", 3).ok());
  auto a = Open("a");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->Add("k" + std::to_string(i), "{}").ok());
  auto cursor = a->Query({});
  ASSERT_TRUE(cursor.ok());
  auto open = store_->List(StateKeys("c").queries());
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->size(), 1u);
  auto first = (*cursor)->Next(3);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 3u);
  flaky->fail_queries = true;
  StatusOr<std::vector<ShardDocument>> failed = std::vector<ShardDocument>{};
  for (int i = 0; i < 100 && failed.ok(); ++i) failed = (*cursor)->Next(3);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable) << failed.status();
  open = store_->List(StateKeys("c").queries());
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
  flaky->fail_queries = false;  // the query stays failed: rows it dropped cannot be replayed
  EXPECT_EQ((*cursor)->Next(3).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace shoal::clientside
