// Paper 000 §7.2: every interleaving of the shard-level atomic actions of two concurrent
// operations on one document, in the five scenarios, checked against a serial model; then a
// randomized version with three operations. The operations are the consistent algorithms of
// rebalancing (Algorithms 1-4, 6) and the rebalancer's move of the document (Algorithm 5).
//
// Each run builds fresh shards, starts one thread per operation and lets exactly one shard
// call proceed at a time, in an order chosen by the explorer (depth-first over every choice, or
// at random from a logged seed). After the operations, the run finishes the rebalance (copies,
// then removes old versions and tombstones) and checks that the document ends up as the serial
// order says, on its new shard only. SHOAL_CLIENTSIDE_INTERLEAVE_FULL=1 explores every
// interleaving of every three-operation combination as well.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "src/clientside/consistent_ops.h"
#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/merge_query.h"
#include "src/clientside/postgres_shard_backend.h"
#include "src/clientside/postgres_test_server.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

constexpr MapVersion kOld(1);
constexpr MapVersion kNew(2);
constexpr std::string_view kKey = "k";

// Lets one gated thread run at a time, in the order the controller picks.
class Scheduler {
 public:
  explicit Scheduler(size_t threads) : state_(threads, kRunning) {}

  // Called by thread `me` before each shard call.
  void Gate(size_t me) {
    std::unique_lock lock(mu_);
    state_[me] = kWaiting;
    cv_.notify_all();
    cv_.wait(lock, [&] { return granted_ == static_cast<int>(me); });
    granted_ = -1;
    state_[me] = kRunning;
    cv_.notify_all();
  }
  void Finish(size_t me) {
    std::lock_guard lock(mu_);
    state_[me] = kDone;
    cv_.notify_all();
  }
  // Controller: runs until every thread is done; `choose(options)` picks among the waiting ones.
  void Drive(const std::function<size_t(size_t)>& choose) {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] {
        return granted_ == -1 &&
               std::none_of(state_.begin(), state_.end(), [](int s) { return s == kRunning; });
      });
      std::vector<size_t> waiting;
      for (size_t i = 0; i < state_.size(); ++i) {
        if (state_[i] == kWaiting) waiting.push_back(i);
      }
      if (waiting.empty()) return;
      granted_ = static_cast<int>(waiting[choose(waiting.size())]);
      cv_.notify_all();
    }
  }

 private:
  static constexpr int kRunning = 0, kWaiting = 1, kDone = 2;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> state_;
  int granted_ = -1;
};

thread_local size_t tls_thread = 0;

// A shard whose every call waits for the scheduler first.
class GatedShard final : public ShardBackend {
 public:
  GatedShard(ShardBackend* inner, Scheduler* scheduler) : inner_(inner), scheduler_(scheduler) {}
  std::string Name() const override { return inner_->Name(); }
  Status Insert(const ShardDocument& d) override { return Gate(), inner_->Insert(d); }
  Status Delete(std::string_view pk) override { return Gate(), inner_->Delete(pk); }
  Status DeleteIf(std::string_view pk, const ShardCondition& c) override {
    return Gate(), inner_->DeleteIf(pk, c);
  }
  Status Update(const ShardDocument& d) override { return Gate(), inner_->Update(d); }
  Status UpdateIf(const ShardDocument& d, const ShardCondition& c) override {
    return Gate(), inner_->UpdateIf(d, c);
  }
  Status Upsert(const ShardDocument& d) override { return Gate(), inner_->Upsert(d); }
  Status UpsertIf(const ShardDocument& d, const ShardCondition& c) override {
    return Gate(), inner_->UpsertIf(d, c);
  }
  StatusOr<ShardDocument> Get(std::string_view pk) override { return Gate(), inner_->Get(pk); }
  StatusOr<ShardPage> Query(const ShardQuery& q) override { return Gate(), inner_->Query(q); }

 private:
  void Gate() { scheduler_->Gate(tls_thread); }
  ShardBackend* inner_;
  Scheduler* scheduler_;
};

enum class Op : uint8_t { kAddA, kAddB, kUpdate, kDelete, kGet, kQuery, kQueryFiltered, kMove };
constexpr Op kAllOps[] = {Op::kAddA, Op::kAddB,  Op::kUpdate,        Op::kDelete,
                          Op::kGet,  Op::kQuery, Op::kQueryFiltered, Op::kMove};

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kAddA:
      return "add(a)";
    case Op::kAddB:
      return "add(b)";
    case Op::kUpdate:
      return "update(u)";
    case Op::kDelete:
      return "delete";
    case Op::kGet:
      return "get";
    case Op::kQuery:
      return "query";
    case Op::kQueryFiltered:
      return "query(filter)";
    case Op::kMove:
      return "rebalance";
  }
  return "?";
}

