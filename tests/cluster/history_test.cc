// A linearizability check of a real cluster under process faults: `shoal local --nodes 3
// --replicas 3` (K = 3, min_in_sync 2; docs/design/replication.md) runs as a child process while
// client threads write and read a few keys and a fault thread kills, stops and restarts nodes.
// Every key's history is then checked with the register checker of the simulation
// (tests/sim/linearizability.h: Wing & Gong's search with Lowe's memoization).
//
// The workload. kClients threads, on two Database::Connect clients (threads sharing one, so the
// coalescing of concurrent calls runs too), pick among kKeys keys at random and do a seeded mix of
// Get, Insert, Update, Upsert, Delete and a Get followed by CompareAndSet on the version read.
// Each write stores a value no other write stores ({"v": "c<client>-<n>"}), so a read names the
// write it saw, and a version read names one value (CompareAndSet is the model's "expected value
// -> new value"). Call and return times are read from one steady_clock in this process, just
// before the call and just after it returns: an op's real interval lies within the recorded one.
// About one op in eleven is a Get of any copy (ReadMode::kAnyReplica): not linearizable by
// contract, so kept out of the register histories and checked by the simulation's bounded-reads
// checker (tests/sim/stale_reads.h: no value of a write refused or never made, nothing staler
// than max_staleness plus one message's delay, taken here as 2 s); the stalest miss is printed.
//
// Outcomes follow the client library's own classification (src/transport/classify.h), as the
// public API reports it (include/shoal/shoal.h):
//   - OK, ALREADY_EXISTS (Insert), NOT_FOUND, FAILED_PRECONDITION (CompareAndSet; a NOT_FOUND
//     CompareAndSet is the model's condition failed too) and a read value are definite;
//   - UNKNOWN (a request or reply lost after it may have been sent) is an unknown outcome, and so
//     is every code shoal.h does not document for the op; those are printed and fail the test
//     after the check (the public API's contract names the codes a write may end with);
//   - UNAVAILABLE is the client giving up after every attempt was certainly not handled or was
//     refused before being applied (NOT_SERVING, NOT_ENOUGH_REPLICAS: replication.md §3 step 2):
//     a failure without effect, left out of the history. Should a key fail the check, it is
//     checked again with those ops as unknown outcomes, and the report says whether that alone
//     explains the failure (a write reported as not applied that was applied);
//   - a Get that fails constrains nothing and is dropped.
//
// The faults (history_faults.h). shoal local runs as a LocalCluster (local_cluster.h), which
// restarts a node 500 ms after it exits. A fault thread, seeded too, waits (up to 15 s) for the
// cluster to heal between faults, then SIGKILLs a node, SIGSTOPs one briefly or past the failover
// timeout (then SIGCONT), hangs one and kills it, or kills two one after the other; at most one
// node is down for long, so writes go on. Each fault is printed and kept, with its time, in the
// run's fault timeline.
//
// The end. Faults stop (a stopped node is woken first), the clients stop, the cluster settles
// (every bucket with three copies and a reachable primary, up to 60 s), every key is read once more
// (a definite Get appended to its history), and each key's history is checked. A key that fails
// prints the seed, the checker's explanation, the first instant of the run at which the history
// stops being linearizable (found by bisection over prefixes of the run), the key's ops around it
// and the fault timeline; the directory of the processes and their logs is kept then. The test
// prints ops, definite and unknown ops, each op kind's outcomes, faults and the checker's time,
// and requires a minimum of definite acknowledged writes and of faults, so that it cannot pass
// without testing anything.
//
// The seed fixes the op mix and the fault schedule, not the interleaving of real processes: a
// run is not replayable, a seed only makes a similar run. Environment:
//   SHOAL_SEED              the seed (default 1, printed);
//   SHOAL_HISTORY_SECONDS   how long the clients and faults run (default 60; `make test-faults`
//                           runs 300);
//   SHOAL_FAULT_KEEP        keep the directory of the processes also when the test passes;
//   SHOAL_BINARY            the `shoal` executable (default: the one built alongside).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/random.h"
#include "tests/cluster/history_faults.h"
#include "tests/cluster/local_cluster.h"
#include "tests/cluster/process_cluster.h"
#include "tests/sim/linearizability.h"
#include "tests/sim/stale_reads.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;
using sim::Operation;
using sim::OpKind;
using sim::OpOutcome;

