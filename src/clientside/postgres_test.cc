// The PostgreSQL shard backend against a real server that the test starts itself (on a free
// loopback port, in a temp dir, as the `postgres` user when run as root) and stops afterwards:
// the ShardBackend contract, the interleaving-relevant conditional operations under real
// concurrency, and the stress workload (add and remove a shard under load) on PostgreSQL shards.
// Missing PostgreSQL binaries fail the test with a message saying what to install.

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <thread>

#include "src/clientside/consistent_ops.h"
#include "src/clientside/postgres_shard_backend.h"
#include "src/clientside/postgres_test_server.h"
#include "src/clientside/stress_harness.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

class PostgresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = testing::PostgresTestServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << "the PostgreSQL server did not start"; }

  std::shared_ptr<PostgresShardBackend> NewShard(const std::string& table) {
    auto shard = PostgresShardBackend::Create({.conninfo = server_->conninfo(),
                                               .table = table,
                                               .max_idle_connections = 32,
                                               .max_prepared_statements = 256});
    EXPECT_TRUE(shard.ok()) << shard.status();
    return shard.ok() ? std::shared_ptr<PostgresShardBackend>(*std::move(shard)) : nullptr;
  }

  static testing::PostgresTestServer* server_;
};

testing::PostgresTestServer* PostgresTest::server_ = nullptr;

TEST_F(PostgresTest, Contract) {
  auto shard = NewShard("contract");
  ASSERT_NE(shard, nullptr);
  testing::CheckBackendContract(*shard);
  EXPECT_TRUE(shard->DropTable().ok());
}

TEST_F(PostgresTest, ErrorsAreStatusesNotExceptions) {
  auto bad = PostgresShardBackend::Create(
      {.conninfo = "host=127.0.0.1 port=1 user=postgres dbname=postgres connect_timeout=2",
       .table = "nowhere",
       .max_idle_connections = 1,
       .max_prepared_statements = 256});
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable) << bad.status();
  EXPECT_EQ(PostgresShardBackend::Create({.conninfo = server_->conninfo(),
                                          .table = "bad-name; DROP",
                                          .max_idle_connections = 1,
                                          .max_prepared_statements = 256})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

// Every backend call is one round trip; a statement costs one more, once per connection, when
// it is prepared there.
TEST_F(PostgresTest, OneRoundTripPerCall) {
  auto shard = NewShard("trips");
  ASSERT_NE(shard, nullptr);
  auto doc = [](std::string key, uint64_t v, bool tombstone) {
    return ShardDocument{.primary_key = std::move(key),
                         .body = tombstone ? "" : "{\"g\":1}",
                         .version = MapVersion(v),
                         .tombstone = tombstone};
  };
  ShardQuery query;
  query.filter.all_of.push_back({.path = "g", .op = storage::CompareOp::kEq, .value = int64_t{1}});
  query.or_version = MapVersion(2);
  query.limit = 1;
  // Each call below, issued twice: the first prepares its statement, the second reuses it.
  const std::vector<std::function<Status(int)>> calls = {
      [&](int i) { return shard->Insert(doc("a" + std::to_string(i), 1, false)); },
      [&](int i) { return shard->Upsert(doc("b" + std::to_string(i), 1, false)); },
      [&](int i) {
        return shard->UpsertIf(doc("a" + std::to_string(i), 2, true), ShardCondition::IsLive());
      },
      [&](int i) {
        return shard->UpdateIf(doc("b" + std::to_string(i), 2, false),
                               ShardCondition::VersionIs(MapVersion(1)));
      },
      [&](int i) { return shard->Get("a" + std::to_string(i)).status(); },
      [&](int i) { return shard->DeleteIf("b" + std::to_string(i), ShardCondition::IsLive()); },
      [&](int) { return shard->Query(query).status(); },
  };
  for (const auto& call : calls) {
    for (int i = 0; i < 2; ++i) {
      const uint64_t before = shard->round_trips();
      EXPECT_TRUE(call(i).ok());
      EXPECT_EQ(shard->round_trips() - before, i == 0 ? 2u : 1u) << "call " << &call - &calls[0];
    }
  }
  EXPECT_TRUE(shard->DropTable().ok());
}

// Past max_prepared_statements a connection runs its statements unprepared: same results, one
// round trip each, no preparation.
TEST_F(PostgresTest, PreparedStatementLimit) {
  auto created = PostgresShardBackend::Create({.conninfo = server_->conninfo(),
                                               .table = "prepared_limit",
                                               .max_idle_connections = 1,
                                               .max_prepared_statements = 2});
  ASSERT_TRUE(created.ok()) << created.status();
  PostgresShardBackend& shard = **created;
  ASSERT_TRUE(shard
                  .Insert({.primary_key = "k",
                           .body = "{\"n\":1}",
                           .version = MapVersion(1),
                           .tombstone = false})
                  .ok());
  ASSERT_TRUE(shard.Get("k").ok());  // the second and last prepared statement
  uint64_t before = shard.round_trips();
  ASSERT_TRUE(shard.Get("k").ok());
  EXPECT_EQ(shard.round_trips() - before, 1u);
  // A third statement (one over the limit) and a fourth run unprepared, every time.
  for (int i = 0; i < 2; ++i) {
    before = shard.round_trips();
    EXPECT_EQ(shard.Delete("missing").code(), StatusCode::kNotFound);
    EXPECT_EQ(shard.round_trips() - before, 1u);
    before = shard.round_trips();
    auto page = shard.Query(ShardQuery{});
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->documents.size(), 1u);
    EXPECT_EQ(page->documents[0].body, "{\"n\": 1}");
    EXPECT_EQ(shard.round_trips() - before, 1u);
  }
  EXPECT_TRUE(shard.DropTable().ok());
}

