// Paper 000 §8, Tables 2 and 3: the time of 100 operations of each kind with the naïve
// algorithm over 3 shards (`normal`) against the consistent algorithms while moving from 2 to 3
// shards (`rebalancing`, no rebalancer running, every preloaded document still on its old
// shard), serially (Table 2) and 20 at a time (Table 3), on embedded, PostgreSQL and remote
// shards (collections of a 3-node Shoal cluster on loopback, reached over gRPC).
// Every configuration is repeated; the medians and the rebalancing/normal ratios come from the
// same run: the ratio of the medians, and the median of the ratios of the paired runs (each
// rebalancing run against the normal run just before it). The PostgreSQL server and the Shoal
// cluster are started by the benchmark (as the tests do); the PostgreSQL server runs with fsync
// off, durable (PostgreSQL's defaults: every commit waits for its WAL flush), or both one after the
// other.
//
// Every run sees the same collection state: the destructive operations (Delete, Update) consume
// keys of their own that no earlier run touched, so in `rebalancing` each of them finds its
// document on its old shard as in the paper; the queries run on a second pair of collections
// with a fixed churn applied after the switch (documents/10 adds, documents/40 updates and as
// many deletes, of documents that match the queries), so that `rebalancing` has new-version
// documents and tombstones to shadow, the same number in every run. Both modes must return the same
// number of documents.
//
//   clientside_bench [--backend embedded|postgres|remote|both|all] [--repeats N] [--documents N]
//                    [--postgres-durability off|on|both] [--ops Query1,Query2,...]
//                    [--rebalancing-first-page ROWS]
//   (both = embedded and postgres; all, the default, = the three)

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/postgres_shard_backend.h"
#include "src/clientside/postgres_test_server.h"
#include "src/clientside/remote_shard_backend.h"
#include "src/clientside/remote_test_cluster.h"
#include "src/clientside/sharded_collection.h"
#include "src/metadata/embedded_metadata_store.h"

namespace shoal::clientside {
namespace {

constexpr int kOpsPerRun = 100;

// --rebalancing-first-page: ShardedCollectionOptions::rebalancing_first_page_size.
size_t g_rebalancing_first_page = ShardedCollectionOptions{}.rebalancing_first_page_size;
// --ops: the operations to measure ("" = all).
std::vector<std::string> g_ops;

// Runs fn(i) for i in [0, n) on `threads` persistent workers.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int t = 0; t < threads; ++t) {
      workers_.emplace_back([this, t, threads] {
        uint64_t seen = 0;
        for (;;) {
          std::function<void(int)> task;
          int n = 0;
          {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return generation_ != seen || stop_; });
            if (stop_) return;
            seen = generation_;
            task = task_;
            n = n_;
          }
          for (int i = t; i < n; i += threads) task(i);
          std::lock_guard lock(mu_);
          if (++finished_ == static_cast<int>(workers_.size())) done_cv_.notify_all();
        }
      });
    }
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void Run(int n, std::function<void(int)> task) {
    std::unique_lock lock(mu_);
    task_ = std::move(task);
    n_ = n;
    finished_ = 0;
    ++generation_;
    cv_.notify_all();
    done_cv_.wait(lock, [&] { return finished_ == static_cast<int>(workers_.size()); });
  }

 private:
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::function<void(int)> task_;
  int n_ = 0;
  int finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

struct Setup {
  std::string backend;
  std::function<std::shared_ptr<ShardBackend>(const std::string& name)> make_shard;
  // Round trips so far to the shards whose name starts with the argument; empty when the
  // backend does not count them.
  std::function<uint64_t(const std::string& prefix)> round_trips;
};