// §7.2's five scenarios, for a document whose old shard differs from its new shard.
enum class Scenario : uint8_t { kAbsent, kOnOld, kTombstoneOnNew, kOnOldAndNew, kOnlyOnNew };
constexpr Scenario kAllScenarios[] = {Scenario::kAbsent, Scenario::kOnOld,
                                      Scenario::kTombstoneOnNew, Scenario::kOnOldAndNew,
                                      Scenario::kOnlyOnNew};

std::string_view ScenarioName(Scenario s) {
  switch (s) {
    case Scenario::kAbsent:
      return "absent";
    case Scenario::kOnOld:
      return "on old shard";
    case Scenario::kTombstoneOnNew:
      return "tombstone on new shard";
    case Scenario::kOnOldAndNew:
      return "rebalanced, on old and new";
    case Scenario::kOnlyOnNew:
      return "rebalanced, only on new";
  }
  return "?";
}

std::string Body(std::string_view tag) { return "{\"v\":\"" + std::string(tag) + "\"}"; }

// A body as read back, in one canonical form (PostgreSQL reformats JSONB).
std::string Canonical(const std::string& body) {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  return parsed.is_discarded() ? body : parsed.dump();
}

// What an operation returned: a status code and, for reads, the value(s) seen.
struct Outcome {
  StatusCode code = StatusCode::kOk;
  std::vector<std::string> values{};
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

std::string Show(const Outcome& o) {
  std::string s = StatusCodeToString(o.code);
  for (const auto& v : o.values) s += " " + v;
  return s;
}

ShardDocument Doc(std::string_view body, MapVersion v, bool tomb = false) {
  return {.primary_key = std::string(kKey),
          .body = tomb ? "" : std::string(body),
          .version = v,
          .tombstone = tomb};
}

// The logical value at the start of each scenario, and the shards' contents.
std::optional<std::string> Setup(Scenario s, ShardBackend& old_shard, ShardBackend& new_shard) {
  auto must = [](const Status& st) { EXPECT_TRUE(st.ok()) << st; };
  switch (s) {
    case Scenario::kAbsent:
      return std::nullopt;
    case Scenario::kOnOld:
      must(old_shard.Insert(Doc(Body("o"), kOld)));
      return Body("o");
    case Scenario::kTombstoneOnNew:
      must(old_shard.Insert(Doc(Body("o"), kOld)));
      must(new_shard.Insert(Doc("", kNew, true)));
      return std::nullopt;
    case Scenario::kOnOldAndNew:
      must(old_shard.Insert(Doc(Body("o"), kOld)));
      must(new_shard.Insert(Doc(Body("n"), kNew)));
      return Body("n");
    case Scenario::kOnlyOnNew:
      must(new_shard.Insert(Doc(Body("n"), kNew)));
      return Body("n");
  }
  return std::nullopt;
}

Outcome Execute(Op op, ShardBackend& old_shard, ShardBackend& new_shard) {
  auto of = [](const Status& s) { return Outcome{.code = s.code(), .values = {}}; };
  switch (op) {
    case Op::kAddA:
      return of(ConsistentAdd(old_shard, new_shard, Doc(Body("a"), kNew)));
    case Op::kAddB:
      return of(ConsistentAdd(old_shard, new_shard, Doc(Body("b"), kNew)));
    case Op::kUpdate:
      return of(ConsistentUpdate(old_shard, new_shard, Doc(Body("u"), kNew)));
    case Op::kDelete:
      return of(ConsistentDelete(old_shard, new_shard, kKey, kNew));
    case Op::kGet: {
      auto got = ConsistentGet(old_shard, new_shard, kKey);
      if (!got.ok()) return of(got.status());
      return Outcome{.code = StatusCode::kOk, .values = {Canonical(got->body)}};
    }
    case Op::kQuery:
    case Op::kQueryFiltered: {
      storage::DocumentFilter filter;
      if (op == Op::kQueryFiltered) {  // matches every live document, pushed down to the shards
        filter.all_of.push_back(
            {.path = "v", .op = storage::CompareOp::kNe, .value = std::string("none")});
      }
      MergeQuery q({&old_shard, &new_shard},
                   {.filter = filter, .consistent = true, .new_version = kNew, .page_size = 1});
      Outcome o;
      for (;;) {
        auto page = q.Next(1);
        if (!page.ok()) return of(page.status());
        if (page->empty()) break;
        for (const auto& d : *page) o.values.push_back(Canonical(d.body));
      }
      return o;
    }
    case Op::kMove: {
      // Algorithm 5 for this document: read it from the old shard by version, copy it.
      ShardQuery q;
      q.version = kOld;
      auto page = old_shard.Query(q);
      if (!page.ok()) return of(page.status());
      for (const auto& d : page->documents) {
        Status s = MoveDocument(old_shard, new_shard, d, kNew, /*same_shard=*/false);
        if (!s.ok()) return of(s);
      }
      return Outcome{};
    }
  }
  return Outcome{};
}

// The serial model: one logical value per key.
Outcome ApplyModel(Op op, std::optional<std::string>& value) {
  auto code = [](StatusCode c) { return Outcome{.code = c, .values = {}}; };
  switch (op) {
    case Op::kAddA:
    case Op::kAddB:
      if (value.has_value()) return code(StatusCode::kAlreadyExists);
      value = Body(op == Op::kAddA ? "a" : "b");
      return code(StatusCode::kOk);
    case Op::kUpdate:
      if (!value.has_value()) return code(StatusCode::kNotFound);
      value = Body("u");
      return code(StatusCode::kOk);
    case Op::kDelete:
      if (!value.has_value()) return code(StatusCode::kNotFound);
      value.reset();
      return code(StatusCode::kOk);
    case Op::kGet:
      if (!value.has_value()) return code(StatusCode::kNotFound);
      return Outcome{.code = StatusCode::kOk, .values = {*value}};
    case Op::kQuery:
    case Op::kQueryFiltered:
      if (!value.has_value()) return Outcome{};
      return Outcome{.code = StatusCode::kOk, .values = {*value}};
    case Op::kMove:
      return Outcome{};
  }
  return Outcome{};
}

// One run of `ops` under `choose`; returns a description of the failure, or "" if consistent.
// Two empty shards for one run: the old and the new shard of the document.
struct ShardPair {
  std::shared_ptr<ShardBackend> old_shard;
  std::shared_ptr<ShardBackend> new_shard;
};
using ShardPairFactory = std::function<ShardPair()>;

ShardPair MemoryPair() {
  return {std::make_shared<MemoryShardBackend>("old"), std::make_shared<MemoryShardBackend>("new")};
}

std::string RunOnce(Scenario scenario, const std::vector<Op>& ops,
                    const std::function<size_t(size_t)>& choose,
                    const ShardPairFactory& factory = MemoryPair) {
  const ShardPair pair = factory();
  ShardBackend& old_raw = *pair.old_shard;
  ShardBackend& new_raw = *pair.new_shard;
  const std::optional<std::string> initial = Setup(scenario, old_raw, new_raw);
  Scheduler scheduler(ops.size());
  GatedShard old_shard(&old_raw, &scheduler), new_shard(&new_raw, &scheduler);
  std::vector<Outcome> outcomes(ops.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ops.size(); ++i) {
    threads.emplace_back([&, i] {
      tls_thread = i;
      outcomes[i] = Execute(ops[i], old_shard, new_shard);
      scheduler.Finish(i);
    });
  }
  scheduler.Drive(choose);
  for (auto& t : threads) t.join();

  // Finish the rebalance (Algorithm 5), then read the document as `normal` would.
  Execute(Op::kMove, old_raw, new_raw);
  for (ShardBackend* shard :
       {static_cast<ShardBackend*>(&old_raw), static_cast<ShardBackend*>(&new_raw)}) {
    ShardQuery all;
    all.include_tombstones = true;
    StatusOr<ShardPage> page = shard->Query(all);
    if (!page.ok()) return "query failed";
    for (const auto& d : page->documents) {
      if (d.tombstone || d.version == kOld) {
        EXPECT_TRUE(RemoveObsolete(*shard, d, kOld).ok());
      }
    }
  }
  std::optional<std::string> final_value;
  if (auto got = new_raw.Get(kKey); got.ok()) {
    if (got->tombstone) return "a tombstone survived the cleanup";
    if (got->version != kNew) return "an old version survived the cleanup";
    final_value = Canonical(got->body);
  }
  if (old_raw.Get(kKey).ok()) return "the old shard still holds the document";

  // Some serial order must explain every outcome and the final value.
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  do {
    std::optional<std::string> value = initial;
    bool same = true;
    for (size_t i : order) same = same && ApplyModel(ops[i], value) == outcomes[i];
    if (same && value == final_value) return "";
  } while (std::next_permutation(order.begin(), order.end()));
  std::string why = "no serial order explains:";
  for (size_t i = 0; i < ops.size(); ++i) {
    why += " " + std::string(OpName(ops[i])) + "→" + Show(outcomes[i]) + ";";
  }
  why += " final=" + final_value.value_or("absent");
  return why;
}

// Every interleaving, depth-first over the choices; returns the number of runs.
size_t ExploreAll(Scenario scenario, const std::vector<Op>& ops,
                  const ShardPairFactory& factory = MemoryPair) {
  std::vector<size_t> prefix;
  size_t runs = 0;
  for (;;) {
    std::vector<size_t> taken, options;
    const std::string failure = RunOnce(
        scenario, ops,
        [&](size_t n) {
          const size_t c = taken.size() < prefix.size() ? prefix[taken.size()] : 0;
          taken.push_back(c);
          options.push_back(n);
          return c;
        },
        factory);
    ++runs;
    std::string schedule;
    for (size_t c : taken) schedule += std::to_string(c);
    EXPECT_EQ(failure, "") << ScenarioName(scenario) << ", schedule " << schedule;
    if (!failure.empty()) return runs;
    // Next schedule: bump the deepest choice that has an untried option.
    while (!taken.empty() && taken.back() + 1 >= options.back()) {
      taken.pop_back();
      options.pop_back();
    }
    if (taken.empty()) return runs;
    ++taken.back();
    prefix = taken;
  }
}

TEST(ClientsideInterleavingTest, EveryPairInEveryScenario) {
  size_t runs = 0, configs = 0;
  for (Scenario scenario : kAllScenarios) {
    for (size_t i = 0; i < std::size(kAllOps); ++i) {
      for (size_t j = i; j < std::size(kAllOps); ++j) {
        SCOPED_TRACE(std::string(OpName(kAllOps[i])) + " || " + std::string(OpName(kAllOps[j])));
        runs += ExploreAll(scenario, {kAllOps[i], kAllOps[j]});
        ++configs;
      }
    }
  }
  std::printf("explored %zu interleavings of %zu operation pairs\n", runs, configs);
}

// The same exhaustive pairs on the real backends: the embedded shard (fresh collections per run)
// and PostgreSQL (two tables, emptied before each run, on a server the test starts).
TEST(ClientsideInterleavingTest, EveryPairOnEmbeddedAndPostgresShards) {
  testing::ScopedTempDir dir;
  testing::EmbeddedShards embedded(dir.path());
  auto server = testing::PostgresTestServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::shared_ptr<ShardBackend>> tables;
  for (const char* name : {"interleave_old", "interleave_new"}) {
    auto t = PostgresShardBackend::Create({.conninfo = (*server)->conninfo(),
                                           .table = name,
                                           .max_idle_connections = 4,
                                           .max_prepared_statements = 256});
    ASSERT_TRUE(t.ok()) << t.status();
    tables.push_back(std::shared_ptr<ShardBackend>(*std::move(t)));
  }
  const std::vector<std::pair<std::string, ShardPairFactory>> backends = {
      {"embedded",
       [&] {
         return ShardPair{embedded.NewShard(), embedded.NewShard()};
       }},
      {"postgres", [&] {
         for (auto& t : tables) {
           Status ignored = t->Delete(kKey);  // NOT_FOUND when already empty
           (void)ignored;
         }
         return ShardPair{tables[0], tables[1]};
       }}};
  for (const auto& [name, factory] : backends) {
    size_t runs = 0;
    for (Scenario scenario : kAllScenarios) {
      for (size_t i = 0; i < std::size(kAllOps); ++i) {
        for (size_t j = i; j < std::size(kAllOps); ++j) {
          SCOPED_TRACE(name + ": " + std::string(OpName(kAllOps[i])) + " || " +
                       std::string(OpName(kAllOps[j])));
          runs += ExploreAll(scenario, {kAllOps[i], kAllOps[j]}, factory);
        }
      }
    }
    std::printf("%s: explored %zu interleavings\n", name.c_str(), runs);
  }
}

TEST(ClientsideInterleavingTest, RandomTriples) {
  const bool full = std::getenv("SHOAL_CLIENTSIDE_INTERLEAVE_FULL") != nullptr;
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu (SHOAL_CLIENTSIDE_SEED replays)\n", static_cast<unsigned long long>(seed));
  const char* replay = std::getenv("SHOAL_CLIENTSIDE_SEED");
  std::mt19937_64 rng(replay != nullptr ? std::strtoull(replay, nullptr, 10) : seed);
  size_t runs = 0;
  if (full) {
    for (Scenario scenario : kAllScenarios) {
      for (Op a : kAllOps) {
        for (Op b : kAllOps) {
          for (Op c : kAllOps) {
            if (a > b || b > c) continue;
            runs += ExploreAll(scenario, {a, b, c});
          }
        }
      }
    }
  } else {
    for (int i = 0; i < 1500; ++i) {
      const Scenario scenario = kAllScenarios[rng() % std::size(kAllScenarios)];
      const std::vector<Op> ops = {kAllOps[rng() % std::size(kAllOps)],
                                   kAllOps[rng() % std::size(kAllOps)],
                                   kAllOps[rng() % std::size(kAllOps)]};
      const std::string failure = RunOnce(scenario, ops, [&](size_t n) { return rng() % n; });
      ++runs;
      ASSERT_EQ(failure, "") << ScenarioName(scenario) << " iteration " << i;
    }
  }
  std::printf("ran %zu three-operation interleavings\n", runs);
}

}  // namespace
}  // namespace shoal::clientside
