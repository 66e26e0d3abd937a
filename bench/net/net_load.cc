// net_load: a closed-loop load generator for a networked Shoal cluster. C clients (threads, each
// with its own Database::Connect) run gets or upserts of V-byte values on K keys for
// D seconds; prints one JSON object with the throughput and the latency percentiles.
//
//   net_load --cluster shoal://127.0.0.1:7400 --op get --clients 16 --seconds 5
//
// `get` first loads the K keys (not timed). With `--batch N` (put only) each client sends
// Collection::Batch calls of N upserts to random keys: ops_per_second counts writes, the
// latencies are per batch. Errors are counted (per write), not retried.
//
// The C Databases share one connection per node (gRPC's subchannel pool, with or without TLS)
// unless `--own-connections` gives each its own, as C client processes would have.
//
// With `--shared-connection` the C threads share ONE Database (one client, one gRPC channel per
// node) instead of one each, so that the client coalesces their concurrent operations into
// batch calls (ConnectOptions::coalesce; `--no-coalesce` turns that off to compare).
//
// With `--async` the C clients are C operations kept in flight by the asynchronous API
// (Collection::GetAsync / UpsertAsync) on one Database, started from the main thread and then
// each from its predecessor's callback: what redis-benchmark's C connections on one event loop
// are. `--async-calls N` sets ConnectOptions::async_calls_in_flight.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string cluster = "shoal://127.0.0.1:7400";
  std::string op = "get";
  int clients = 1;
  double seconds = 5;
  int keys = 10000;
  int value_bytes = 1024;
  int batch = 1;
  bool shared_connection = false;
  bool own_connections = false;
  bool no_coalesce = false;
  bool pipe = false;
  bool async = false;
  int async_calls = 1;
  bool skip_load = false;  // get: the keys were loaded by an earlier run
  // Security (ConnectOptions; docs/security.md): a certs dir, or plaintext, or by default the
  // credentials file.
  std::string certs_dir;
  std::string user;
  bool insecure = false;
};

// The closed loop of one asynchronous client: one operation in flight, the next started by the
// callback of the previous one (so its state needs no lock).
struct AsyncClient {
  std::mt19937_64 random;
  std::vector<uint32_t> latencies;  // microseconds
  uint64_t done = 0;
  uint64_t errors = 0;
};

std::string Value(int bytes, uint64_t seed) {
  // A JSON object whose encoding is `bytes` long: {"v":"xxx..."}.
  const int pad = std::max(1, bytes - 8);
  std::string text = R"({"v":")";
  for (int i = 0; i < pad; ++i) text.push_back(static_cast<char>('a' + (seed + i) % 26));
  text += "\"}";
  return text;
}

// Runs the --async clients for flags.seconds, then stops them and returns once every one has
// finished its last operation.
void RunAsync(const Flags& flags, shoal::Collection collection, const std::string& value,
              std::atomic<bool>& stop, std::vector<std::vector<uint32_t>>& latencies,
              std::vector<uint64_t>& errors, std::vector<uint64_t>& written) {
  std::vector<AsyncClient> clients(static_cast<size_t>(flags.clients));
  std::mutex mu;
  std::condition_variable all_stopped;
  int running = flags.clients;
  // Starts client c's next operation; its callback records it and starts the one after.
  std::function<void(int)> next = [&](int c) {
    AsyncClient& client = clients[c];
    const std::string key = fmt::format("key-{}", client.random() % flags.keys);
    const auto start = Clock::now();
    auto finish = [&, c, start](bool ok) {
      AsyncClient& me = clients[c];
      if (ok) {
        me.latencies.push_back(static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count()));
        ++me.done;
      } else {
        ++me.errors;
      }
      if (!stop.load(std::memory_order_relaxed)) return next(c);
      std::lock_guard<std::mutex> lock(mu);
      if (--running == 0) all_stopped.notify_all();
    };
    if (flags.op == "get") {
      collection.GetAsync(key, [finish](shoal::StatusOr<shoal::Document> d) { finish(d.ok()); });
    } else {
      collection.UpsertAsync(key, value, [finish](shoal::StatusOr<uint64_t> v) { finish(v.ok()); });
    }
  };
  for (int c = 0; c < flags.clients; ++c) {
    clients[c].random.seed(static_cast<uint64_t>(c) + 1);
    clients[c].latencies.reserve(1 << 16);
  }
  for (int c = 0; c < flags.clients; ++c) next(c);
  std::this_thread::sleep_for(std::chrono::duration<double>(flags.seconds));
  stop = true;
  std::unique_lock<std::mutex> lock(mu);
  all_stopped.wait(lock, [&] { return running == 0; });
  for (int c = 0; c < flags.clients; ++c) {
    latencies[c] = std::move(clients[c].latencies);
    errors[c] = clients[c].errors;
    written[c] = clients[c].done;
  }
}