struct Row {
  std::string op;
  double normal_ms = 0, rebalancing_ms = 0;
  double paired = 0;  // median over the pairs of runs of rebalancing / normal
  double normal_trips = 0, rebalancing_trips = 0;  // per operation (per query)
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string Key(std::string_view prefix, int i) { return fmt::format("{}{:07d}", prefix, i); }
std::string Body(int i) {
  return fmt::format("{{\"g\":{},\"n\":{},\"pad\":\"{:032d}\"}}", i % 10, i, i);
}

// Runs fn(i) for i in [0, n) on 20 threads (loading).
void Load(int n, const std::function<void(int)>& fn) {
  Pool pool(20);
  pool.Run(n, fn);
}

// One collection in the mode under test, loaded with `documents` documents plus the keys the
// destructive operations consume (`consumable` for Delete and as many for Update); with `churn`
// (the query collections), the churn of the file comment applied after the switch.
class Fixture {
 public:
  Fixture(metadata::MetadataStore* store, const Setup& setup, std::string name, bool rebalancing,
          int documents, int consumable, bool churn)
      : name_(name), documents_(documents) {
    auto catalog = std::make_shared<ShardCatalog>();
    for (uint32_t i = 0; i < 3; ++i) {
      catalog->Set(ShardIndex(i), setup.make_shard(fmt::format("{}_{}", name, i)));
    }
    Check(InitShardingState(*store, name, rebalancing ? 2 : 3));
    auto c = ShardedCollection::Open({.metadata = store,
                                      .catalog = catalog,
                                      .collection = name,
                                      .client_name = "bench",
                                      .session_ttl = std::chrono::seconds(600),
                                      .query_page_size = 256,
                                      .rebalancing_first_page_size = g_rebalancing_first_page});
    Check(c.status());
    client_ = *std::move(c);
    Load(documents, [&](int i) { Check(client_->Add(Key("d", i), Body(i))); });
    Load(consumable, [&](int i) {
      Check(client_->Add(Key("x", i), Body(i)));
      Check(client_->Add(Key("u", i), Body(i)));
    });
    if (rebalancing) {
      Check(BeginShardCountChange(*store, name, 3));
      while (client_->state().state != ClientState::kRebalancing) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (churn) {
      // Updates turn matching documents (g = 3) into non-matching ones, deletes remove others.
      Load(documents / 10, [&](int j) {
        Check(client_->Add(Key("n", j), Body(j)));
        if (j >= documents / 20) return;
        const std::string key = Key("d", 20 * j + 3);
        Check(j % 2 == 0 ? client_->Update(key, Body(20 * j + 4)) : client_->Delete(key));
      });
    }
  }
  const std::string& name() const { return name_; }
  ShardedCollection& client() { return *client_; }
  int documents() const { return documents_; }
  int next_consumable = 0;  // Delete
  int next_update = 0;      // Update
  int next_new = 0;
  size_t last_query_size = 0;  // documents returned by the last query run

  static void Check(const Status& s) {
    if (!s.ok()) {
      std::fprintf(stderr, "bench setup failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }

 private:
  std::string name_;
  int documents_;
  std::unique_ptr<ShardedCollection> client_;
};

// The time (ms) of one run of `op`: 100 operations, or one query.
double RunOnce(Fixture& f, Pool& pool, std::string_view op) {
  ShardedCollection& c = f.client();
  std::atomic<int> unexpected{0};
  auto expect = [&](const Status& s, StatusCode want) {
    if (s.code() != want) unexpected.fetch_add(1);
  };
  std::function<void(int)> task;
  int n = kOpsPerRun;
  const int base_new = f.next_new, base_consumable = f.next_consumable, base_update = f.next_update;
  if (op == "Add") {
    task = [&](int i) { expect(c.Add(Key("n", base_new + i), Body(i)), StatusCode::kOk); };
    f.next_new += n;
  } else if (op == "Add (duplicate)") {
    task = [&](int i) {
      expect(c.Add(Key("d", i * 7 % f.documents()), Body(i)), StatusCode::kAlreadyExists);
    };
  } else if (op == "Delete") {
    task = [&](int i) { expect(c.Delete(Key("x", base_consumable + i)), StatusCode::kOk); };
    f.next_consumable += n;
  } else if (op == "Delete (missing)") {
    task = [&](int i) { expect(c.Delete(Key("m", i)), StatusCode::kNotFound); };
  } else if (op == "Get") {
    task = [&](int i) {
      expect(c.Get(Key("d", i * 13 % f.documents())).status(), StatusCode::kOk);
    };
  } else if (op == "Get (missing)") {
    task = [&](int i) { expect(c.Get(Key("m", i)).status(), StatusCode::kNotFound); };
  } else if (op == "Update") {
    task = [&](int i) {
      expect(c.Update(Key("u", base_update + i), Body(i + 1)), StatusCode::kOk);
    };
    f.next_update += n;
  } else if (op == "Update (missing)") {
    task = [&](int i) { expect(c.Update(Key("m", i), Body(i)), StatusCode::kNotFound); };
  } else {
    // Query1: a tenth of the documents; Query2: a smaller subset of them.
    storage::DocumentFilter filter;
    filter.all_of.push_back({.path = "g", .op = storage::CompareOp::kEq, .value = int64_t{3}});
    if (op == "Query2") {
      filter.all_of.push_back(
          {.path = "n", .op = storage::CompareOp::kLt, .value = int64_t{f.documents() / 10}});
    }
    n = 1;
    task = [&, filter](int) {
      auto cursor = c.Query(filter);
      if (!cursor.ok()) {
        unexpected.fetch_add(1);
        return;
      }
      size_t returned = 0;
      for (;;) {
        auto page = (*cursor)->Next(256);
        if (!page.ok()) unexpected.fetch_add(1);
        if (!page.ok() || page->empty()) break;
        returned += page->size();
      }
      f.last_query_size = returned;
    };
  }
  const auto start = std::chrono::steady_clock::now();
  pool.Run(n, task);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (unexpected.load() != 0) {
    std::fprintf(stderr, "%s: %d unexpected results\n", std::string(op).c_str(), unexpected.load());
    std::exit(1);
  }
  return ms;
}

void RunBackend(const Setup& setup, int repeats, int documents, const std::string& dir) {
  const std::vector<std::string> all_ops = {
      "Add",           "Add (duplicate)", "Delete",           "Delete (missing)", "Get",
      "Get (missing)", "Update",          "Update (missing)", "Query1",           "Query2"};
  for (const std::string& op : g_ops) {
    if (std::find(all_ops.begin(), all_ops.end(), op) == all_ops.end()) {
      std::fprintf(stderr, "unknown operation in --ops: %s\n", op.c_str());
      std::exit(2);
    }
  }
  const std::vector<std::string>& ops = g_ops.empty() ? all_ops : g_ops;
  auto store = metadata::EmbeddedMetadataStore::Open(
      {.path = dir + "/meta-" + setup.backend, .sync = false, .now_micros = {}});
  Fixture::Check(store.status());
  const int consumable = 2 * (repeats + 1) * kOpsPerRun;
  Fixture normal(store->get(), setup, "normal", false, documents, consumable, false);
  Fixture rebalancing(store->get(), setup, "rebalancing", true, documents, consumable, false);
  Fixture query_normal(store->get(), setup, "qnormal", false, documents, 0, true);
  Fixture query_rebalancing(store->get(), setup, "qrebalancing", true, documents, 0, true);
  // The time of one run, and the round trips it cost to the fixture's shards.
  auto measure = [&](Fixture& f, Pool& pool, const std::string& op) {
    const uint64_t before = setup.round_trips ? setup.round_trips(f.name() + "_") : 0;
    const double ms = RunOnce(f, pool, op);
    const uint64_t after = setup.round_trips ? setup.round_trips(f.name() + "_") : 0;
    return std::pair<double, uint64_t>(ms, after - before);
  };
  for (int concurrency : {1, 20}) {
    Pool pool(concurrency);
    std::vector<Row> rows;
    for (const std::string& op : ops) {
      const bool query = op.starts_with("Query");
      Fixture& n = query ? query_normal : normal;
      Fixture& r = query ? query_rebalancing : rebalancing;
      // One unmeasured run each: connections, caches, prepared statements.
      measure(n, pool, op);
      measure(r, pool, op);
      std::vector<double> a, b, ratios;
      uint64_t trips_a = 0, trips_b = 0;
      for (int i = 0; i < repeats; ++i) {  // alternate, so drift hits both modes alike
        auto [ms_a, t_a] = measure(n, pool, op);
        auto [ms_b, t_b] = measure(r, pool, op);
        a.push_back(ms_a);
        b.push_back(ms_b);
        ratios.push_back(ms_b / ms_a);
        trips_a += t_a;
        trips_b += t_b;
      }
      if (query && n.last_query_size != r.last_query_size) {
        std::fprintf(stderr, "%s: normal returned %zu documents, rebalancing %zu\n", op.c_str(),
                     n.last_query_size, r.last_query_size);
        std::exit(1);
      }
      const double per = static_cast<double>(repeats) * (query ? 1 : kOpsPerRun);
      rows.push_back({.op = op,
                      .normal_ms = Median(a),
                      .rebalancing_ms = Median(b),
                      .paired = Median(ratios),
                      .normal_trips = static_cast<double>(trips_a) / per,
                      .rebalancing_trips = static_cast<double>(trips_b) / per});
    }
    std::printf("\n### %s shards, %s (median of %d runs; ms per 100 operations, per query)\n\n",
                setup.backend.c_str(), concurrency == 1 ? "serial" : "20 concurrent", repeats);
    const bool trips = static_cast<bool>(setup.round_trips);
    std::printf(
        "| Operation | Normal (3 shards) | Rebalancing (2 → 3) | overhead | paired overhead |%s\n",
        trips ? " round trips / op, normal | rebalancing |" : "");
    std::printf("|---|---:|---:|---:|---:|%s\n", trips ? "---:|---:|" : "");
    for (const Row& row : rows) {
      std::printf("| %s | %.2f | %.2f | %+.0f%% | %+.0f%% |", row.op.c_str(), row.normal_ms,
                  row.rebalancing_ms, 100.0 * (row.rebalancing_ms / row.normal_ms - 1.0),
                  100.0 * (row.paired - 1.0));
      if (trips) std::printf(" %.2f | %.2f |", row.normal_trips, row.rebalancing_trips);
      std::printf("\n");
    }
    std::fflush(stdout);
  }
}

// The PostgreSQL tables, on a server started with `durable` (see PostgresTestServer).
void RunPostgres(bool durable, int repeats, int documents, const std::string& dir) {
  auto server = shoal::clientside::testing::PostgresTestServer::Start({.durable = durable});
  Fixture::Check(server.status());
  const std::string conninfo = (*server)->conninfo();
  std::mutex mu;
  std::vector<std::pair<std::string, std::shared_ptr<PostgresShardBackend>>> shards;
  RunBackend({.backend = durable ? "PostgreSQL (durable)" : "PostgreSQL (fsync off)",
              .make_shard =
                  [&](const std::string& name) {
                    auto s = PostgresShardBackend::Create({.conninfo = conninfo,
                                                           .table = name,
                                                           .max_idle_connections = 32,
                                                           .max_prepared_statements = 256});
                    Fixture::Check(s.status());
                    std::shared_ptr<PostgresShardBackend> shard(*std::move(s));
                    std::lock_guard lock(mu);
                    shards.emplace_back(name, shard);
                    return std::shared_ptr<ShardBackend>(shard);
                  },
              .round_trips =
                  [&](const std::string& prefix) {
                    std::lock_guard lock(mu);
                    uint64_t total = 0;
                    for (const auto& [name, shard] : shards) {
                      if (name.starts_with(prefix)) total += shard->round_trips();
                    }
                    return total;
                  }},
             repeats, documents, dir);
}

}  // namespace
}  // namespace shoal::clientside

int main(int argc, char** argv) {
  using namespace shoal::clientside;
  CLI::App app{"paper 000 Tables 2 and 3: client-side sharding overhead during rebalancing"};
  std::string backend = "all";
  int repeats = 15;
  int documents = 5000;
  app.add_option("--backend", backend,
                 "embedded, postgres, remote, both (embedded and postgres) or all");
  app.add_option("--repeats", repeats, "runs of each configuration (the median is reported)");
  app.add_option("--documents", documents, "documents preloaded in each collection");
  std::string durability = "off";
  app.add_option("--postgres-durability", durability,
                 "PostgreSQL server: off (fsync off, the default), on (PostgreSQL's durable "
                 "defaults) or both");
  app.add_option("--rebalancing-first-page", g_rebalancing_first_page,
                 "a query's first page per shard in rebalancing (rows)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ops", g_ops,
                 "operations to measure, comma-separated (default: all), e.g. Query1,Query2")
      ->delimiter(',');
  app.allow_extras();  // `make bench` passes Google Benchmark flags to every program
  CLI11_PARSE(app, argc, argv);

  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("shoal-cs-bench-{}", getpid()))
          .string();
  std::filesystem::create_directories(dir);
  const bool all = backend == "all";
  if (backend != "embedded" && backend != "postgres" && backend != "remote" && backend != "both" &&
      !all) {
    std::fprintf(stderr, "unknown --backend %s\n", backend.c_str());
    return 2;
  }
  if (durability != "off" && durability != "on" && durability != "both") {
    std::fprintf(stderr, "unknown --postgres-durability %s\n", durability.c_str());
    return 2;
  }
  if (backend == "embedded" || backend == "both" || all) {
    shoal::storage::StoreOptions options;
    options.path = dir + "/shards";
    options.sync = shoal::storage::SyncPolicy::kPeriodic;
    options.check_ownership = false;
    auto store = shoal::storage::BucketStore::Open(options);
    Fixture::Check(store.status());
    std::shared_ptr<shoal::storage::BucketStore> shared(*std::move(store));
    uint32_t next = 1;
    RunBackend({.backend = "embedded",
                .make_shard =
                    [&](const std::string& name) {
                      auto s =
                          EmbeddedShardBackend::Create(shared, shoal::CollectionId(next++), name);
                      Fixture::Check(s.status());
                      return std::shared_ptr<ShardBackend>(*std::move(s));
                    },
                .round_trips = {}},
               repeats, documents, dir);
  }
  if (backend == "postgres" || backend == "both" || all) {
    if (durability != "on") RunPostgres(false, repeats, documents, dir);
    if (durability != "off") RunPostgres(true, repeats, documents, dir);
  }
  if (backend == "remote" || all) {
    std::filesystem::create_directories(dir + "/cluster");
    auto cluster =
        shoal::clientside::testing::RemoteTestCluster::Start(dir + "/cluster", /*nodes=*/3, "");
    Fixture::Check(cluster.status());
    RunBackend({.backend = "remote",
                .make_shard =
                    [&](const std::string& name) {
                      auto s = RemoteShardBackend::Create((*cluster)->db(), name);
                      Fixture::Check(s.status());
                      return std::shared_ptr<ShardBackend>(*std::move(s));
                    },
                .round_trips = {}},
               repeats, documents, dir);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
