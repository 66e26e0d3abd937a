// Concurrent clients while a shard is added (2 → 3) and removed (3 → 2) on embedded shards,
// with the rebalancer killed at random points and resumed, ending in a full consistency check
// (stress_harness.h). SHOAL_CLIENTSIDE_STRESS_SCALE=N multiplies the workload.

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/stress_harness.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

int Scale() {
  const char* s = std::getenv("SHOAL_CLIENTSIDE_STRESS_SCALE");
  return s == nullptr ? 1 : std::max(1, std::atoi(s));
}

uint64_t Seed() {
  const char* s = std::getenv("SHOAL_CLIENTSIDE_SEED");
  const uint64_t seed = s != nullptr ? std::strtoull(s, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (SHOAL_CLIENTSIDE_SEED replays the choices)\n",
              static_cast<unsigned long long>(seed));
  return seed;
}

void Report(const testing::StressReport& r) {
  std::printf("operations %llu, queries %llu, moved %llu, rebalancer kills %llu\n",
              static_cast<unsigned long long>(r.operations),
              static_cast<unsigned long long>(r.queries), static_cast<unsigned long long>(r.moved),
              static_cast<unsigned long long>(r.rebalancer_kills));
  for (const auto& e : r.errors) ADD_FAILURE() << e;
}

TEST(ClientsideStressTest, EmbeddedAddThenRemoveWithKilledRebalancer) {
  testing::ScopedTempDir dir;
  auto store = testing::OpenMetadata(dir.path() + "/meta");
  testing::EmbeddedShards shards(dir.path() + "/shards");
  auto catalog = std::make_shared<ShardCatalog>();
  for (uint32_t i = 0; i < 3; ++i) catalog->Set(ShardIndex(i), shards.NewShard());
  testing::StressConfig config;
  config.keys_per_writer *= Scale();
  config.stable_documents *= Scale();
  config.writer_ops_per_phase *= Scale();
  config.seed = Seed();
  Report(testing::RunStress(config, *store, catalog));
}

TEST(ClientsideStressTest, MemoryGrowAndShrinkRepeatedly) {
  testing::ScopedTempDir dir;
  auto store = testing::OpenMetadata(dir.path() + "/meta");
  auto catalog = std::make_shared<ShardCatalog>();
  for (uint32_t i = 0; i < 5; ++i) {
    catalog->Set(ShardIndex(i), std::make_shared<MemoryShardBackend>(std::to_string(i)));
  }
  testing::StressConfig config;
  config.collection = "cycles";
  config.writers = 6;
  config.shard_counts = {1, 2, 4, 5, 3, 1};
  config.writer_ops_per_phase = 200 * Scale();
  config.seed = Seed();
  Report(testing::RunStress(config, *store, catalog));
}

}  // namespace
}  // namespace shoal::clientside
