// Rebalance benchmarks (docs/results/rebalance.md).
//
// One run on an embedded cluster (ThreadRuntime, 3 storage nodes, sync=false):
//   1. load --mb MiB of --doc-bytes JSON documents through the client (--clients threads,
//      one Upsert per document), then wait until the coordinator reports the cluster balanced
//      and still balanced, with the same buckets, the nodes' load_stats_max_age + 1 s later;
//   2. once no node's engine has a flush or compaction left from the load (at most --quiesce-s,
//      default 120; 0: no wait), a steady workload (--clients threads, 50% Get, 50% Upsert of
//      loaded keys) runs --warmup-s seconds (default 30, not measured), then --steady-s seconds
//      (default 10): the reference throughput and latency. The first seconds after the load
//      run faster than the workload's steady state (empty memtables, no compaction debt), so a
//      short warm-up inflates the reference (docs/results/rebalance.md);
//   3. node 4 is added; the run waits until the coordinator is balanced again and node 4 serves
//      buckets (the move phase), then runs --steady-s more seconds;
//   4. with --baselines, on the same cluster, with the workload running again:
//      split-move: the buckets node 4 received in 3 are copied document by document through the
//                  client (Query of each bucket's range, one Upsert per document into a second
//                  collection): the data path of a key-by-key split-move (paper 001);
//      rehash:     the documents that hash mod 3 and hash mod 4 place on different nodes (3/4 of
//                  them) are copied document by document into a third collection and deleted
//                  from the first: the data path of a global rehash (modulo placement).
//   --variant=dynamic: --buckets (16) initial buckets, split above --split-mb (default mb/32),
//                      merge below a tenth of that (the coordinator's balancer does both);
//   --variant=static:  --buckets (256) buckets, split and merge off.
//
//   rebalance_bench [--variant=dynamic] [--mb=256] [--doc-bytes=1024] [--clients=4]
//                   [--warmup-s=30] [--steady-s=10] [--buckets=N] [--split-mb=N] [--copy-threads=4]
//                   [--baselines] [--estimated-stats] [--timeout-s=300] [--timeline=FILE]
//                   [--dir=/tmp/...] [--moves-per-node=N] [--moves-in-flight=N]
//                   [--stats-max-age-ms=N] [--exact-every-report] [--no-early-rounds]
//                   [--max-mib-per-s=N] [--background-nice=N] [--quiesce-s=120]
//                   [--control-s=S]
//   --moves-per-node, --moves-in-flight: the coordinator's max_moves_per_node and
//       max_moves_in_flight (default: the coordinator's defaults);
//   --stats-max-age-ms: the nodes' load_stats_max_age; --exact-every-report: 0 (every load
//       report scans every bucket, no size cache); --no-early-rounds: balance_poll 0 (a
//       round only every balance_interval); --max-mib-per-s: the coordinator's move
//       throttle, max_bytes_per_second (default: the coordinator's, kDefaultMoveBytesPerSecond;
//       0: unthrottled); --background-nice: the nodes'
//       background_nice (0 runs the move work at the clients' priority; default: the node's);
//   --control-s: a control run: step 3 adds no node and waits S seconds instead, so the "during"
//       window and its throughput_ratio show the workload's own drift over a join's duration.
//
// Prints one JSON object on stdout (progress on stderr). Times are wall-clock seconds of the
// runtime's steady clock. The process exits 1 if the cluster misbehaves (a failed client
// operation, an aborted move, no balance within --timeout-s).

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/cluster/rebalance_workload.h"
#include "src/client/client.h"
#include "src/common/point.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/storage/point_range.h"
#include "src/transport/point_ranges.h"
#include "src/transport/thread_runtime.h"

