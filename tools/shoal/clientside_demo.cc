#include "tools/shoal/clientside_demo.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/postgres_shard_backend.h"
#include "src/clientside/postgres_test_server.h"
#include "src/clientside/stress_harness.h"
#include "src/metadata/embedded_metadata_store.h"

namespace shoal::tools {

namespace {

struct ClientsideDemoOptions {
  std::string backend = "embedded";
  int writers = 4;
  int keys_per_writer = 200;
  int stable_documents = 500;
  int ops_per_phase = 1000;
  bool kill_rebalancer = true;
  uint64_t seed = 0;
  bool json = false;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "clientside-demo: %s\n", s.ToString().c_str());
  return 1;
}

int RunClientsideDemo(const ClientsideDemoOptions& o) {
  using clientside::ShardCatalog;
  using clientside::ShardIndex;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("shoal-clientside-demo-{}", getpid());
  std::filesystem::create_directories(dir);
  auto metadata = metadata::EmbeddedMetadataStore::Open(
      {.path = (dir / "meta").string(), .sync = false, .now_micros = {}});
  if (!metadata.ok()) return Fail(metadata.status());
  auto catalog = std::make_shared<ShardCatalog>();
  std::unique_ptr<clientside::testing::PostgresTestServer> server;
  if (o.backend == "postgres") {
    auto started = clientside::testing::PostgresTestServer::Start();
    if (!started.ok()) return Fail(started.status());
    server = *std::move(started);
    for (uint32_t i = 0; i < 3; ++i) {
      auto shard = clientside::PostgresShardBackend::Create({.conninfo = server->conninfo(),
                                                             .table = fmt::format("demo_{}", i),
                                                             .max_idle_connections = 32});
      if (!shard.ok()) return Fail(shard.status());
      catalog->Set(ShardIndex(i), std::shared_ptr<clientside::ShardBackend>(*std::move(shard)));
    }
  } else {
    storage::StoreOptions options;
    options.path = (dir / "shards").string();
    options.sync = storage::SyncPolicy::kPeriodic;
    options.check_ownership = false;
    auto store = storage::BucketStore::Open(options);
    if (!store.ok()) return Fail(store.status());
    std::shared_ptr<storage::BucketStore> shared(*std::move(store));
    for (uint32_t i = 0; i < 3; ++i) {
      auto shard = clientside::EmbeddedShardBackend::Create(shared, CollectionId(i + 1),
                                                            fmt::format("demo_{}", i));
      if (!shard.ok()) return Fail(shard.status());
      catalog->Set(ShardIndex(i), std::shared_ptr<clientside::ShardBackend>(*std::move(shard)));
    }
  }
  clientside::testing::StressConfig config;
  config.collection = "demo";
  config.writers = o.writers;
  config.keys_per_writer = o.keys_per_writer;
  config.stable_documents = o.stable_documents;
  config.shard_counts = {2, 3, 2};
  config.writer_ops_per_phase = o.ops_per_phase;
  config.kill_rebalancer = o.kill_rebalancer;
  config.seed = o.seed != 0 ? o.seed : std::random_device{}();
  const auto start = std::chrono::steady_clock::now();
  const clientside::testing::StressReport r = RunStress(config, **metadata, catalog);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double grow = r.change_seconds.size() > 0 ? r.change_seconds[0] : 0;
  const double shrink = r.change_seconds.size() > 1 ? r.change_seconds[1] : 0;
  if (o.json) {
    std::printf(
        "{\"backend\": \"%s\", \"seed\": %llu, \"shards\": \"2 -> 3 -> 2\", \"operations\": %llu, "
        "\"queries\": %llu, \"documents_moved\": %llu, \"rebalancer_kills\": %llu, "
        "\"grow_seconds\": %.3f, \"shrink_seconds\": %.3f, \"seconds\": %.3f, "
        "\"lost_writes\": %llu, \"resurrected_deletes\": %llu, \"wrong_results\": %llu, "
        "\"query_anomalies\": %llu}\n",
        o.backend.c_str(), static_cast<unsigned long long>(config.seed),
        static_cast<unsigned long long>(r.operations), static_cast<unsigned long long>(r.queries),
        static_cast<unsigned long long>(r.moved),
        static_cast<unsigned long long>(r.rebalancer_kills), grow, shrink, seconds,
        static_cast<unsigned long long>(r.lost_writes),
        static_cast<unsigned long long>(r.resurrected),
        static_cast<unsigned long long>(r.wrong_results),
        static_cast<unsigned long long>(r.query_anomalies));
  } else {
    std::printf("client-side sharding demo (%s shards, seed %llu)\n", o.backend.c_str(),
                static_cast<unsigned long long>(config.seed));
    std::printf("  shards              2 -> 3 (%.2f s) -> 2 (%.2f s), total %.2f s\n", grow, shrink,
                seconds);
    std::printf("  client operations   %llu by %d writers, %llu full queries\n",
                static_cast<unsigned long long>(r.operations), o.writers,
                static_cast<unsigned long long>(r.queries));
    std::printf("  rebalancer          %llu documents moved, killed and resumed %llu times\n",
                static_cast<unsigned long long>(r.moved),
                static_cast<unsigned long long>(r.rebalancer_kills));
    std::printf("  lost writes         %llu\n", static_cast<unsigned long long>(r.lost_writes));
    std::printf("  resurrected deletes %llu\n", static_cast<unsigned long long>(r.resurrected));
    std::printf("  wrong results       %llu\n", static_cast<unsigned long long>(r.wrong_results));
    std::printf("  query anomalies     %llu\n", static_cast<unsigned long long>(r.query_anomalies));
  }
  for (const auto& e : r.errors) std::fprintf(stderr, "  error: %s\n", e.c_str());
  server.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return r.errors.empty() ? 0 : 2;
}

}  // namespace

void AddClientsideDemoCommand(CLI::App& app) {
  auto options = std::make_shared<ClientsideDemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "clientside-demo", "Client-side sharding over dumb shards: 2 -> 3 -> 2 shards under load");
  cmd->add_option("--backend", options->backend, "embedded or postgres")
      ->capture_default_str()
      ->check(CLI::IsMember({"embedded", "postgres"}));
  cmd->add_option("--writers", options->writers, "Writer clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--keys", options->keys_per_writer, "Keys per writer")->capture_default_str();
  cmd->add_option("--ops-per-phase", options->ops_per_phase,
                  "Operations per writer before, between and after the changes")
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Random seed (0: random)");
  cmd->add_flag("!--no-kill", options->kill_rebalancer, "Do not kill the rebalancer");
  cmd->add_flag("--json", options->json, "Print one JSON object");
  cmd->callback([options]() {
    const int rc = RunClientsideDemo(*options);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace shoal::tools
