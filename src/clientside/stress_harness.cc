#include "src/clientside/stress_harness.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "src/clientside/consistent_ops.h"
#include "src/clientside/rebalancer.h"
#include "src/clientside/sharded_collection.h"

namespace shoal::clientside::testing {

namespace {

class Errors {
 public:
  void Add(std::string e) {
    std::lock_guard lock(mu_);
    if (errors_.size() < 20) errors_.push_back(std::move(e));
  }
  bool Any() {
    std::lock_guard lock(mu_);
    return !errors_.empty();
  }
  std::vector<std::string> Take() {
    std::lock_guard lock(mu_);
    return std::move(errors_);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> errors_;
};

std::unique_ptr<ShardedCollection> OpenClient(metadata::MetadataStore& store,
                                              std::shared_ptr<ShardCatalog> catalog,
                                              const std::string& collection, Errors& errors) {
  auto c = ShardedCollection::Open({.metadata = &store,
                                    .catalog = std::move(catalog),
                                    .collection = collection,
                                    .client_name = {},
                                    .session_ttl = std::chrono::seconds(30),
                                    .query_page_size = 64,
                                    // Several pages per shard in rebalancing too.
                                    .rebalancing_first_page_size = 96});
  if (!c.ok()) {
    errors.Add(fmt::format("open: {}", c.status().ToString()));
    return nullptr;
  }
  return *std::move(c);
}

// Every document, through a query; records duplicates and order violations.
std::vector<ShardDocument> QueryAll(ShardedCollection& c, Errors& errors,
                                    std::atomic<uint64_t>& anomalies) {
  std::vector<ShardDocument> all;
  auto cursor = c.Query({});
  if (!cursor.ok()) {
    errors.Add(fmt::format("query: {}", cursor.status().ToString()));
    return all;
  }
  for (;;) {
    auto page = (*cursor)->Next(100);
    if (!page.ok()) {
      errors.Add(fmt::format("query page: {}", page.status().ToString()));
      return all;
    }
    if (page->empty()) break;
    for (auto& d : *page) {
      if (!all.empty() && all.back().primary_key >= d.primary_key) {
        anomalies.fetch_add(1);
        errors.Add(fmt::format("query order/duplicate at {} after {}", d.primary_key,
                               all.back().primary_key));
      }
      all.push_back(std::move(d));
    }
  }
  return all;
}

}  // namespace

bool SameJson(const std::string& a, const std::string& b) {
  auto ja = nlohmann::json::parse(a, nullptr, false);
  auto jb = nlohmann::json::parse(b, nullptr, false);
  return !ja.is_discarded() && ja == jb;
}

StressReport RunStress(const StressConfig& config, metadata::MetadataStore& store,
                       std::shared_ptr<ShardCatalog> catalog) {
  StressReport report;
  Errors errors;
  if (Status s = InitShardingState(store, config.collection, config.shard_counts.front());
      !s.ok()) {
    report.errors.push_back(s.ToString());
    return report;
  }
  auto loader = OpenClient(store, catalog, config.collection, errors);
  if (loader == nullptr) return {.errors = errors.Take()};
  for (int i = 0; i < config.stable_documents; ++i) {
    Status s = loader->Add(fmt::format("s{:05d}", i), fmt::format("{{\"stable\":{}}}", i));
    if (!s.ok()) errors.Add(fmt::format("load: {}", s.ToString()));
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> operations{0}, queries{0}, anomalies{0}, wrong{0};
  std::vector<std::atomic<int>> done_ops(config.writers);
  std::vector<std::map<std::string, std::optional<std::string>>> oracles(config.writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < config.writers; ++w) {
    threads.emplace_back([&, w] {
      auto client = OpenClient(store, catalog, config.collection, errors);
      if (client == nullptr) return;
      std::mt19937_64 rng(config.seed * 1000 + static_cast<uint64_t>(w));
      auto& oracle = oracles[w];
      for (int n = 0; !stop.load(); ++n) {
        const std::string key = fmt::format("w{}-{:04d}", w, rng() % config.keys_per_writer);
        const std::string body = fmt::format("{{\"w\":{},\"n\":{}}}", w, n);
        std::optional<std::string>& expected = oracle[key];
        const int op = static_cast<int>(rng() % 4);
        Status s;
        StatusCode want = StatusCode::kOk;
        if (op == 0) {
          s = client->Add(key, body);
          want = expected.has_value() ? StatusCode::kAlreadyExists : StatusCode::kOk;
          if (s.ok()) expected = body;
        } else if (op == 1) {
          s = client->Update(key, body);
          want = expected.has_value() ? StatusCode::kOk : StatusCode::kNotFound;
          if (s.ok()) expected = body;
        } else if (op == 2) {
          s = client->Delete(key);
          want = expected.has_value() ? StatusCode::kOk : StatusCode::kNotFound;
          if (s.ok()) expected.reset();
        } else {
          auto got = client->Get(key);
          s = got.status();
          want = expected.has_value() ? StatusCode::kOk : StatusCode::kNotFound;
          if (got.ok() && !SameJson(got->body, *expected)) {
            wrong.fetch_add(1);
            errors.Add(fmt::format("get {} returned {} expected {}", key, got->body, *expected));
          }
        }
        if (s.code() != want) {
          wrong.fetch_add(1);
          errors.Add(fmt::format("writer {} op {} on {}: got {} want {} ({})", w, op, key,
                                 StatusCodeToString(s.code()), StatusCodeToString(want),
                                 s.ToString()));
        }
        operations.fetch_add(1);
        done_ops[w].fetch_add(1);
      }
      Status closed = client->Close();
      if (!closed.ok()) errors.Add(closed.ToString());
    });
  }
  threads.emplace_back([&] {
    auto client = OpenClient(store, catalog, config.collection, errors);
    if (client == nullptr) return;
    while (!stop.load()) {
      auto all = QueryAll(*client, errors, anomalies);
      std::set<std::string> keys;
      for (const auto& d : all) keys.insert(d.primary_key);
      for (int i = 0; i < config.stable_documents; ++i) {
        if (!keys.contains(fmt::format("s{:05d}", i))) {
          anomalies.fetch_add(1);
          errors.Add(fmt::format("query missed stable document s{:05d}", i));
          break;
        }
      }
      queries.fetch_add(1);
    }
    Status closed = client->Close();
    if (!closed.ok()) errors.Add(closed.ToString());
  });

  auto wait_phase = [&] {
    std::vector<int> start;
    for (auto& d : done_ops) start.push_back(d.load());
    for (int w = 0; w < config.writers; ++w) {
      while (done_ops[w].load() < start[w] + config.writer_ops_per_phase && !errors.Any()) {
        std::this_thread::yield();
      }
    }
  };
  std::mt19937_64 rng(config.seed);
  for (size_t i = 1; i < config.shard_counts.size(); ++i) {
    wait_phase();
    const auto change_start = std::chrono::steady_clock::now();
    if (Status s = BeginShardCountChange(store, config.collection, config.shard_counts[i]);
        !s.ok()) {
      errors.Add(s.ToString());
      break;
    }
    for (int attempt = 0;; ++attempt) {
      std::atomic<int> budget{static_cast<int>(rng() % 60) + 1};
      Rebalancer rebalancer(
          {.metadata = &store,
           .catalog = catalog,
           .collection = config.collection,
           .page_size = 32,
           .stop_requested =
               [&] { return config.kill_rebalancer && attempt < 40 && budget.fetch_sub(1) <= 0; },
           .poll = std::chrono::milliseconds(2)});
      Status s = rebalancer.Run();
      report.moved += rebalancer.stats().moved;
      if (s.ok()) break;
      if (s.code() != StatusCode::kCancelled) {
        errors.Add(fmt::format("rebalancer: {}", s.ToString()));
        break;
      }
      ++report.rebalancer_kills;
    }
    report.change_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - change_start).count());
  }
  wait_phase();
  stop.store(true);
  for (auto& t : threads) t.join();
  report.operations = operations.load();
  report.queries = queries.load();
  report.wrong_results = wrong.load();