namespace shoal::bench {
namespace {

using transport::Address;
using transport::Micros;

constexpr uint32_t kInitialNodes = 3;
constexpr NodeId kNewNode(4);
constexpr Micros kPollInterval = 20'000;
constexpr double kMiB = 1024.0 * 1024.0;

struct Options {
  std::string variant = "dynamic";
  uint64_t mb = 256;
  size_t doc_bytes = 1024;
  uint32_t clients = 4;
  double warmup_seconds = 30;
  double steady_seconds = 10;
  // Before the steady window, wait (at most this long) until no node's engine has a flush or
  // compaction left over from the load, so the reference is the cluster's steady state rather
  // than the tail of the load. 0: do not wait.
  double quiesce_seconds = 120;
  uint32_t buckets = 0;   // 0: 16 (dynamic) or 256 (static)
  uint64_t split_mb = 0;  // 0: mb / 32 (dynamic)
  uint32_t copy_threads = 4;
  uint32_t moves_per_node = 0;    // 0: the coordinator's default
  uint32_t moves_in_flight = 0;   // 0: the coordinator's default
  uint64_t stats_max_age_ms = 0;  // 0: the node's default; see --exact-every-report
  double max_mib_per_s = -1;      // < 0: the coordinator's default; 0: unthrottled
  int background_nice = -1;       // -1: the node's default
  bool exact_every_report = false;
  bool no_early_rounds = false;
  bool baselines = false;
  bool estimated_stats = false;
  double timeout_seconds = 300;
  // > 0: add no node; the join's window is this long (a control run, see Run()).
  double control_seconds = 0;
  std::string timeline;
  std::string dir = "/tmp/shoal-rebalance-bench";
};

// Exact key + value bytes and documents of the buckets each node serves, from the stores.
struct NodeData {
  uint64_t bytes = 0;
  uint64_t documents = 0;
  uint64_t buckets = 0;
};

std::map<NodeId, NodeData> DataByNode(const server::EmbeddedCluster& cluster,
                                      const cluster::ShardMap& map) {
  std::map<NodeId, NodeData> out;
  for (const auto& bucket : map.buckets()) {
    const NodeId owner = client::OwnerOf(bucket);
    auto node = cluster.node(owner);
    if (node == nullptr) Die("sizing", NotFoundError(owner.DebugString()));
    auto stats = node->store()->ComputeStats(transport::ToPointRange(bucket.range));
    if (!stats.ok()) Die("sizing", stats.status());
    NodeData& data = out[owner];
    data.bytes += stats->live_bytes + stats->tombstone_bytes;
    data.documents += stats->documents;
    ++data.buckets;
  }
  return out;
}

// A Query cursor that starts at `point`. The client's cursor is [1][point, 8 bytes big
// endian][node scan cursor]; the API has no range query, so the benchmark builds one.
std::string CursorAt(uint64_t point) {
  char encoded[8];
  EncodeBigEndian64(point, encoded);
  return std::string(1, '\x01') + std::string(encoded, 8);
}

struct CopyResult {
  uint64_t scanned = 0;
  uint64_t copied = 0;
  uint64_t bytes = 0;  // key + value bytes copied
};

// Copies the documents of `from` in `range` whose point passes `select` into `to`, one Upsert
// per document; deletes each copied one from `from` if `delete_source`.
CopyResult CopyRange(client::Client& client, CollectionId from, CollectionId to,
                     const cluster::BucketRange& range, const std::function<bool(uint64_t)>& select,
                     bool delete_source, Errors& errors) {
  CopyResult result;
  client::QueryOptions query{
      .collection = from, .filter = {}, .limit = 1000, .cursor = CursorAt(range.begin())};
  for (;;) {
    auto page = client.Query(query);
    if (!page.ok()) {
      errors.Record("query", page.status());
      return result;
    }
    for (const auto& document : page->documents) {
      const uint64_t point = PointOf(from, document.primary_key).value();
      if (!range.Contains(Point(point))) return result;
      ++result.scanned;
      if (!select(point)) continue;
      auto written = client.Upsert(to, document.primary_key, document.body);
      if (!written.ok()) {
        errors.Record("copy upsert", written.status());
        continue;
      }
      ++result.copied;
      result.bytes += document.primary_key.size() + document.body.size();
      if (delete_source) {
        auto deleted = client.Delete(from, document.primary_key);
        if (!deleted.ok()) errors.Record("copy delete", deleted.status());
      }
    }
    if (page->next_cursor.empty()) return result;
    query.cursor = std::move(page->next_cursor);
  }
}

class Bench {
 public:
  explicit Bench(const Options& options) : options_(options) {}