// The cluster: K = 3 copies of every bucket on 3 nodes; a node killed is restarted after 500 ms.
constexpr LocalCluster::Options kCluster = {
    .nodes = 3, .replicas = 3, .buckets = 8, .restart_delay_ms = 500};
constexpr int kClients = 6;
constexpr int kDatabases = 2;
constexpr uint64_t kKeys = 20;
constexpr char kCollection[] = "history";
constexpr uint64_t kDefaultSeed = 1;
constexpr uint64_t kDefaultSeconds = 60;
// The client that makes the final reads, apart from the workload's.
constexpr uint64_t kFinalReader = 99;
// Definite acknowledged writes required per second of the run; a run on an idle machine makes
// tens of times more.
constexpr uint64_t kMinDefiniteWritesPerSecond = 5;
// A read of any copy reflects every write acknowledged max_staleness (1 s) plus one message's
// delay before it began (replication.md §5); a second of margin for a message delayed on a
// loaded machine.
constexpr int64_t kStalenessBoundUs = 2'000'000;
// Failing keys whose first failing instant is searched for (each search checks ~log2(ops)
// prefixes).
constexpr size_t kMaxBisected = 3;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoull(value, nullptr, 10);
}

// ---- the history ----

// One op of the workload as recorded, with what the client library answered.
struct Recorded {
  std::string key;
  Operation op;
  // UNAVAILABLE: refused before being applied, left out of the check (see the header).
  bool no_effect = false;
  std::string error;  // the status, when not OK
};

// Microseconds since the run began, on the one clock every thread reads.
class TimeBase {
 public:
  [[nodiscard]] int64_t Now() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  }
  // The wall-clock time of 0, to match the times printed here with the processes' logs.
  [[nodiscard]] std::string StartUtc() const {
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(wall_start_.time_since_epoch())
            .count();
    const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
    std::tm utc = {};
    ::gmtime_r(&seconds, &utc);
    std::array<char, 32> text;
    std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%S", &utc);
    return fmt::format("{}.{:03}Z", text.data(), millis % 1000);
  }

 private:
  const Clock::time_point start_ = Clock::now();
  const std::chrono::system_clock::time_point wall_start_ = std::chrono::system_clock::now();
};

std::string FormatUs(int64_t us) {
  if (us == sim::kNeverReturned) return "inf";
  return fmt::format("{:.3f}s", static_cast<double>(us) / 1e6);
}

// The value a write stores, and the body that carries it.
std::string ValueName(uint64_t client, uint64_t n) { return fmt::format("c{}-{}", client, n); }
std::string BodyOf(const std::string& value) { return nlohmann::json{{"v", value}}.dump(); }

// The value a body read back carries (the body itself, quoted, if it carries none: the check
// then fails and shows it).
std::string ValueOf(const std::string& json) {
  auto parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("v") ||
      !parsed["v"].is_string()) {
    return "unparsable body " + json;
  }
  return parsed["v"].get<std::string>();
}

// What the client library's answer to a write of `kind` says about its effect.
struct Judged {
  OpOutcome outcome = OpOutcome::kUnknown;
  bool no_effect = false;
  bool undocumented = false;  // a code the API does not document for this op: taken as unknown
};

Judged JudgeWrite(OpKind kind, const shoal::Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return {.outcome = OpOutcome::kOk};
    case StatusCode::kAlreadyExists:
      if (kind == OpKind::kInsert) return {.outcome = OpOutcome::kDuplicate};
      break;
    case StatusCode::kNotFound:
      if (kind == OpKind::kUpdate || kind == OpKind::kDelete) {
        return {.outcome = OpOutcome::kNotFound};
      }
      // A CompareAndSet of a key deleted since its read: the model's condition failed.
      if (kind == OpKind::kCompareAndSet) return {.outcome = OpOutcome::kConditionFailed};
      break;
    case StatusCode::kFailedPrecondition:
      if (kind == OpKind::kCompareAndSet) return {.outcome = OpOutcome::kConditionFailed};
      break;
    case StatusCode::kUnknown:
      return {.outcome = OpOutcome::kUnknown};
    case StatusCode::kUnavailable:
      return {.outcome = OpOutcome::kUnknown, .no_effect = true};
    default:
      break;
  }
  return {.outcome = OpOutcome::kUnknown, .undocumented = true};
}

