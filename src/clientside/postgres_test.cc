// The PostgreSQL shard backend against a real server that the test starts itself (on a free
// loopback port, in a temp dir, as the `postgres` user when run as root) and stops afterwards:
// the ShardBackend contract, the interleaving-relevant conditional operations under real
// concurrency, and the stress workload (add and remove a shard under load) on PostgreSQL shards.
// Missing PostgreSQL binaries fail the test with a message saying what to install.

#include <gtest/gtest.h>

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
    auto shard = PostgresShardBackend::Create(
        {.conninfo = server_->conninfo(), .table = table, .max_idle_connections = 32});
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
       .max_idle_connections = 1});
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable) << bad.status();
  EXPECT_EQ(
      PostgresShardBackend::Create(
          {.conninfo = server_->conninfo(), .table = "bad-name; DROP", .max_idle_connections = 1})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
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