  int Run();

 private:
  [[nodiscard]] server::EmbeddedClusterOptions ClusterOptions() const;
  void Load(CollectionId collection, uint64_t keys);
  [[nodiscard]] bool WaitBalanced(const std::function<bool()>& extra, double timeout_seconds);
  // Waits at most --quiesce-s until no engine of `nodes` has a flush or compaction pending.
  [[nodiscard]] bool WaitEnginesIdle(const std::map<NodeId, NodeData>& nodes);
  // Fresh WAL seeks of catch-up reads on every node so far (BucketStore::wal_seeks).
  [[nodiscard]] uint64_t WalSeeks() const;
  // Copies `ranges` (spread over the copy threads) while the workload runs; returns the result.
  nlohmann::json CopyPhase(std::string_view name, CollectionId from, CollectionId to,
                           const std::vector<cluster::BucketRange>& ranges,
                           const std::function<bool(uint64_t)>& select, bool delete_source,
                           Workload& workload);
  void Progress(std::string_view line) const {
    fmt::print(stderr, "[{:7.1f}s] {}\n", static_cast<double>(runtime_.Now() - started_) / 1e6,
               line);
  }

  const Options& options_;
  transport::ThreadRuntime runtime_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  Errors errors_;
  Micros started_ = 0;
};

server::EmbeddedClusterOptions Bench::ClusterOptions() const {
  server::EmbeddedClusterOptions cluster;
  cluster.data_dir = options_.dir;
  cluster.initial_nodes = kInitialNodes;
  cluster.sync = false;
  const bool dynamic = options_.variant == "dynamic";
  cluster.buckets = options_.buckets != 0 ? options_.buckets : (dynamic ? 16 : 256);
  cluster.coordinator.balance_interval = 200'000;
  if (dynamic) {
    const uint64_t split_mb =
        options_.split_mb != 0 ? options_.split_mb : std::max<uint64_t>(1, options_.mb / 32);
    cluster.coordinator.split_bytes = split_mb << 20;
    cluster.coordinator.merge_bytes = cluster.coordinator.split_bytes / 10;
  }
  cluster.node.exact_load_stats = !options_.estimated_stats;
  if (options_.moves_per_node != 0) {
    cluster.coordinator.max_moves_per_node = options_.moves_per_node;
  }
  if (options_.moves_in_flight != 0) {
    cluster.coordinator.max_moves_in_flight = options_.moves_in_flight;
  }
  if (options_.stats_max_age_ms != 0) {
    cluster.node.load_stats_max_age = static_cast<Micros>(options_.stats_max_age_ms) * 1000;
  }
  if (options_.exact_every_report) cluster.node.load_stats_max_age = 0;
  if (options_.background_nice >= 0) cluster.node.background_nice = options_.background_nice;
  if (options_.max_mib_per_s >= 0) {
    cluster.coordinator.max_bytes_per_second =
        static_cast<uint64_t>(options_.max_mib_per_s * static_cast<double>(1 << 20));
  }
  if (options_.no_early_rounds) cluster.coordinator.balance_poll = 0;
  return cluster;
}

void Bench::Load(CollectionId collection, uint64_t keys) {
  RunThreads(runtime_, options_.clients, 1, [&](uint32_t index) {
    auto client = NewClient(runtime_);
    Random random(1000 + index);
    for (uint64_t key = index; key < keys; key += options_.clients) {
      auto written = client->Upsert(collection, Key(key), Body(key, 0, options_.doc_bytes, random));
      if (!written.ok()) errors_.Record("load upsert", written.status());
    }
  });
}

uint64_t Bench::WalSeeks() const {
  uint64_t total = 0;
  for (uint64_t id = 1; id <= kInitialNodes + 1; ++id) {
    auto node = cluster_->node(NodeId(id));
    if (node != nullptr) total += node->store()->wal_seeks();
  }
  return total;
}

bool Bench::WaitEnginesIdle(const std::map<NodeId, NodeData>& nodes) {
  const Micros deadline = runtime_.Now() + static_cast<Micros>(options_.quiesce_seconds * 1e6);
  while (true) {
    const bool busy = std::any_of(nodes.begin(), nodes.end(), [&](const auto& entry) {
      auto node = cluster_->node(entry.first);
      return node != nullptr && node->store()->BackgroundWorkPending();
    });
    if (!busy) return true;
    if (runtime_.Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool Bench::WaitBalanced(const std::function<bool()>& extra, double timeout_seconds) {
  auto coordinator = cluster_->coordinator();
  const Micros deadline = runtime_.Now() + static_cast<Micros>(timeout_seconds * 1e6);
  while (runtime_.Now() < deadline) {
    auto balanced = coordinator->Balanced();
    if (balanced.ok() && *balanced && extra()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(kPollInterval));
  }
  return false;
}

nlohmann::json Bench::CopyPhase(std::string_view name, CollectionId from, CollectionId to,
                                const std::vector<cluster::BucketRange>& ranges,
                                const std::function<bool(uint64_t)>& select, bool delete_source,
                                Workload& workload) {
  const uint64_t errors_before = errors_.count();
  workload.Start();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the workload warms up
  const Micros start = runtime_.Now();
  std::vector<CopyResult> results(options_.copy_threads);
  RunThreads(runtime_, options_.copy_threads, 100, [&](uint32_t index) {
    auto client = NewClient(runtime_);
    for (size_t i = index; i < ranges.size(); i += options_.copy_threads) {
      const CopyResult r = CopyRange(*client, from, to, ranges[i], select, delete_source, errors_);
      results[index].scanned += r.scanned;
      results[index].copied += r.copied;
      results[index].bytes += r.bytes;
    }
  });
  const Micros end = runtime_.Now();
  workload.Stop();
  CopyResult total;
  for (const CopyResult& r : results) {
    total.scanned += r.scanned;
    total.copied += r.copied;
    total.bytes += r.bytes;
  }
  const double seconds = static_cast<double>(end - start) / 1e6;
  Progress(fmt::format("{}: copied {} of {} documents, {:.1f} MiB in {:.1f} s", name, total.copied,
                       total.scanned, static_cast<double>(total.bytes) / kMiB, seconds));
  return {{"seconds", seconds},
          {"documents_scanned", total.scanned},
          {"documents_copied", total.copied},
          {"bytes_copied", total.bytes},
          {"errors", errors_.count() - errors_before},
          {"workload", ToJson(workload.Between(start, end))}};
}

int Bench::Run() {
  std::error_code ec;
  std::filesystem::remove_all(options_.dir, ec);
  transport::ThreadRuntime::ScopedActor actor(runtime_, Address::Client(kMainActor));
  started_ = runtime_.Now();
  cluster_ = std::make_unique<server::EmbeddedCluster>(runtime_, ClusterOptions());
  if (Status s = cluster_->Start(); !s.ok()) Die("start", s);
  auto coordinator = cluster_->coordinator();
  auto admin = NewClient(runtime_);
  auto opened = admin->OpenCollection("bench");
  if (!opened.ok()) Die("collection", opened.status());
  const CollectionId collection = *opened;
  nlohmann::json out;
  out["variant"] = options_.variant;
  out["config"] = {{"mb", options_.mb},
                   {"doc_bytes", options_.doc_bytes},
                   {"clients", options_.clients},
                   {"initial_buckets", ClusterOptions().buckets},
                   {"split_bytes", ClusterOptions().coordinator.split_bytes},
                   {"merge_bytes", ClusterOptions().coordinator.merge_bytes},
                   {"exact_load_stats", !options_.estimated_stats},
                   {"copy_threads", options_.copy_threads},
                   {"max_moves_per_node", ClusterOptions().coordinator.max_moves_per_node},
                   {"max_moves_in_flight", ClusterOptions().coordinator.max_moves_in_flight},
                   {"balance_poll_us", ClusterOptions().coordinator.balance_poll},
                   {"max_bytes_per_second", ClusterOptions().coordinator.max_bytes_per_second},
                   {"load_stats_max_age_us", ClusterOptions().node.load_stats_max_age},
                   {"background_nice", ClusterOptions().node.background_nice}};

  // 1. Load.
  const uint64_t keys = (options_.mb << 20) / (options_.doc_bytes + Key(0).size());
  Micros t = runtime_.Now();
  Load(collection, keys);
  const double load_seconds = static_cast<double>(runtime_.Now() - t) / 1e6;
  Progress(fmt::format("loaded {} documents in {:.1f} s ({:.0f} docs/s)", keys, load_seconds,
                       static_cast<double>(keys) / load_seconds));
  t = runtime_.Now();
  bool settled = WaitBalanced([] { return true; }, options_.timeout_seconds);
  // The nodes' cached bucket sizes may lag the load by up to load_stats_max_age, so Balanced()
  // can come before the last splits. Settled means: balanced again after that long, with no
  // split, merge or move in between.
  const Micros max_age = std::max<Micros>(ClusterOptions().node.load_stats_max_age, 0);
  for (int check = 0; settled && check < 5; ++check) {
    const size_t buckets = coordinator->map()->buckets().size();
    const uint64_t committed = coordinator->progress().committed;
    std::this_thread::sleep_for(std::chrono::microseconds(max_age + 1'000'000));
    settled = WaitBalanced([] { return true; }, options_.timeout_seconds);
    if (coordinator->map()->buckets().size() == buckets &&
        coordinator->progress().committed == committed) {
      break;
    }
  }
  const double settle_seconds = static_cast<double>(runtime_.Now() - t) / 1e6;
  const auto before = DataByNode(*cluster_, *coordinator->map());
  uint64_t total_bytes = 0;
  uint64_t total_documents = 0;
  for (const auto& [node, data] : before) {
    total_bytes += data.bytes;
    total_documents += data.documents;
  }
  const coordinator::MoveProgress after_load = coordinator->progress();
  Progress(fmt::format("settled={} after {:.1f} s: {} buckets, {:.1f} MiB, {} moves, {} aborted",
                       settled, settle_seconds, coordinator->map()->buckets().size(),
                       static_cast<double>(total_bytes) / kMiB, after_load.committed,
                       after_load.aborted));
  t = runtime_.Now();
  const bool quiesced = WaitEnginesIdle(before);
  const double quiesce_seconds = static_cast<double>(runtime_.Now() - t) / 1e6;
  Progress(fmt::format("quiesced={} after {:.1f} s", quiesced, quiesce_seconds));
  out["load"] = {{"documents", keys},
                 {"seconds", load_seconds},
                 {"settle_seconds", settle_seconds},
                 {"settled", settled},
                 {"quiesce_seconds", quiesce_seconds},
                 {"quiesced", quiesced},
                 {"stored_bytes", total_bytes},
                 {"stored_documents", total_documents},
                 {"buckets", coordinator->map()->buckets().size()},
                 {"moves_committed", after_load.committed},
                 {"moves_aborted", after_load.aborted}};

  // 2. Steady state, 3. node 4 joins, then steady again.
  Workload workload(runtime_, collection, options_.clients, options_.doc_bytes, keys, errors_);
  Sampler sampler(runtime_, workload, coordinator);
  const uint64_t errors_before_join = errors_.count();
  workload.Start();
  sampler.Start();
  // Warm-up, not measured. The engines start it with no flush or compaction pending (step 2);
  // the default 30 s lets the workload's own flushes and compactions set in before the steady
  // window. A 1 s warm-up gives steady windows 20-25% faster than after 30 s
  // (docs/results/rebalance.md).
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.warmup_seconds));
  const Micros steady_start = runtime_.Now();
  Progress("steady window");
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.steady_seconds));
  const coordinator::MoveProgress at_add = coordinator->progress();
  const uint64_t wal_seeks_at_add = WalSeeks();
  const Micros added_at = runtime_.Now();
  bool balanced = true;
  if (options_.control_seconds > 0) {
    // The control: the same windows with no node added, so the "during" window shows how much
    // the workload's own throughput drifts over the time a join takes.
    Progress("control: no node added");
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.control_seconds));
  } else {
    if (Status s = cluster_->AddNode(kNewNode); !s.ok()) Die("AddNode", s);
    Progress("node 4 added");
    balanced = WaitBalanced([&] { return !coordinator->map()->BucketsOf(kNewNode).empty(); },
                            options_.timeout_seconds);
  }
  const Micros balanced_at = runtime_.Now();
  const coordinator::MoveProgress at_balance = coordinator->progress();
  const uint64_t wal_seeks_at_balance = WalSeeks();
  Progress(fmt::format("balanced={} after {:.1f} s: {} moves, {:.1f} MiB", balanced,
                       static_cast<double>(balanced_at - added_at) / 1e6,
                       at_balance.committed - at_add.committed,
                       static_cast<double>(at_balance.bytes_moved - at_add.bytes_moved) / kMiB));
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.steady_seconds));
  const Micros after_end = runtime_.Now();
  sampler.Stop();
  workload.Stop();

  // The join's fence windows (those committed after node 4 was added), in commit order: the
  // totals, and each split by step (coordinator::FenceWindow).
  std::vector<int64_t> fences;
  nlohmann::json fence_phases = nlohmann::json::array();
  for (size_t i = at_add.fence_windows.size(); i < at_balance.fence_windows.size(); ++i) {
    const coordinator::FenceWindow& window = at_balance.fence_windows[i];
    fences.push_back(window.total_micros());
    fence_phases.push_back(
        {{"fence_ms", static_cast<double>(window.fence_call_micros) / 1000.0},
         {"drain_ms", static_cast<double>(window.drain_micros) / 1000.0},
         {"drain_read_ms", static_cast<double>(window.drain_read_micros) / 1000.0},
         {"drain_apply_ms", static_cast<double>(window.drain_apply_micros) / 1000.0},
         {"commit_ms", static_cast<double>(window.commit_micros) / 1000.0}});
  }
  std::vector<int32_t> fence_values(fences.begin(), fences.end());
  std::optional<double> first_serve_ms;
  if (auto it = at_balance.first_commit_to.find(kNewNode); it != at_balance.first_commit_to.end()) {
    first_serve_ms = static_cast<double>(it->second - added_at) / 1000.0;
  }
  const Window steady = workload.Between(steady_start, added_at);
  const Window during = workload.Between(added_at, balanced_at);
  const Window after = workload.Between(balanced_at, after_end);
  const auto final_map = coordinator->map();
  const auto after_data = DataByNode(*cluster_, *final_map);
  std::vector<cluster::BucketRange> received;
  for (BucketId bucket : final_map->BucketsOf(kNewNode)) {
    received.push_back(final_map->Find(bucket)->range);
  }
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [node, data] : after_data) {
    nodes[fmt::format("{}", node.value())] = {
        {"bytes", data.bytes}, {"documents", data.documents}, {"buckets", data.buckets}};
  }
  const uint64_t new_node_bytes =
      after_data.count(kNewNode) != 0 ? after_data.at(kNewNode).bytes : 0;
  out["join"] = {{"control", options_.control_seconds > 0},
                 {"balanced", balanced},
                 {"seconds_to_balanced", static_cast<double>(balanced_at - added_at) / 1e6},
                 {"first_serve_ms", first_serve_ms.has_value() ? nlohmann::json(*first_serve_ms)
                                                               : nlohmann::json(nullptr)},
                 {"moves_committed", at_balance.committed - at_add.committed},
                 {"moves_aborted", at_balance.aborted - at_add.aborted},
                 {"abort_reasons", at_balance.abort_reasons},
                 {"bytes_moved", at_balance.bytes_moved - at_add.bytes_moved},
                 {"new_node_bytes", new_node_bytes},
                 {"optimal_bytes", total_bytes / (kInitialNodes + 1)},
                 {"buckets_after", final_map->buckets().size()},
                 {"new_node_buckets", received.size()},
                 {"fence_count", fences.size()},
                 {"fence_p50_ms", Percentile(fence_values, 0.50) / 1000.0},
                 {"fence_p99_ms", Percentile(fence_values, 0.99) / 1000.0},
                 {"fence_max_ms", fence_values.empty() ? 0.0 : fence_values.back() / 1000.0},
                 {"fence_phases", fence_phases},
                 // Catch-up reads that could not go on from a parked WAL reader and read a
                 // WAL file from its start (BucketStore::wal_seeks).
                 {"wal_seeks", wal_seeks_at_balance - wal_seeks_at_add},
                 {"steady", ToJson(steady)},
                 {"during", ToJson(during)},
                 {"after", ToJson(after)},
                 {"throughput_ratio",
                  steady.ops_per_second > 0 ? during.ops_per_second / steady.ops_per_second : 0.0},
                 {"p99_ratio", steady.p99_ms > 0 ? during.p99_ms / steady.p99_ms : 0.0},
                 {"errors", errors_.count() - errors_before_join},
                 {"nodes", nodes}};

  // The join results at once: the baselines that follow can take long.
  fmt::print(stderr, "join: {}\n", out["join"].dump());
  if (!options_.timeline.empty()) {
    std::FILE* file = std::fopen(options_.timeline.c_str(), "w");
    if (file == nullptr) Die("timeline", IoError(options_.timeline));
    fmt::print(file, "# t_s\tops_per_s\tmoved_mib\tcommitted\tin_flight\n");
    const auto& samples = sampler.samples();
    for (size_t i = 1; i < samples.size(); ++i) {
      const auto& a = samples[i - 1];
      const auto& b = samples[i];
      const double dt = static_cast<double>(b.at - a.at) / 1e6;
      fmt::print(file, "{:.2f}\t{:.0f}\t{:.2f}\t{}\t{}\n",
                 static_cast<double>(b.at - added_at) / 1e6,
                 dt > 0 ? static_cast<double>(b.ops - a.ops) / dt : 0.0,
                 static_cast<double>(b.bytes_moved - at_add.bytes_moved) / kMiB,
                 b.committed - at_add.committed, b.in_flight);
    }
    std::fclose(file);
  }

  // 4. Baselines: the same data moved document by document through the API.
  if (options_.baselines) {
    auto split_copy = admin->OpenCollection("split-move");
    auto rehash_copy = admin->OpenCollection("rehash");
    if (!split_copy.ok()) Die("collection", split_copy.status());
    if (!rehash_copy.ok()) Die("collection", rehash_copy.status());
    out["split_move"] = CopyPhase(
        "split-move", collection, *split_copy, received, [](uint64_t) { return true; },
        /*delete_source=*/false, workload);
    // The hash space in copy_threads equal parts.
    std::vector<cluster::BucketRange> parts;
    const uint64_t step = UINT64_MAX / options_.copy_threads + 1;
    for (uint32_t i = 0; i < options_.copy_threads; ++i) {
      const uint64_t begin = step * i;
      parts.push_back(i + 1 == options_.copy_threads
                          ? cluster::BucketRange::ToMax(begin)
                          : *cluster::BucketRange::Make(begin, begin + step));
    }
    out["rehash"] = CopyPhase(
        "rehash", collection, *rehash_copy, parts,
        [](uint64_t point) { return point % kInitialNodes != point % (kInitialNodes + 1); },
        /*delete_source=*/true, workload);
  }

  out["errors"] = errors_.count();
  out["error_samples"] = errors_.samples();
  out["elapsed_seconds"] = static_cast<double>(runtime_.Now() - started_) / 1e6;
  if (Status s = cluster_->StopAll(); !s.ok()) Die("stop", s);
  fmt::print("{}\n", out.dump(2));
  for (const auto& sample : errors_.samples()) fmt::print(stderr, "  {}\n", sample);
  const bool ok = settled && balanced && errors_.count() == 0 && at_balance.aborted == 0;
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (arg.substr(0, flag.size()) != flag) return std::nullopt;
      return std::string(arg.substr(flag.size()));
    };
    if (auto v = value("--variant=")) {
      options.variant = *v;
    } else if (auto v = value("--mb=")) {
      options.mb = std::stoull(*v);
    } else if (auto v = value("--doc-bytes=")) {
      options.doc_bytes = std::stoull(*v);
    } else if (auto v = value("--clients=")) {
      options.clients = static_cast<uint32_t>(std::stoul(*v));
    } else if (auto v = value("--warmup-s=")) {
      options.warmup_seconds = std::stod(*v);
    } else if (auto v = value("--steady-s=")) {
      options.steady_seconds = std::stod(*v);
    } else if (auto v = value("--buckets=")) {
      options.buckets = static_cast<uint32_t>(std::stoul(*v));
    } else if (auto v = value("--split-mb=")) {
      options.split_mb = std::stoull(*v);
    } else if (auto v = value("--copy-threads=")) {
      options.copy_threads = static_cast<uint32_t>(std::stoul(*v));
    } else if (auto v = value("--timeout-s=")) {
      options.timeout_seconds = std::stod(*v);
    } else if (auto v = value("--timeline=")) {
      options.timeline = *v;
    } else if (auto v = value("--dir=")) {
      options.dir = *v;
    } else if (auto v = value("--moves-per-node=")) {
      options.moves_per_node = static_cast<uint32_t>(std::stoul(*v));
    } else if (auto v = value("--moves-in-flight=")) {
      options.moves_in_flight = static_cast<uint32_t>(std::stoul(*v));
    } else if (auto v = value("--stats-max-age-ms=")) {
      options.stats_max_age_ms = std::stoull(*v);
    } else if (auto v = value("--quiesce-s=")) {
      options.quiesce_seconds = std::stod(*v);
    } else if (auto v = value("--max-mib-per-s=")) {
      options.max_mib_per_s = std::stod(*v);
    } else if (auto v = value("--background-nice=")) {
      options.background_nice = std::stoi(*v);
    } else if (auto v = value("--control-s=")) {
      options.control_seconds = std::stod(*v);
    } else if (arg == "--exact-every-report") {
      options.exact_every_report = true;
    } else if (arg == "--no-early-rounds") {
      options.no_early_rounds = true;
    } else if (arg == "--baselines") {
      options.baselines = true;
    } else if (arg == "--estimated-stats") {
      options.estimated_stats = true;
    } else {
      fmt::print(stderr, "unknown argument: {}\n", arg);
      return 2;
    }
  }
  if ((options.variant != "dynamic" && options.variant != "static") || options.clients == 0 ||
      options.copy_threads == 0 || options.mb == 0) {
    fmt::print(stderr, "bad arguments\n");
    return 2;
  }
  int rc = 0;
  {
    shoal::bench::Bench bench(options);
    rc = bench.Run();
  }
  std::error_code ec;
  std::filesystem::remove_all(options.dir, ec);
  return rc;
}