  // Full consistency check: through a fresh client, and shard by shard.
  std::map<std::string, std::string> expected;
  for (int i = 0; i < config.stable_documents; ++i) {
    expected[fmt::format("s{:05d}", i)] = fmt::format("{{\"stable\":{}}}", i);
  }
  for (const auto& oracle : oracles) {
    for (const auto& [key, value] : oracle) {
      if (value.has_value()) expected[key] = *value;
    }
  }
  auto checker = OpenClient(store, catalog, config.collection, errors);
  if (checker != nullptr) {
    const ShardingState final_state = checker->state();
    if (final_state.state != ClientState::kNormal ||
        final_state.shards != config.shard_counts.back()) {
      errors.Add("final state " + final_state.DebugString());
    }
    auto all = QueryAll(*checker, errors, anomalies);
    std::map<std::string, std::string> seen;
    for (const auto& d : all) seen[d.primary_key] = d.body;
    for (const auto& [key, body] : expected) {
      auto it = seen.find(key);
      if (it == seen.end()) {
        ++report.lost_writes;
        errors.Add("lost write: " + key);
      } else if (!SameJson(it->second, body)) {
        ++report.lost_writes;
        errors.Add(fmt::format("{} holds {} expected {}", key, it->second, body));
      }
    }
    for (const auto& [key, body] : seen) {
      if (!expected.contains(key)) {
        ++report.resurrected;
        errors.Add("resurrected or unknown document: " + key);
      }
    }
    for (uint32_t i = 0; i < catalog->size(); ++i) {
      ShardBackend* shard = *catalog->Get(ShardIndex(i));
      ShardQuery q;
      q.include_tombstones = true;
      q.limit = 100000;
      auto page = shard->Query(q);
      if (!page.ok()) continue;
      for (const auto& d : page->documents) {
        if (d.tombstone) errors.Add("tombstone left: " + d.primary_key);
        if (d.version != final_state.version) errors.Add("old version left: " + d.primary_key);
        if (ShardFor(d.primary_key, final_state.shards) != ShardIndex(i)) {
          errors.Add(fmt::format("{} on shard {}", d.primary_key, i));
        }
      }
    }
    Status closed = checker->Close();
    if (!closed.ok()) errors.Add(closed.ToString());
  }
  Status closed = loader->Close();
  if (!closed.ok()) errors.Add(closed.ToString());
  report.query_anomalies = anomalies.load();
  report.errors = errors.Take();
  return report;
}

}  // namespace shoal::clientside::testing
