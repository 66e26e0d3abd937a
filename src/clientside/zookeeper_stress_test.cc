// The client-side sharding protocol with its states, barriers and members in ZooKeeper (paper 000
// §4 keeps them there): concurrent clients while the shard count goes 2 -> 3 -> 2, with the
// rebalancer killed at random points, ending in the stress harness's full consistency check. The
// test starts its own ZooKeeper server (the Debian zookeeper package) and fails if it cannot.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>

#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/shard_catalog.h"
#include "src/clientside/stress_harness.h"
#include "src/metadata/zookeeper_metadata_store.h"
#include "src/metadata/zookeeper_test_server.h"

namespace shoal::clientside {
namespace {

TEST(ClientsideZooKeeperTest, AddThenRemoveWithKilledRebalancer) {
  auto server = metadata::ZooKeeperTestServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  metadata::ZooKeeperMetadataOptions options;
  options.hosts = (*server)->hosts();
  options.root = "/shoal/clientside";
  auto store = metadata::ZooKeeperMetadataStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();

  auto catalog = std::make_shared<ShardCatalog>();
  for (uint32_t i = 0; i < 3; ++i) {
    catalog->Set(ShardIndex(i), std::make_shared<MemoryShardBackend>(std::to_string(i)));
  }
  testing::StressConfig config;
  config.collection = "zk";
  config.writers = 3;
  config.keys_per_writer = 40;
  config.stable_documents = 60;
  config.writer_ops_per_phase = 80;
  config.seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(config.seed));
  const testing::StressReport report = testing::RunStress(config, **store, catalog);
  std::printf("operations %llu, queries %llu, moved %llu, rebalancer kills %llu\n",
              static_cast<unsigned long long>(report.operations),
              static_cast<unsigned long long>(report.queries),
              static_cast<unsigned long long>(report.moved),
              static_cast<unsigned long long>(report.rebalancer_kills));
  for (const auto& error : report.errors) ADD_FAILURE() << error;
  EXPECT_EQ(report.lost_writes, 0u);
  EXPECT_EQ(report.resurrected, 0u);
  EXPECT_GT(report.operations, 0u);
}

}  // namespace
}  // namespace shoal::clientside