// One fault as the fault thread made it.
struct FaultEvent {
  int64_t at_us = 0;
  std::string what;
};

// Everything the threads of one run share.
struct RunState {
  uint64_t seed = kDefaultSeed;
  TimeBase time;
  std::atomic<bool> stop_clients{false};

  std::mutex mu;
  std::vector<Recorded> ops;                        // guarded by mu
  std::vector<sim::BoundedRead> any_replica_reads;  // guarded by mu
  std::vector<FaultEvent> faults;                   // guarded by mu
  // "Kind: CODE" -> how many, and the first one's message.
  std::map<std::string, std::pair<uint64_t, std::string>> undocumented_errors;
  uint64_t dropped_gets = 0;  // guarded by mu

  void Add(Recorded recorded) {
    std::lock_guard<std::mutex> lock(mu);
    ops.push_back(std::move(recorded));
  }
  // A get of `key` by `client` between `call` and `returned` that found `doc` or nothing.
  void AddGet(uint64_t client, const std::string& key, int64_t call, int64_t returned,
              const StatusOr<Document>& doc) {
    Add({.key = key,
         .op = {.client = client,
                .kind = OpKind::kGet,
                .value = {},
                .expected = {},
                .outcome = doc.ok() ? OpOutcome::kOk : OpOutcome::kNotFound,
                .read_value = doc.ok() ? ValueOf(doc->json) : std::string(),
                .call_us = call,
                .return_us = returned},
         .no_effect = false,
         .error = {}});
  }
  void Fault(std::string what) {
    const int64_t at = time.Now();
    fmt::print("[ fault   ] {:>9} {}\n", FormatUs(at), what);
    std::lock_guard<std::mutex> lock(mu);
    faults.push_back({.at_us = at, .what = std::move(what)});
  }
};

// One client thread: a seeded mix of ops on kKeys keys until told to stop.
void ClientLoop(RunState& run, Collection collection, uint64_t client) {
  Random random(run.seed * 1000003 + client);
  uint64_t next_value = 0;
  while (!run.stop_clients.load()) {
    const std::string key = fmt::format("k{}", random.Uniform(kKeys));
    const uint64_t choice = random.Uniform(22);
    auto write = [&](OpKind kind, const std::string& value, const std::string& expected,
                     const std::function<shoal::Status()>& call) {
      Recorded recorded{.key = key,
                        .op = {.client = client,
                               .kind = kind,
                               .value = value,
                               .expected = expected,
                               .outcome = OpOutcome::kUnknown,
                               .read_value = {},
                               .call_us = run.time.Now(),
                               .return_us = sim::kNeverReturned},
                        .no_effect = false,
                        .error = {}};
      const shoal::Status status = call();
      const int64_t returned = run.time.Now();
      const Judged judged = JudgeWrite(kind, status);
      recorded.op.outcome = judged.outcome;
      if (judged.outcome != OpOutcome::kUnknown) recorded.op.return_us = returned;
      recorded.no_effect = judged.no_effect;
      if (!status.ok()) recorded.error = status.ToString();
      if (judged.undocumented) {
        std::lock_guard<std::mutex> lock(run.mu);
        auto& [count, first] = run.undocumented_errors[fmt::format(
            "{}: {}", sim::ToString(kind), StatusCodeToString(status.code()))];
        if (count++ == 0) first = status.ToString();
      }
      run.Add(std::move(recorded));
    };
    // A Get, recorded when definite; returns the document read, if any.
    auto get = [&]() -> std::optional<Document> {
      const int64_t call = run.time.Now();
      auto doc = collection.Get(key);
      const int64_t returned = run.time.Now();
      if (!doc.ok() && doc.status().code() != StatusCode::kNotFound) {
        std::lock_guard<std::mutex> lock(run.mu);
        ++run.dropped_gets;
        return std::nullopt;
      }
      run.AddGet(client, key, call, returned, doc);
      if (!doc.ok()) return std::nullopt;
      return *doc;
    };
    const std::string value = ValueName(client, next_value++);
    if (choice < 6) {
      (void)get();
    } else if (choice < 9) {
      write(OpKind::kInsert, value, "",
            [&] { return collection.Insert(key, BodyOf(value)).status(); });
    } else if (choice < 11) {
      write(OpKind::kUpdate, value, "",
            [&] { return collection.Update(key, BodyOf(value)).status(); });
    } else if (choice < 14) {
      write(OpKind::kUpsert, value, "",
            [&] { return collection.Upsert(key, BodyOf(value)).status(); });
    } else if (choice < 16) {
      write(OpKind::kDelete, "", "", [&] { return collection.Delete(key).status(); });
    } else if (choice >= 20) {
      // A read of any copy: not in the register's history, checked for bounded staleness.
      const int64_t call = run.time.Now();
      auto doc = collection.Get(key, ReadOptions{.mode = ReadMode::kAnyReplica});
      const int64_t returned = run.time.Now();
      std::lock_guard<std::mutex> lock(run.mu);
      if (doc.ok() || doc.status().code() == StatusCode::kNotFound) {
        run.any_replica_reads.push_back(
            {.key = key,
             .call_us = call,
             .return_us = returned,
             .value = doc.ok() ? std::optional<std::string>(ValueOf(doc->json)) : std::nullopt});
      } else {
        ++run.dropped_gets;
      }
    } else {
      // Read, then compare-and-set on the version read: a version names the one value read.
      const std::optional<Document> read = get();
      if (read.has_value()) {
        write(OpKind::kCompareAndSet, value, ValueOf(read->json),
              [&] { return collection.CompareAndSet(key, read->version, BodyOf(value)).status(); });
      }
    }
  }
}

