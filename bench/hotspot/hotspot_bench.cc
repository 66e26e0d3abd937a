// Sharded fields under write contention (paper 003 §5; docs/results/hotspot.md), on an embedded
// cluster (Database::OpenEmbedded, sync off unless --sync).
//
// figure6     Paper 003 Figure 6: --clients threads (default 32) vote as fast as they can
//             (closed loop) on --questions questions (16), a random question per vote, for
//             --seconds (10) per configuration:
//               naive   w/o retry  Get, CompareAndSet {"votes": N+1}; a mismatch fails the vote
//               sharded w/o retry  Apply(q, "votes", "1") on a field of --shards (10) static
//                                  shards with retry_on_conflict = false; kAborted fails it
//               naive   w/ retry   the CompareAndSet loop until it lands
//               sharded w/ retry   Apply with retries (the default)
//             Reported per configuration: votes attempted, failed (%), votes/s, and the mean,
//             p50 and p99 time of one vote (retries included; failed votes too).
// throughput  One hot counter with S static shards (--shard-counts, 1..64): --clients threads
//             (default 16) Apply "1" to one document, against S plain documents each updated
//             with a Get + CompareAndSet loop by the same threads (a random one per update).
//             Each point is the median of --runs (3) runs of --seconds (2) each, baseline and hot
//             runs interleaved, each side in a cluster of its own (--shared-cluster: one cluster
//             for both); reported on each of --node-counts (1,3) nodes with the ratio
//             hot / independent and where the hot document's shards live (Sharding()).
//
// After every configuration the stored totals are read back and compared with the successful
// votes counted by the clients ("totals ok"); a mismatch or an unexpected error exits 1.
// Human tables go to stdout; --out DIR also receives figure6.{json,tsv}, throughput.{json,tsv}.
//
//   hotspot_bench [--experiment figure6|throughput|both] [--clients N] [--seconds S]
//                 [--questions 16] [--shards 10] [--nodes 3] [--shard-counts 1,2,4,8,16,32,64]
//                 [--node-counts 1,3] [--runs 3] [--sync] [--shared-cluster] [--out DIR]
//                 [--seed N]

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench/hotspot/closed_loop.h"
#include "include/shoal/shoal.h"
#include "src/common/random.h"
#include "src/common/status.h"