// A durable server (PostgreSQL's defaults: fsync and synchronous_commit on) runs the contract.
TEST(PostgresDurableTest, Contract) {
  auto server = testing::PostgresTestServer::Start({.durable = true});
  ASSERT_TRUE(server.ok()) << server.status();
  auto shard = PostgresShardBackend::Create({.conninfo = (*server)->conninfo(),
                                             .table = "durable",
                                             .max_idle_connections = 4,
                                             .max_prepared_statements = 256});
  ASSERT_TRUE(shard.ok()) << shard.status();
  testing::CheckBackendContract(**shard);
}

// Concurrent adds of one new key through Algorithm 1: exactly one wins.
TEST_F(PostgresTest, ConcurrentConsistentAddsHaveOneWinner) {
  auto old_shard = NewShard("race_old");
  auto new_shard = NewShard("race_new");
  ASSERT_TRUE(old_shard && new_shard);
  for (int round = 0; round < 20; ++round) {
    const std::string key = "k" + std::to_string(round);
    std::atomic<int> wins{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        Status s = ConsistentAdd(*old_shard, *new_shard,
                                 {.primary_key = key,
                                  .body = "{\"t\":" + std::to_string(t) + "}",
                                  .version = MapVersion(2),
                                  .tombstone = false});
        if (s.ok()) wins.fetch_add(1);
        EXPECT_TRUE(s.ok() || s.code() == StatusCode::kAlreadyExists) << s;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(wins.load(), 1) << key;
  }
}

TEST_F(PostgresTest, StressAddThenRemoveAShard) {
  testing::ScopedTempDir dir;
  auto store = testing::OpenMetadata(dir.path());
  auto catalog = std::make_shared<ShardCatalog>();
  for (uint32_t i = 0; i < 3; ++i) {
    catalog->Set(ShardIndex(i), NewShard("stress_" + std::to_string(i)));
  }
  testing::StressConfig config;
  config.writers = 4;
  config.keys_per_writer = 50;
  config.stable_documents = 100;
  config.writer_ops_per_phase = 150;
  config.seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(config.seed));
  testing::StressReport r = testing::RunStress(config, *store, catalog);
  std::printf("operations %llu, queries %llu, moved %llu, rebalancer kills %llu\n",
              static_cast<unsigned long long>(r.operations),
              static_cast<unsigned long long>(r.queries), static_cast<unsigned long long>(r.moved),
              static_cast<unsigned long long>(r.rebalancer_kills));
  for (const auto& e : r.errors) ADD_FAILURE() << e;
}

}  // namespace
}  // namespace shoal::clientside