// ---- the check ----

struct KeyHistory {
  std::vector<Operation> ops;  // in the check
  std::vector<Operation> no_effect;
};

// The ops of `history` as they stood at `cut_us`: ops called later are left out, writes that had
// not returned become unknown outcomes and Gets that had not returned are dropped. If the whole
// history is linearizable, so is every such prefix; the first cut that is not shows when the
// history went wrong.
std::vector<Operation> PrefixAt(const std::vector<Operation>& history, int64_t cut_us) {
  std::vector<Operation> prefix;
  for (const Operation& op : history) {
    if (op.call_us > cut_us) continue;
    Operation copy = op;
    if (copy.outcome != OpOutcome::kUnknown && copy.return_us > cut_us) {
      if (copy.kind == OpKind::kGet) continue;
      copy.outcome = OpOutcome::kUnknown;
      copy.return_us = sim::kNeverReturned;
    }
    prefix.push_back(std::move(copy));
  }
  return prefix;
}

// The earliest return time at which the prefix of `history` stops being linearizable (a prefix
// whose check times out counts as not linearizable).
int64_t FirstFailure(const std::vector<Operation>& history, const sim::CheckOptions& options) {
  std::vector<int64_t> cuts;
  for (const Operation& op : history) {
    if (op.outcome != OpOutcome::kUnknown) cuts.push_back(op.return_us);
  }
  std::sort(cuts.begin(), cuts.end());
  size_t low = 0;
  size_t high = cuts.size() - 1;  // the whole history fails
  while (low < high) {
    const size_t mid = (low + high) / 2;
    const auto prefix = PrefixAt(history, cuts[mid]);
    if (sim::CheckRegisterHistory(prefix, options).ok()) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return cuts[low];
}

// How long before the read began the newest acknowledged write that a read of any copy missed
// returned, over all such reads (0: none missed one). A read missed write W if every write that
// may have produced what it returned ended before W was called (stale_reads.h).
int64_t MaxStalenessUs(const std::map<std::string, std::vector<Operation>>& history,
                       const std::vector<sim::BoundedRead>& reads) {
  constexpr int64_t kBeforeAll = std::numeric_limits<int64_t>::min();
  int64_t max = 0;
  for (const sim::BoundedRead& read : reads) {
    auto it = history.find(read.key);
    if (it == history.end()) continue;
    // The initial absence, or nothing: a phantom, which CheckBoundedReads reports.
    std::optional<int64_t> source_end;
    if (!read.value.has_value()) source_end = kBeforeAll;
    for (const Operation& op : it->second) {
      if (op.kind == OpKind::kGet ||
          (op.outcome != OpOutcome::kOk && op.outcome != OpOutcome::kUnknown)) {
        continue;
      }
      const bool produces = read.value.has_value()
                                ? op.kind != OpKind::kDelete && op.value == *read.value
                                : op.kind == OpKind::kDelete;
      if (produces) {
        const int64_t end = op.outcome == OpOutcome::kOk ? op.return_us : sim::kNeverReturned;
        source_end = std::max(source_end.value_or(kBeforeAll), end);
      }
    }
    if (!source_end.has_value()) continue;
    for (const Operation& op : it->second) {
      if (op.kind == OpKind::kGet || op.outcome != OpOutcome::kOk) continue;
      if (op.return_us < read.call_us && *source_end < op.call_us) {
        max = std::max(max, read.call_us - op.return_us);
      }
    }
  }
  return max;
}

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Line by line, so that a run killed at ctest's timeout still shows what it did.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    InstallEmergencyCleanup();
    std::string pattern =
        (std::filesystem::temp_directory_path() / "shoal-history-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    cluster_ = std::make_unique<LocalCluster>(ShoalBinary(), dir_, kCluster);
  }

  void TearDown() override {
    StopThreads();
    cluster_.reset();
    if (HasFailure() || std::getenv("SHOAL_FAULT_KEEP") != nullptr) {
      fmt::print("[ history ] kept {} (shoal local's output: local.out; logs: data/*.log)\n", dir_);
    } else {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  // Stops the faults (which wake a stopped node first) and the clients, and joins them.
  void StopThreads() {
    if (faults_ != nullptr) faults_->RequestStop();
    if (fault_thread_.joinable()) fault_thread_.join();
    run_.stop_clients.store(true);
    for (auto& thread : clients_) thread.join();
    clients_.clear();
  }

  RunState run_;
  std::string dir_;
  std::unique_ptr<LocalCluster> cluster_;
  std::vector<std::unique_ptr<Database>> databases_;
  std::unique_ptr<Faults> faults_;
  std::thread fault_thread_;
  std::vector<std::thread> clients_;
};

TEST_F(HistoryTest, KeysStayLinearizableWhileNodesAreKilledStoppedAndRestarted) {
  run_.seed = EnvOr("SHOAL_SEED", kDefaultSeed);
  const uint64_t seconds = EnvOr("SHOAL_HISTORY_SECONDS", kDefaultSeconds);
  fmt::print("[ history ] SHOAL_SEED={} SHOAL_HISTORY_SECONDS={} ({} clients, {} keys)\n",
             run_.seed, seconds, kClients, kKeys);
  Random ports(run_.seed ^ static_cast<uint64_t>(::getpid()));
  const shoal::Status started = cluster_->Start(ports);
  ASSERT_TRUE(started.ok()) << started;
  fmt::print("[ history ] shoal local serves {} ({}); times below are since {}\n", cluster_->uri(),
             dir_, run_.time.StartUtc());

  for (int i = 0; i < kDatabases; ++i) {
    ConnectOptions connect;
    connect.credentials_file = cluster_->credentials_file();
    auto db = Database::Connect(cluster_->uri(), connect);
    ASSERT_TRUE(db.ok()) << db.status();
    databases_.push_back(std::move(*db));
  }
  {
    auto created = databases_[0]->CreateCollection(kCollection);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  std::vector<Collection> collections;
  for (auto& db : databases_) {
    auto collection = db->GetCollection(kCollection);
    ASSERT_TRUE(collection.ok()) << collection.status();
    collections.push_back(*collection);
  }

  for (int c = 0; c < kClients; ++c) {
    clients_.emplace_back(ClientLoop, std::ref(run_), collections[c % kDatabases],
                          static_cast<uint64_t>(c + 1));
  }
  faults_ = std::make_unique<Faults>(*cluster_, run_.seed,
                                     [this](std::string what) { run_.Fault(std::move(what)); });
  fault_thread_ = std::thread([this] { faults_->Loop(); });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  StopThreads();
  const int64_t clients_stopped = run_.time.Now();
  fmt::print("[ history ] clients and faults stopped at {}\n", FormatUs(clients_stopped));

  // Settle, then one definite read of every key.
  const auto settle_begin = Clock::now();
  bool healthy = false;
  while (!(healthy = cluster_->Healthy()) &&
         Clock::now() - settle_begin < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  fmt::print(
      "[ history ] settled in {} ms ({})\n",
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - settle_begin).count(),
      healthy ? "every bucket has 3 copies and a reachable primary" : "NOT healthy");
  EXPECT_TRUE(healthy) << "the cluster did not heal within 60 s of the last fault:\n"
                       << cluster_->Output();
  for (uint64_t k = 0; k < kKeys; ++k) {
    const std::string key = fmt::format("k{}", k);
    bool read = false;
    for (int attempt = 0; attempt < 60 && !read; ++attempt) {
      const int64_t call = run_.time.Now();
      auto doc = collections[0].Get(key);
      const int64_t returned = run_.time.Now();
      if (doc.ok() || doc.status().code() == StatusCode::kNotFound) {
        run_.AddGet(kFinalReader, key, call, returned, doc);
        read = true;
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
    EXPECT_TRUE(read) << "no final read of " << key;
  }

  // Counts.
  std::map<std::string, KeyHistory> by_key;
  uint64_t definite = 0;
  uint64_t unknown = 0;
  uint64_t no_effect = 0;
  uint64_t definite_writes = 0;
  std::map<std::string, std::map<std::string, uint64_t>> by_kind;  // kind -> outcome -> count
  for (const Recorded& r : run_.ops) {
    const std::string kind(sim::ToString(r.op.kind));
    if (r.no_effect) {
      ++no_effect;
      ++by_kind[kind]["unavailable (no effect)"];
      by_key[r.key].no_effect.push_back(r.op);
      continue;
    }
    ++by_kind[kind][std::string(sim::ToString(r.op.outcome))];
    by_key[r.key].ops.push_back(r.op);
    if (r.op.outcome == OpOutcome::kUnknown) {
      ++unknown;
    } else {
      ++definite;
      if (r.op.kind != OpKind::kGet && r.op.outcome == OpOutcome::kOk) ++definite_writes;
    }
  }
  const FaultCounts& counts = faults_->counts();
  fmt::print(
      "[ history ] {} ops recorded: {} definite, {} unknown, {} failed without effect "
      "(UNAVAILABLE), {} failed Gets dropped; {} definite acknowledged writes\n",
      run_.ops.size() + run_.dropped_gets, definite, unknown, no_effect, run_.dropped_gets,
      definite_writes);
  for (const auto& [kind, outcomes] : by_kind) {
    std::string line;
    for (const auto& [outcome, n] : outcomes) line += fmt::format(" {}={}", outcome, n);
    fmt::print("[ history ]   {:<14}{}\n", kind, line);
  }
  for (const auto& [what, seen] : run_.undocumented_errors) {
    fmt::print("[ history ]   undocumented error, taken as unknown: {} x{} (first: {})\n", what,
               seen.first, seen.second);
  }
  // Definite ops per 5 s of the run: where the faults slowed the clients down.
  std::vector<uint64_t> per_window((clients_stopped + 4'999'999) / 5'000'000 + 1, 0);
  for (const Recorded& r : run_.ops) {
    if (r.op.outcome == OpOutcome::kUnknown || r.op.client == kFinalReader) continue;
    const size_t window = static_cast<size_t>(r.op.return_us / 5'000'000);
    if (window < per_window.size()) ++per_window[window];
  }
  std::string rates;
  for (uint64_t n : per_window) rates += fmt::format(" {}", n);
  fmt::print("[ history ] definite ops per 5 s:{}\n", rates);
  fmt::print(
      "[ history ] faults: {} SIGKILL ({} restarts seen), {} SIGSTOP/SIGCONT, {} begun before "
      "the last had healed\n",
      counts.kills, counts.restarts, counts.stops, counts.unhealed);

  // The check.
  // Each key's search has 10 s (a run's keys take milliseconds in all); a failing key's
  // bisection 5 s per prefix, for the first kMaxBisected failing keys. Within ctest's 300 s.
  const sim::CheckOptions options{.initial_value = std::nullopt,
                                  .timeout = std::chrono::milliseconds(10'000)};
  const sim::CheckOptions bisect_options{.initial_value = std::nullopt,
                                         .timeout = std::chrono::milliseconds(5'000)};
  const auto check_begin = Clock::now();
  std::vector<std::string> failed;
  uint64_t states = 0;
  for (const auto& [key, history] : by_key) {
    const sim::CheckReport report = sim::CheckRegisterHistory(history.ops, options);
    states += report.states_explored;
    if (report.ok()) continue;
    failed.push_back(key);
    std::string out =
        fmt::format("SHOAL_SEED={}: key {} is {} ({} ops)\n{}", run_.seed, key,
                    sim::ToString(report.result), history.ops.size(), report.explanation);
    if (report.result == sim::CheckResult::kNotLinearizable && failed.size() <= kMaxBisected) {
      std::vector<Operation> widened = history.ops;
      for (Operation op : history.no_effect) {
        op.outcome = OpOutcome::kUnknown;
        op.return_us = sim::kNeverReturned;
        widened.push_back(std::move(op));
      }
      out += sim::CheckRegisterHistory(widened, options).ok()
                 ? "WITH its UNAVAILABLE writes as unknown outcomes the key IS linearizable: a "
                   "write the client reported as refused took effect\n"
                 : "with its UNAVAILABLE writes as unknown outcomes too, still not "
                   "linearizable\n";
      const int64_t cut = FirstFailure(history.ops, bisect_options);
      out += fmt::format("the history stops being linearizable at {}; the key's ops from {}:\n",
                         FormatUs(cut), FormatUs(std::max<int64_t>(cut - 3'000'000, 0)));
      std::vector<Operation> window;
      for (const Operation& op : history.ops) {
        if (op.call_us <= cut &&
            (op.return_us >= cut - 3'000'000 || op.outcome == OpOutcome::kUnknown)) {
          window.push_back(op);
        }
      }
      std::sort(window.begin(), window.end(),
                [](const Operation& a, const Operation& b) { return a.call_us < b.call_us; });
      for (const Operation& op : window) {
        out += fmt::format("  [{} .. {}] {}\n", FormatUs(op.call_us), FormatUs(op.return_us),
                           sim::DebugString(op));
      }
      out += "faults:\n";
      for (const FaultEvent& fault : run_.faults) {
        out += fmt::format("  {} {}{}\n", FormatUs(fault.at_us), fault.what,
                           fault.at_us <= cut && fault.at_us >= cut - 10'000'000 ? "  <--" : "");
      }
    }
    ADD_FAILURE() << out;
  }
  const auto check_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - check_begin).count();
  fmt::print("[ history ] checked {} keys in {} ms ({} states explored): {} not linearizable\n",
             by_key.size(), check_ms, states, failed.size());

  // Reads of any copy: no value of a write refused or never made, none staler than the bound.
  std::map<std::string, std::vector<Operation>> writes;
  std::map<std::string, std::vector<Operation>> widened_writes;  // UNAVAILABLE ones as unknown
  for (const auto& [key, history] : by_key) {
    writes[key] = history.ops;
    widened_writes[key] = history.ops;
    for (Operation op : history.no_effect) {
      op.outcome = OpOutcome::kUnknown;
      op.return_us = sim::kNeverReturned;
      widened_writes[key].push_back(std::move(op));
    }
  }
  const std::optional<std::string> stale =
      sim::CheckBoundedReads(writes, run_.any_replica_reads, kStalenessBoundUs);
  const int64_t stalest = MaxStalenessUs(writes, run_.any_replica_reads);
  fmt::print("[ history ] {} reads of any copy: {}; {}\n", run_.any_replica_reads.size(),
             stale.has_value() ? "a violation" : "none stale beyond the bound or phantom",
             stalest == 0 ? std::string("none missed an acknowledged write")
                          : fmt::format("the stalest missed a write acknowledged {:.1f} ms "
                                        "before it began",
                                        static_cast<double>(stalest) / 1000));
  if (stale.has_value()) {
    const bool explained =
        !sim::CheckBoundedReads(widened_writes, run_.any_replica_reads, kStalenessBoundUs)
             .has_value();
    ADD_FAILURE() << fmt::format(
        "SHOAL_SEED={}: a read of any copy broke its contract (bound {} us, times since {}): {}\n"
        "{}",
        run_.seed, kStalenessBoundUs, run_.time.StartUtc(), *stale,
        explained ? "WITH the UNAVAILABLE writes as unknown outcomes it does not: a write the "
                    "client reported as refused took effect"
                  : "");
  }

  EXPECT_GE(definite_writes, kMinDefiniteWritesPerSecond * seconds)
      << "too few definite acknowledged writes for the check to mean anything";
  EXPECT_GE(counts.kills, 1u) << "no node was killed";
  EXPECT_GE(counts.stops, 1u) << "no node was stopped";
  EXPECT_EQ(counts.restarts, counts.kills) << "a killed node was not restarted";
  EXPECT_TRUE(run_.undocumented_errors.empty())
      << "a write failed with a code include/shoal/shoal.h does not document for it";
}

}  // namespace
}  // namespace shoal::cluster_test