namespace shoal::bench {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kField = "votes";
constexpr uint32_t kBuckets = 32;

// The flags. Value type.
struct Flags {
  std::string experiment = "both";
  uint32_t clients = 0;  // 0: the experiment's default
  double seconds = 0;    // 0: the experiment's default
  uint32_t questions = 16;
  uint32_t shards = 10;
  uint32_t nodes = 3;
  std::vector<uint32_t> shard_counts = {1, 2, 4, 8, 16, 32, 64};
  std::vector<uint32_t> node_counts = {1, 3};
  uint32_t runs = 3;
  bool sync = false;
  bool shared_cluster = false;  // throughput: hot and independent in one cluster
  bool combine = false;         // ApplyOptions::combine of every sharded update
  std::string out;
  uint64_t seed = 1;
};

[[nodiscard]] VoteResult ErrorResult(Status status) {
  return VoteResult{.outcome = Outcome::kError, .conflicts = 0, .error = std::move(status)};
}

// The integer `votes` member of a document body.
[[nodiscard]] StatusOr<int64_t> VotesOf(std::string_view body) {
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return InternalError(fmt::format("not a JSON object: {}", body));
  const auto it = json.find(kField);
  if (it == json.end() || !it->is_number_integer()) {
    return InternalError(fmt::format("no integer \"{}\" in {}", kField, body));
  }
  return it->get<int64_t>();
}

// The naive vote: read the document, write votes + 1 over the version read. A version mismatch
// fails the vote, or (retry) starts again from the read.
[[nodiscard]] VoteResult NaiveVote(Collection& collection, const std::string& key, bool retry) {
  uint32_t conflicts = 0;
  for (;;) {
    auto document = collection.Get(key);
    if (!document.ok()) return ErrorResult(document.status());
    auto votes = VotesOf(document->json);
    if (!votes.ok()) return ErrorResult(votes.status());
    auto written = collection.CompareAndSet(key, document->version,
                                            fmt::format(R"({{"votes": {}}})", *votes + 1));
    if (written.ok()) {
      return VoteResult{.outcome = Outcome::kSucceeded, .conflicts = conflicts, .error = {}};
    }
    if (written.status().code() != StatusCode::kFailedPrecondition) {
      return ErrorResult(written.status());
    }
    if (!retry) return VoteResult{.outcome = Outcome::kFailed, .conflicts = 0, .error = {}};
    ++conflicts;
  }
}

// The sharded vote: fold 1 into one shard of the field; kAborted is a lost conflict.
[[nodiscard]] VoteResult ShardedVote(Collection& collection, const std::string& key, bool retry,
                                     bool combine) {
  auto applied = collection.Apply(key, kField, "1",
                                  ApplyOptions{.retry_on_conflict = retry, .combine = combine});
  if (applied.ok()) {
    return VoteResult{.outcome = Outcome::kSucceeded, .conflicts = applied->conflicts, .error = {}};
  }
  if (applied.status().code() == StatusCode::kAborted) {
    return VoteResult{.outcome = Outcome::kFailed, .conflicts = 0, .error = {}};
  }
  return ErrorResult(applied.status());
}

// Successful votes per key, counted by the clients. Thread-safe.
class VoteCounts {
 public:
  explicit VoteCounts(size_t keys) : counts_(keys) {}
  void Add(size_t key) { counts_[key].fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t Of(size_t key) const { return counts_[key].load(); }

 private:
  std::vector<std::atomic<uint64_t>> counts_;
};

// Reads every key's stored votes and compares them with the counted successful votes.
[[nodiscard]] Status VerifyTotals(Collection& collection, const std::vector<std::string>& keys,
                                  const VoteCounts& counts) {
  for (size_t i = 0; i < keys.size(); ++i) {
    SHOAL_ASSIGN_OR_RETURN(Document document, collection.Get(keys[i]));
    SHOAL_ASSIGN_OR_RETURN(int64_t stored, VotesOf(document.json));
    if (stored != static_cast<int64_t>(counts.Of(i))) {
      return InternalError(fmt::format("{}: stored votes {} but {} successful votes", keys[i],
                                       stored, counts.Of(i)));
    }
  }
  return OkStatus();
}

[[nodiscard]] Json ShardingJson(const ShardingInfo& info) {
  return Json{{"kind", info.kind},
              {"active_cells", info.active_cells},
              {"distinct_buckets", info.distinct_buckets},
              {"distinct_nodes", info.distinct_nodes}};
}

[[nodiscard]] Json StatsJson(const RunStats& s) {
  return Json{{"attempted", s.attempted},
              {"succeeded", s.succeeded},
              {"failed", s.failed},
              {"failed_pct", FailedPercent(s)},
              {"conflicts", s.conflicts},
              {"seconds", s.seconds},
              {"votes_per_s", PerSecond(s)},
              {"mean_ms", MeanMs(s)},
              {"p50_ms", PercentileMs(s, 0.5)},
              {"p99_ms", PercentileMs(s, 0.99)},
              {"cpu_s", s.cpu_seconds},
              {"voluntary_switches", s.voluntary_switches},
              {"involuntary_switches", s.involuntary_switches}};
}

[[nodiscard]] Status WriteFile(const std::string& dir, const std::string& name,
                               const std::string& text) {
  if (dir.empty()) return OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(std::filesystem::path(dir) / name);
  out << text;
  out.close();
  if (!out) return InternalError(fmt::format("cannot write {}/{}", dir, name));
  return OkStatus();
}

// A fresh embedded cluster in its own temporary directory, removed on destruction.
// Not thread-safe to create or destroy; the database itself is thread-safe.
class TempCluster {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<TempCluster>> Open(uint32_t nodes, bool sync) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "shoal-hotspot-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return InternalError("mkdtemp failed");
    auto cluster = std::unique_ptr<TempCluster>(new TempCluster(pattern));
    SHOAL_ASSIGN_OR_RETURN(
        cluster->db_,
        Database::OpenEmbedded(
            {.data_dir = pattern + "/data", .nodes = nodes, .buckets = kBuckets, .sync = sync}));
    return cluster;
  }
  ~TempCluster() {
    if (db_ != nullptr) (void)db_->Close();
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempCluster(const TempCluster&) = delete;
  TempCluster& operator=(const TempCluster&) = delete;

  [[nodiscard]] Database& db() { return *db_; }

 private:
  explicit TempCluster(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::unique_ptr<Database> db_;
};

// ---- figure 6 ----

// One configuration of Figure 6. Value type.
struct Figure6Config {
  std::string name;
  bool sharded = false;
  bool retry = false;
};

[[nodiscard]] Status RunFigure6(const Flags& flags) {
  const uint32_t clients = flags.clients > 0 ? flags.clients : 32;
  const double seconds = flags.seconds > 0 ? flags.seconds : 10;
  SHOAL_ASSIGN_OR_RETURN(auto cluster, TempCluster::Open(flags.nodes, flags.sync));
  const std::vector<Figure6Config> configs = {
      {.name = "naive w/o retry", .sharded = false, .retry = false},
      {.name = "sharded w/o retry", .sharded = true, .retry = false},
      {.name = "naive w/ retry", .sharded = false, .retry = true},
      {.name = "sharded w/ retry", .sharded = true, .retry = true},
  };
  fmt::print(
      "figure6: {} clients, {} questions, {} shards, {} s per configuration, {} nodes, "
      "sync {}\n",
      clients, flags.questions, flags.shards, seconds, flags.nodes, flags.sync);
  fmt::print("{:<18} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}\n", "config",
             "attempted", "failed", "failed%", "votes/s", "mean_ms", "p50_ms", "p99_ms",
             "conflicts", "buckets");
  Json results = Json::array();
  std::string tsv = "config\tattempted\tfailed\tfailed_pct\tvotes_per_s\tmean_ms\tp50_ms\tp99_ms\n";
  uint64_t seed = flags.seed;
  for (const Figure6Config& config : configs) {
    const std::string collection_name =
        fmt::format("{}_{}", config.sharded ? "sharded" : "naive", config.retry ? "retry" : "once");
    SHOAL_ASSIGN_OR_RETURN(Collection collection, cluster->db().GetCollection(collection_name));
    if (config.sharded) {
      SHOAL_RETURN_IF_ERROR(collection.Declare(fmt::format(
          R"({{"{}": {{"fold": "sum", "neutral": 0, "shards": {}}}}})", kField, flags.shards)));
    }
    std::vector<std::string> keys;
    for (uint32_t q = 0; q < flags.questions; ++q) {
      keys.push_back(fmt::format("question-{:02d}", q));
      SHOAL_RETURN_IF_ERROR(
          collection
              .Insert(keys.back(), config.sharded
                                       ? fmt::format(R"({{"question": {}}})", q)
                                       : fmt::format(R"({{"question": {}, "votes": 0}})", q))
              .status());
    }
    VoteCounts counts(keys.size());
    auto vote_on = [&](size_t q) {
      return config.sharded ? ShardedVote(collection, keys[q], config.retry, flags.combine)
                            : NaiveVote(collection, keys[q], config.retry);
    };
    // One unmeasured vote per question first (it creates the shards of a sharded field).
    for (size_t q = 0; q < keys.size(); ++q) {
      VoteResult warm = vote_on(q);
      if (warm.outcome == Outcome::kError) return Prefixed(warm.error, "warm-up vote");
      if (warm.outcome == Outcome::kSucceeded) counts.Add(q);
    }
    const RunStats stats = RunClosedLoop(clients, seconds, ++seed, [&](Random& random) {
      const size_t q = random.Uniform(keys.size());
      VoteResult result = vote_on(q);
      if (result.outcome == Outcome::kSucceeded) counts.Add(q);
      return result;
    });
    if (stats.errors > 0) {
      return Prefixed(stats.first_error,
                      fmt::format("{}: {} votes failed with errors", config.name, stats.errors));
    }
    Json sharding = nullptr;
    std::string buckets = "-";
    if (config.sharded) {
      SHOAL_ASSIGN_OR_RETURN(ShardingInfo info, collection.Sharding(keys[0], kField));
      sharding = ShardingJson(info);
      buckets = fmt::format("{}", info.distinct_buckets);
    }
    fmt::print("{:<18} {:>9} {:>8} {:>8.2f} {:>9.0f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10} {:>8}\n",
               config.name, stats.attempted, stats.failed, FailedPercent(stats), PerSecond(stats),
               MeanMs(stats), PercentileMs(stats, 0.5), PercentileMs(stats, 0.99), stats.conflicts,
               buckets);
    const Status totals = VerifyTotals(collection, keys, counts);
    if (!totals.ok()) return Prefixed(totals, fmt::format("{}: totals wrong", config.name));
    fmt::print("  {}: totals ok\n", config.name);
    Json entry = StatsJson(stats);
    entry["config"] = config.name;
    entry["sharded"] = config.sharded;
    entry["retry"] = config.retry;
    entry["sharding"] = sharding;
    entry["totals_ok"] = true;
    results.push_back(entry);
    tsv += fmt::format("\"{}\"\t{}\t{}\t{:.3f}\t{:.1f}\t{:.4f}\t{:.4f}\t{:.4f}\n", config.name,
                       stats.attempted, stats.failed, FailedPercent(stats), PerSecond(stats),
                       MeanMs(stats), PercentileMs(stats, 0.5), PercentileMs(stats, 0.99));
  }
  const Json report = {{"experiment", "figure6"},  {"clients", clients},
                       {"seconds", seconds},       {"questions", flags.questions},
                       {"shards", flags.shards},   {"nodes", flags.nodes},
                       {"buckets", kBuckets},      {"sync", flags.sync},
                       {"combine", flags.combine}, {"configs", results}};
  SHOAL_RETURN_IF_ERROR(WriteFile(flags.out, "figure6.json", report.dump(2) + "\n"));
  return WriteFile(flags.out, "figure6.tsv", tsv);
}

// ---- throughput of one hot counter ----

[[nodiscard]] Status RunThroughput(const Flags& flags) {
  const uint32_t clients = flags.clients > 0 ? flags.clients : 16;
  const double seconds = flags.seconds > 0 ? flags.seconds : 2;
  fmt::print(
      "throughput: {} clients, {} runs of {} s per point (median), sync {}, shared cluster {}\n",
      clients, flags.runs, seconds, flags.sync, flags.shared_cluster);
  // ratio: of the medians; paired: the median of the ratios of runs that ran back to back.
  fmt::print("{:>5} {:>6} {:>12} {:>12} {:>6} {:>6} {:>8} {:>9} {:>10} {:>8}\n", "nodes", "shards",
             "hot_upd/s", "indep_upd/s", "ratio", "paired", "buckets", "nodes_of", "hot_confl",
             "hot_fail");
  Json points = Json::array();
  std::string tsv =
      "# nodes\tshards\thot_per_s\tindependent_per_s\tratio\tdistinct_buckets\tdistinct_nodes"
      "\tpaired_ratio\n";
  uint64_t seed = flags.seed + 1000;
  for (uint32_t nodes : flags.node_counts) {
    SHOAL_ASSIGN_OR_RETURN(auto cluster, TempCluster::Open(nodes, flags.sync));
    // The baseline's documents get a cluster of their own, so that they share no storage engine
    // (memtable, WAL) with the hot counter's cells: in one cluster the cells' versions make the
    // baseline's memtable accesses dearer (docs/results/hotspot.md, S = 1).
    std::unique_ptr<TempCluster> own_plain_cluster;
    if (!flags.shared_cluster) {
      SHOAL_ASSIGN_OR_RETURN(own_plain_cluster, TempCluster::Open(nodes, flags.sync));
    }
    TempCluster& plain_cluster = own_plain_cluster != nullptr ? *own_plain_cluster : *cluster;
    for (uint32_t shards : flags.shard_counts) {
      // The hot document: one field of `shards` static shards.
      SHOAL_ASSIGN_OR_RETURN(Collection hot,
                             cluster->db().GetCollection(fmt::format("hot_{}", shards)));
      SHOAL_RETURN_IF_ERROR(hot.Declare(fmt::format(
          R"({{"{}": {{"fold": "sum", "neutral": 0, "shards": {}}}}})", kField, shards)));
      const std::vector<std::string> hot_keys = {"hot"};
      SHOAL_RETURN_IF_ERROR(hot.Insert(hot_keys[0], R"({"name": "hot"})").status());
      VoteCounts hot_counts(1);
      VoteResult warm = ShardedVote(hot, hot_keys[0], /*retry=*/true, flags.combine);
      if (warm.outcome != Outcome::kSucceeded) {
        return warm.outcome == Outcome::kError ? Prefixed(warm.error, "warm-up update")
                                               : AbortedError("warm-up update: too many conflicts");
      }
      hot_counts.Add(0);
      SHOAL_ASSIGN_OR_RETURN(ShardingInfo info, hot.Sharding(hot_keys[0], kField));
      // The baseline: `shards` independent plain documents.
      SHOAL_ASSIGN_OR_RETURN(Collection plain, plain_cluster.db().GetCollection(
                                                   fmt::format("independent_{}", shards)));
      std::vector<std::string> plain_keys;
      for (uint32_t k = 0; k < shards; ++k) {
        plain_keys.push_back(fmt::format("key-{:02d}", k));
        SHOAL_RETURN_IF_ERROR(plain.Insert(plain_keys.back(), R"({"votes": 0})").status());
      }
      VoteCounts plain_counts(plain_keys.size());

      auto run_hot = [&] {
        return RunClosedLoop(clients, seconds, ++seed, [&](Random&) {
          VoteResult result = ShardedVote(hot, hot_keys[0], /*retry=*/true, flags.combine);
          if (result.outcome == Outcome::kSucceeded) hot_counts.Add(0);
          return result;
        });
      };
      auto run_plain = [&] {
        return RunClosedLoop(clients, seconds, ++seed, [&](Random& random) {
          const size_t k = random.Uniform(plain_keys.size());
          VoteResult result = NaiveVote(plain, plain_keys[k], /*retry=*/true);
          if (result.outcome == Outcome::kSucceeded) plain_counts.Add(k);
          return result;
        });
      };
      std::vector<double> hot_rates, plain_rates, pair_ratios;
      Json runs = Json::array();
      uint64_t hot_conflicts = 0, hot_succeeded = 0, hot_failed = 0;
      for (uint32_t r = 0; r < flags.runs; ++r) {
        // Alternate which side goes first so that drift of the machine load hits both alike.
        RunStats hot_stats, plain_stats;
        if (r % 2 == 0) {
          plain_stats = run_plain();
          hot_stats = run_hot();
        } else {
          hot_stats = run_hot();
          plain_stats = run_plain();
        }
        for (const RunStats* s : {&hot_stats, &plain_stats}) {
          if (s->errors > 0) {
            return Prefixed(s->first_error,
                            fmt::format("{} nodes, {} shards: {} updates failed with errors", nodes,
                                        shards, s->errors));
          }
        }
        hot_rates.push_back(PerSecond(hot_stats));
        plain_rates.push_back(PerSecond(plain_stats));
        if (PerSecond(plain_stats) > 0) {
          pair_ratios.push_back(PerSecond(hot_stats) / PerSecond(plain_stats));
        }
        hot_conflicts += hot_stats.conflicts;
        hot_succeeded += hot_stats.succeeded;
        hot_failed += hot_stats.failed;
        runs.push_back(
            Json{{"hot", StatsJson(hot_stats)}, {"independent", StatsJson(plain_stats)}});
      }
      SHOAL_RETURN_IF_ERROR(Prefixed(VerifyTotals(hot, hot_keys, hot_counts), "hot totals wrong"));
      SHOAL_RETURN_IF_ERROR(
          Prefixed(VerifyTotals(plain, plain_keys, plain_counts), "independent totals wrong"));
      const double hot_median = Median(hot_rates);
      const double plain_median = Median(plain_rates);
      const double ratio = plain_median > 0 ? hot_median / plain_median : 0;
      const double conflicts_per_update = hot_succeeded > 0 ? static_cast<double>(hot_conflicts) /
                                                                  static_cast<double>(hot_succeeded)
                                                            : 0;
      const double paired = Median(pair_ratios);
      fmt::print(
          "{:>5} {:>6} {:>12.0f} {:>12.0f} {:>6.2f} {:>6.2f} {:>8} {:>9} {:>10.2f} {:>8}  totals "
          "ok\n",
          nodes, shards, hot_median, plain_median, ratio, paired, info.distinct_buckets,
          info.distinct_nodes, conflicts_per_update, hot_failed);
      points.push_back(Json{{"nodes", nodes},
                            {"shards", shards},
                            {"hot_per_s", hot_median},
                            {"independent_per_s", plain_median},
                            {"ratio", ratio},
                            {"paired_ratio", paired},
                            {"hot_conflicts_per_update", conflicts_per_update},
                            {"hot_failed", hot_failed},
                            {"sharding", ShardingJson(info)},
                            {"totals_ok", true},
                            {"runs", runs}});
      tsv +=
          fmt::format("{}\t{}\t{:.1f}\t{:.1f}\t{:.4f}\t{}\t{}\t{:.4f}\n", nodes, shards, hot_median,
                      plain_median, ratio, info.distinct_buckets, info.distinct_nodes, paired);
    }
    tsv += "\n\n";  // one gnuplot data block per node count
  }
  const Json report = {{"experiment", "throughput"},
                       {"clients", clients},
                       {"seconds", seconds},
                       {"runs", flags.runs},
                       {"buckets", kBuckets},
                       {"sync", flags.sync},
                       {"combine", flags.combine},
                       {"shared_cluster", flags.shared_cluster},
                       {"points", points}};
  SHOAL_RETURN_IF_ERROR(WriteFile(flags.out, "throughput.json", report.dump(2) + "\n"));
  return WriteFile(flags.out, "throughput.tsv", tsv);
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  using namespace shoal::bench;
  CLI::App app{"paper 003 Figure 6 and the throughput of one hot counter (sharded fields)"};
  Flags flags;
  app.add_option("--experiment", flags.experiment, "figure6, throughput or both")
      ->check(CLI::IsMember({"figure6", "throughput", "both"}));
  app.add_option("--clients", flags.clients,
                 "client threads (default: 32 for figure6, 16 for throughput)");
  app.add_option("--seconds", flags.seconds,
                 "seconds per configuration / per run (default: 10 for figure6, 2 for throughput)");
  app.add_option("--questions", flags.questions, "figure6: questions voted on")
      ->check(CLI::PositiveNumber);
  app.add_option("--shards", flags.shards, "figure6: shards of a sharded question")
      ->check(CLI::Range(1, 64));
  app.add_option("--nodes", flags.nodes, "figure6: storage nodes")->check(CLI::Range(1, 16));
  app.add_option("--shard-counts", flags.shard_counts, "throughput: shards of the hot counter")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_option("--node-counts", flags.node_counts, "throughput: storage nodes")
      ->delimiter(',')
      ->check(CLI::Range(1, 16));
  app.add_option("--runs", flags.runs, "throughput: runs per point (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--combine", flags.combine,
               "concurrent sharded updates share writes (ApplyOptions::combine)");
  app.add_flag("--sync", flags.sync, "fsync every acknowledged write (default: off)");
  app.add_flag("--shared-cluster", flags.shared_cluster,
               "throughput: run both sides in one cluster (default: a cluster per side)");
  app.add_option("--out", flags.out, "directory for figure6.{json,tsv} and throughput.{json,tsv}");
  app.add_option("--seed", flags.seed, "seed of the clients' random choices");
  app.allow_extras();  // `make bench` passes Google Benchmark flags to every program
  CLI11_PARSE(app, argc, argv);

  if (flags.experiment == "figure6" || flags.experiment == "both") {
    const shoal::Status status = RunFigure6(flags);
    if (!status.ok()) {
      std::fprintf(stderr, "figure6 failed: %s\n", status.ToString().c_str());
      return 1;
    }
  }
  if (flags.experiment == "throughput" || flags.experiment == "both") {
    const shoal::Status status = RunThroughput(flags);
    if (!status.ok()) {
      std::fprintf(stderr, "throughput failed: %s\n", status.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