int Run(const Flags& flags) {
  std::vector<std::unique_ptr<shoal::Database>> dbs;
  std::vector<shoal::Collection> collections;
  const shoal::ConnectOptions connect{
      .coalesce = !flags.no_coalesce,
      .async_calls_in_flight = static_cast<size_t>(flags.async_calls),
      .pipe = flags.pipe,
      .insecure = flags.insecure,
      .certs_dir = flags.certs_dir,
      .user = flags.user,
      .credentials_file = {},
      .share_connections = !flags.own_connections,
      .connect_patience_ms = shoal::ConnectOptions{}.connect_patience_ms};
  for (int c = 0; c < flags.clients; ++c) {
    if ((flags.shared_connection || flags.async) && c > 0) {
      collections.push_back(collections.front());  // the same client for every thread
      continue;
    }
    auto db = shoal::Database::Connect(flags.cluster, connect);
    if (!db.ok()) {
      std::fprintf(stderr, "error: %s\n", db.status().ToString().c_str());
      return 1;
    }
    auto collection = (*db)->GetCollection("bench");
    if (!collection.ok()) {
      std::fprintf(stderr, "error: %s\n", collection.status().ToString().c_str());
      return 1;
    }
    collections.push_back(*collection);
    dbs.push_back(std::move(*db));
  }
  const std::string value = Value(flags.value_bytes, 1);
  if (flags.op == "get" && !flags.skip_load) {
    // Load every key once, in parallel over the clients.
    std::vector<std::thread> loaders;
    for (int c = 0; c < flags.clients; ++c) {
      loaders.emplace_back([&, c] {
        for (int k = c; k < flags.keys; k += flags.clients) {
          (void)collections[c].Upsert(fmt::format("key-{}", k), value);
        }
      });
    }
    for (auto& t : loaders) t.join();
  }
  std::atomic<bool> stop{false};
  std::vector<std::vector<uint32_t>> latencies(flags.clients);  // microseconds
  std::vector<uint64_t> errors(flags.clients, 0);
  std::vector<uint64_t> written(flags.clients, 0);  // successful operations (writes in batches)
  std::vector<std::thread> threads;
  const auto begin = Clock::now();
  if (flags.async) {
    RunAsync(flags, collections.front(), value, stop, latencies, errors, written);
    dbs.front()->WaitAsync();
  }
  for (int c = 0; c < flags.clients && !flags.async; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 random(static_cast<uint64_t>(c) + 1);
      std::vector<shoal::BatchWrite> batch(
          static_cast<size_t>(flags.batch),
          shoal::BatchWrite{
              .op = shoal::BatchOp::kUpsert, .key = {}, .json = value, .expected_version = 0});
      auto& mine = latencies[c];
      mine.reserve(1 << 16);
      while (!stop.load(std::memory_order_relaxed)) {
        if (flags.batch > 1) {
          for (auto& write : batch) write.key = fmt::format("key-{}", random() % flags.keys);
          const auto start = Clock::now();
          auto results = collections[c].Batch(batch);
          const auto micros =
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
          uint64_t failed = 0;
          if (!results.ok()) {
            failed = batch.size();
          } else {
            for (const auto& result : *results) failed += result.ok() ? 0 : 1;
          }
          errors[c] += failed;
          written[c] += batch.size() - failed;
          if (failed == 0) mine.push_back(static_cast<uint32_t>(micros));
          continue;
        }
        const std::string key = fmt::format("key-{}", random() % flags.keys);
        const auto start = Clock::now();
        bool ok;
        if (flags.op == "get") {
          ok = collections[c].Get(key).ok();
        } else {
          ok = collections[c].Upsert(key, value).ok();
        }
        const auto micros =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
        if (ok) {
          mine.push_back(static_cast<uint32_t>(micros));
          ++written[c];
        } else {
          ++errors[c];
        }
      }
    });
  }
  if (!flags.async) {
    std::this_thread::sleep_for(std::chrono::duration<double>(flags.seconds));
    stop = true;
    for (auto& t : threads) t.join();
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
  std::vector<uint32_t> all;
  uint64_t error_count = 0;
  uint64_t operations = 0;
  for (int c = 0; c < flags.clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    error_count += errors[c];
    operations += written[c];
  }
  std::sort(all.begin(), all.end());
  auto percentile = [&](double p) {
    if (all.empty()) return 0.0;
    const size_t at = std::min(all.size() - 1, static_cast<size_t>(p * all.size()));
    return all[at] / 1000.0;
  };
  nlohmann::json out{{"op", flags.op},
                     {"clients", flags.clients},
                     {"value_bytes", flags.value_bytes},
                     {"batch", flags.batch},
                     {"shared_connection", flags.shared_connection},
                     {"own_connections", flags.own_connections},
                     {"coalesce", !flags.no_coalesce},
                     {"pipe", flags.pipe},
                     {"async", flags.async},
                     {"operations", operations},
                     {"errors", error_count},
                     {"seconds", elapsed},
                     {"ops_per_second", static_cast<double>(operations) / elapsed},
                     {"p50_ms", percentile(0.50)},
                     {"p99_ms", percentile(0.99)}};
  std::printf("%s\n", out.dump().c_str());
  return error_count == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app("Closed-loop get/put load on a networked Shoal cluster");
  app.add_option("--cluster", flags.cluster, "shoal://HOST:PORT")->capture_default_str();
  app.add_option("--op", flags.op, "get or put")
      ->check(CLI::IsMember({"get", "put"}))
      ->capture_default_str();
  app.add_option("--clients", flags.clients, "Concurrent client threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--seconds", flags.seconds, "Measured duration")->capture_default_str();
  app.add_option("--keys", flags.keys, "Distinct keys")->capture_default_str();
  app.add_option("--value-bytes", flags.value_bytes, "Size of each value")->capture_default_str();
  app.add_option("--batch", flags.batch, "Upserts per Batch call (put only; 1 = single writes)")
      ->check(CLI::Range(1, static_cast<int>(shoal::kMaxBatchWrites)))
      ->capture_default_str();
  app.add_flag("--skip-load", flags.skip_load,
               "get: do not load the keys first (an earlier run did; keeps the loading out of "
               "CPU measured over the whole run)");
  app.add_flag("--shared-connection", flags.shared_connection,
               "All client threads share one Database (one connection) instead of one each");
  app.add_flag("--own-connections", flags.own_connections,
               "Each client's Database opens connections of its own, as a separate process "
               "would (ConnectOptions::share_connections = false); by default the Databases "
               "of this process share one connection per node");
  app.add_flag("--pipe", flags.pipe,
               "Asynchronous calls as messages of one stream per node (ConnectOptions::pipe)");
  app.add_flag("--no-coalesce", flags.no_coalesce,
               "Send every operation in its own call (ConnectOptions::coalesce = false)");
  app.add_flag("--async", flags.async,
               "One thread keeps --clients operations in flight with the asynchronous API");
  app.add_option("--async-calls", flags.async_calls,
                 "Batch calls in flight per node and kind (ConnectOptions::async_calls_in_flight)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--certs-dir", flags.certs_dir,
                 "Mutual TLS with ca.crt and client.USER.crt/.key of this directory");
  app.add_option("--user", flags.user, "With --certs-dir: whose certificate (default admin)");
  app.add_flag("--insecure", flags.insecure, "Plaintext, for a cluster started with --insecure");
  CLI11_PARSE(app, argc, argv);
  if (flags.async && flags.batch > 1) {
    std::fprintf(stderr, "error: --async sends single operations (no --batch)\n");
    return 1;
  }
  if (flags.batch > 1 && flags.op != "put") {
    std::fprintf(stderr, "error: --batch needs --op put\n");
    return 1;
  }
  return Run(flags);
}
