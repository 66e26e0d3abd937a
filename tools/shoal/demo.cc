#include "tools/shoal/demo.h"

#include <fmt/format.h>
#include <stdlib.h>  // mkdtemp
#include <unistd.h>  // isatty

#include <algorithm>
#include <atomic>
#include <chrono>
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

#include "src/client/client.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/storage/point_range.h"
#include "src/transport/messages.h"
#include "src/transport/thread_runtime.h"
#include "tools/shoal/demo_workload.h"

namespace shoal::tools {
namespace {

using demo::DemoOptions;
using demo::KeyModel;
using demo::kMaxErrorSamples;
using demo::PrimaryKey;
using demo::Verification;
using demo::Workload;

using transport::Address;
using transport::Micros;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMainActor = 100;  // client threads are Address::Client(1..clients)
constexpr uint32_t kMaxClients = 64;
constexpr uint32_t kInitialNodes = 3;
constexpr uint32_t kBuckets = 32;
constexpr NodeId kJoiningNode(4);
constexpr NodeId kLeavingNode(1);
// Killed without a clean removal once n1 has left (K > 1 only), then restarted as `shoal local`
// restarts a dead process.
constexpr NodeId kCrashingNode(2);
constexpr auto kRestartDelay = std::chrono::seconds(1);
constexpr auto kBalanceTimeout = std::chrono::seconds(60);
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr auto kProgressInterval = std::chrono::milliseconds(250);
constexpr int kTicksPerPlan = 4;  // Plan() asks every node for its loads: once a second is enough
constexpr double kMiB = 1024.0 * 1024.0;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Exact stored bytes (key + value, tombstones included: what an export ships, and what
// bytes_moved counts) of the copies each node holds in `map`, every replica counted. Read from the
// stores directly: the BucketLoad figures the balancer plans with are engine estimates that count
// memtable overhead, which would make the optimum look larger than any move could be.
StatusOr<std::map<NodeId, uint64_t>> NodeBytes(const server::EmbeddedCluster& cluster,
                                               const cluster::ShardMap& map) {
  std::map<NodeId, uint64_t> bytes;
  for (const auto& bucket : map.buckets()) {
    const storage::PointRange range =
        bucket.range.end_is_max()
            ? storage::PointRange::From(bucket.range.begin())
            : *storage::PointRange::Make(bucket.range.begin(), bucket.range.end());
    for (const NodeId replica : bucket.replicas) {
      auto node = cluster.node(replica);
      if (node == nullptr)
        return NotFoundError(fmt::format("{} is not running", replica.DebugString()));
      SHOAL_ASSIGN_OR_RETURN(auto stats, node->store()->ComputeStats(range));
      bytes[replica] += stats.live_bytes + stats.tombstone_bytes;
    }
  }
  return bytes;
}

// The live progress line on stderr: overwritten in place on a terminal, one line per update
// otherwise, nothing with --json.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled)
      : enabled_(enabled), tty_(enabled && isatty(fileno(stderr)) != 0) {}

  void Show(const std::string& line) {
    if (!enabled_) return;
    if (tty_) {
      std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
      open_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void Finish() {
    if (open_) std::fprintf(stderr, "\n");
    open_ = false;
  }

 private:
  const bool enabled_;
  const bool tty_;
  bool open_ = false;
};

// Ops per second over one stretch of the run; several stretches add up.
struct Throughput {
  uint64_t ops = 0;
  double seconds = 0;

  void Add(uint64_t ops_delta, double seconds_delta) {
    ops += ops_delta;
    seconds += seconds_delta;
  }
  [[nodiscard]] double PerSecond() const {
    return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
  }
};

// The moves a plan sampled during a change left to do, and the moves committed when it was
// sampled.
struct LeftSample {
  uint64_t left = 0;
  uint64_t committed = 0;
};

class Demo {
 public:
  Demo(const DemoOptions& options, std::string data_dir)
      : options_(options),
        data_dir_(std::move(data_dir)),
        phase_seconds_(options.duration_seconds / (options.replicas > 1 ? 5 : 4)),
        progress_(!options.json) {}

  // Returns the process exit code.
  int Run();

 private:
  [[nodiscard]] server::EmbeddedClusterOptions ClusterOptions() const;
  [[nodiscard]] Status WaitForService(client::Client& client);
  // Runs the workload for the rest of the phase that began at `phase_start`.
  void Steady(Clock::time_point phase_start);
  // Waits until `done` (or the timeout), showing progress; adds the time to ops_during_.
  [[nodiscard]] bool WaitForMoves(std::string_view phase, const std::function<bool()>& done);
  [[nodiscard]] std::string ProgressText(std::string_view phase, Clock::time_point start,
                                         const coordinator::MoveProgress& at_start,
                                         const coordinator::MoveProgress& now, double ops_rate,
                                         const std::optional<LeftSample>& left) const;
  [[nodiscard]] bool Balanced() const;
  // K > 1: kills kCrashingNode without a removal, shows its primaries failing over, restarts it
  // after kRestartDelay and shows its copies coming back until every bucket has K in-sync copies.
  void CrashAndRecover();
  // Buckets with fewer than K stable replicas, or with a move in flight.
  [[nodiscard]] uint64_t Unrepaired() const;
  int Report(const Verification& verification, double load_seconds);

  const DemoOptions options_;
  const std::string data_dir_;
  const double phase_seconds_;
  ProgressLine progress_;
  transport::ThreadRuntime runtime_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::unique_ptr<Workload> workload_;
  Clock::time_point started_;

  // Results gathered along the way.
  Throughput ops_before_;
  Throughput ops_during_;
  Throughput ops_after_;
  uint64_t optimal_bytes_ = 0;
  uint64_t membership_moves_ = 0;  // committed while a join or a leave was in progress
  std::optional<double> first_serve_ms_;
  bool balanced_ = true;
  std::optional<double> join_seconds_;
  std::optional<double> leave_seconds_;
  uint64_t membership_bytes_ = 0;  // bytes moved from the start to the end of the leave phase
  // The failure phase (K > 1).
  bool crashed_ = false;
  uint64_t crashed_primaries_ = 0;      // buckets whose primary the killed node was
  std::optional<double> failover_ms_;   // kill to every bucket it led under a new term
  std::optional<double> recovered_ms_;  // kill to every bucket with K copies again
  uint64_t repair_moves_ = 0;  // committed during the phase: copies rebuilt, primaries handed back
  uint64_t repair_bytes_ = 0;  // snapshot bytes of the phase's committed moves
  uint64_t repair_log_bytes_ = 0;       // bytes their catch-ups applied from the primaries' logs
  uint64_t repair_resumed_ = 0;         // copies resumed from a primary's log, with no snapshot
  uint64_t errors_during_failure_ = 0;  // client-visible errors during the phase
  Status cluster_status_;               // the first failure of an admin step
};

server::EmbeddedClusterOptions Demo::ClusterOptions() const {
  server::EmbeddedClusterOptions cluster;
  cluster.data_dir = data_dir_;
  cluster.initial_nodes = kInitialNodes;
  cluster.buckets = kBuckets;
  cluster.coordinator.balance_interval = 200'000;
  cluster.coordinator.max_moves_in_flight = 2;
  cluster.coordinator.max_moves_per_node = 1;
  cluster.coordinator.auto_balance = true;
  cluster.replication_factor = options_.replicas;
  cluster.coordinator.resume_copies_from_log = options_.log_resume;
  return cluster;
}

Status Demo::WaitForService(client::Client& client) {
  const Clock::time_point deadline = Clock::now() + kStartTimeout;
  for (;;) {
    Status status = client.Refresh();
    if (status.ok()) return status;
    if (Clock::now() >= deadline) return Prefixed(status, "the cluster did not come up");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Demo::Balanced() const {
  auto balanced = cluster_->coordinator()->Balanced();
  return balanced.ok() && *balanced;
}

uint64_t Demo::Unrepaired() const {
  auto map = cluster_->coordinator()->map();
  uint64_t unrepaired = 0;
  for (const auto& bucket : map->buckets()) {
    if (bucket.replicas.size() < map->replication_factor() || bucket.transition.has_value()) {
      ++unrepaired;
    }
  }
  return unrepaired;
}

void Demo::CrashAndRecover() {
  auto coordinator = cluster_->coordinator();
  // The buckets the killed node leads, at their terms. One has failed over once its term moved
  // on (a failover promotes under a new term), or it is gone (split or merged); counting the
  // node's primaries instead would miss the end of the failover whenever a handoff gives the
  // restarted node a primary back before its last old one has failed over.
  std::map<BucketId, Term> led_at_kill;
  for (const auto& bucket : coordinator->map()->buckets()) {
    if (bucket.replicas.front() == kCrashingNode) led_at_kill.emplace(bucket.id, bucket.term);
  }
  const auto not_failed_over = [&] {
    const auto map = coordinator->map();
    uint64_t left = 0;
    for (const auto& [id, term] : led_at_kill) {
      const auto* placement = map->Find(id);
      if (placement != nullptr && placement->term == term) ++left;
    }
    return left;
  };
  const uint64_t errors_at_start = workload_->errors();
  const uint64_t ops_at_start = workload_->ops();
  const coordinator::MoveProgress at_start = coordinator->progress();
  crashed_primaries_ = led_at_kill.size();
  const Clock::time_point killed_at = Clock::now();
  if (Status status = cluster_->CrashNode(kCrashingNode); !status.ok()) {
    cluster_status_ = Prefixed(status, "killing the node");
    return;
  }
  crashed_ = true;
  if (!options_.json) {
    std::printf("n%u killed (no removal): primary of %llu buckets, a copy of %zu\n",
                kCrashingNode.value(), static_cast<unsigned long long>(crashed_primaries_),
                coordinator->map()->BucketsOf(kCrashingNode).size());
    std::fflush(stdout);
  }
  // The failover: the coordinator replaces the dead primary with the most advanced in-sync
  // backup once its read lease has run out (docs/design/replication.md §4.2); the node is
  // restarted meanwhile, as `shoal local` restarts a dead process.
  bool restarted = false;
  uint64_t last_ops = ops_at_start;
  Clock::time_point last_tick = killed_at;
  while (Clock::now() - killed_at < kBalanceTimeout) {
    if (!restarted && Clock::now() - killed_at >= kRestartDelay) {
      if (Status status = cluster_->StartNode(kCrashingNode); !status.ok()) {
        cluster_status_ = Prefixed(status, "restarting the node");
        break;
      }
      restarted = true;
    }
    const uint64_t left = not_failed_over();
    if (!failover_ms_.has_value() && left == 0) {
      failover_ms_ = SecondsSince(killed_at) * 1000.0;
    }
    const uint64_t unrepaired = Unrepaired();
    if (restarted && failover_ms_.has_value() && unrepaired == 0) {
      recovered_ms_ = SecondsSince(killed_at) * 1000.0;
      break;
    }
    std::this_thread::sleep_for(kProgressInterval);
    const uint64_t ops = workload_->ops();
    const double rate = static_cast<double>(ops - last_ops) / SecondsSince(last_tick);
    last_ops = ops;
    last_tick = Clock::now();
    const coordinator::MoveProgress now = coordinator->progress();
    progress_.Show(fmt::format(
        "[failure] {:5.1f}s  n{} {}  |  {} of its {} primaries failed over  |  {} buckets "
        "under {} copies, {} moves ({:.1f} MiB)  |  {:.0f} ops/s",
        SecondsSince(killed_at), kCrashingNode.value(), restarted ? "restarted" : "down",
        crashed_primaries_ - std::min(left, crashed_primaries_), crashed_primaries_, unrepaired,
        options_.replicas, now.committed - at_start.committed,
        static_cast<double>(now.bytes_moved - at_start.bytes_moved) / kMiB, rate));
  }
  const coordinator::MoveProgress now = coordinator->progress();
  repair_moves_ = now.committed - at_start.committed;
  repair_bytes_ = now.bytes_moved - at_start.bytes_moved;
  repair_log_bytes_ = now.bytes_caught_up - at_start.bytes_caught_up;
  repair_resumed_ = now.copies_resumed - at_start.copies_resumed;
  membership_moves_ += repair_moves_;
  errors_during_failure_ = workload_->errors() - errors_at_start;
  ops_during_.Add(workload_->ops() - ops_at_start, SecondsSince(killed_at));
  balanced_ &= recovered_ms_.has_value();
  progress_.Show(fmt::format(
      "[failure] {:5.1f}s  n{} restarted  |  {} primaries failed over after {}  |  {} moves "
      "({:.1f} MiB), {} copies resumed from the log  |  {}",
      SecondsSince(killed_at), kCrashingNode.value(), crashed_primaries_,
      failover_ms_.has_value() ? fmt::format("{:.0f} ms", *failover_ms_) : "-", repair_moves_,
      static_cast<double>(repair_bytes_ + repair_log_bytes_) / kMiB, repair_resumed_,
      recovered_ms_.has_value() ? fmt::format("{} copies of every bucket", options_.replicas)
                                : "TIMED OUT"));
  progress_.Finish();
}

void Demo::Steady(Clock::time_point phase_start) {
  const auto end = phase_start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(phase_seconds_));
  std::this_thread::sleep_until(end);
}

std::string Demo::ProgressText(std::string_view phase, Clock::time_point start,
                               const coordinator::MoveProgress& at_start,
                               const coordinator::MoveProgress& now, double ops_rate,
                               const std::optional<LeftSample>& sample) const {
  const double elapsed = SecondsSince(start);
  const uint64_t committed = now.committed - at_start.committed;
  std::string text = fmt::format(
      "[{}] {:5.1f}s  moved {} buckets, {:.1f} MiB  |  {:.0f} ops/s  |  {} in flight", phase,
      elapsed, committed, static_cast<double>(now.bytes_moved - at_start.bytes_moved) / kMiB,
      ops_rate, now.in_flight);
  // ETA at this phase's commit rate. The plan is sampled once a second: the moves committed
  // since count off what it left.
  if (sample.has_value() && committed > 0) {
    const uint64_t since = now.committed - sample->committed;
    const uint64_t left =
        std::max<uint64_t>(sample->left - std::min(sample->left, since), now.in_flight);
    text += fmt::format("  |  {} left, ETA {:.1f}s", left,
                        static_cast<double>(left) * elapsed / static_cast<double>(committed));
  }
  return text;
}

bool Demo::WaitForMoves(std::string_view phase, const std::function<bool()>& done) {
  auto coordinator = cluster_->coordinator();
  const Clock::time_point start = Clock::now();
  const uint64_t ops_at_start = workload_->ops();
  const coordinator::MoveProgress at_start = coordinator->progress();
  uint64_t last_ops = ops_at_start;
  Clock::time_point last_tick = start;
  std::optional<LeftSample> left;
  bool finished = false;
  for (int tick = 0;; ++tick) {
    if (done()) {
      finished = true;
      break;
    }
    if (Clock::now() - start >= kBalanceTimeout) break;
    std::this_thread::sleep_for(kProgressInterval);
    const uint64_t ops = workload_->ops();
    const double rate = static_cast<double>(ops - last_ops) / SecondsSince(last_tick);
    last_ops = ops;
    last_tick = Clock::now();
    if (!options_.json && tick % kTicksPerPlan == 0) {
      auto plan = coordinator->Plan();
      // The plan treats moves in flight as done: they are left too.
      const coordinator::MoveProgress sampled = coordinator->progress();
      left = plan.ok()
                 ? std::optional<LeftSample>(LeftSample{.left = plan->buckets + sampled.in_flight,
                                                        .committed = sampled.committed})
                 : std::nullopt;
    }
    progress_.Show(ProgressText(phase, start, at_start, coordinator->progress(), rate, left));
  }
  ops_during_.Add(workload_->ops() - ops_at_start, SecondsSince(start));
  membership_moves_ += coordinator->progress().committed - at_start.committed;
  progress_.Show(
      ProgressText(phase, start, at_start, coordinator->progress(),
                   static_cast<double>(workload_->ops() - ops_at_start) / SecondsSince(start),
                   std::nullopt) +
      (finished ? "  |  balanced" : "  |  TIMED OUT"));
  progress_.Finish();
  return finished;
}

int Demo::Run() {
  started_ = Clock::now();
  // The main thread is a client process of its own (admin calls, verification).
  transport::ThreadRuntime::ScopedActor actor(runtime_, Address::Client(kMainActor));
  cluster_ = std::make_unique<server::EmbeddedCluster>(runtime_, ClusterOptions());
  if (Status status = cluster_->Start(); !status.ok()) {
    std::fprintf(stderr, "error: starting the cluster: %s\n", status.ToString().c_str());
    (void)cluster_->StopAll();  // best effort: the start already failed
    return 1;
  }
  client::Client client(runtime_, client::ClientOptions{.retry_for = client::kApplicationRetryFor});
  Status service = WaitForService(client);
  StatusOr<CollectionId> collection =
      service.ok() ? client.OpenCollection("demo") : StatusOr<CollectionId>(service);
  if (!collection.ok()) {
    std::fprintf(stderr, "error: %s\n", collection.status().ToString().c_str());
    (void)cluster_->StopAll();  // best effort: reporting the first failure
    return 1;
  }
  if (!options_.json) {
    std::printf(
        "Shoal demo: %u storage nodes, %u buckets, %u copies of each, %u client threads, %.1f s "
        "of mixed load\n"
        "data: %s%s\n\n",
        kInitialNodes, kBuckets, options_.replicas, options_.clients, options_.duration_seconds,
        data_dir_.c_str(), options_.data_dir.empty() ? " (removed at the end)" : "");
    std::fflush(stdout);
  }
  workload_ = std::make_unique<Workload>(runtime_, client, *collection, options_);

  const Clock::time_point load_start = Clock::now();
  workload_->Load();
  const double load_seconds = SecondsSince(load_start);
  if (!options_.json) {
    std::printf("loaded %llu documents in %.1f s (%llu acknowledged)\n",
                static_cast<unsigned long long>(options_.documents), load_seconds,
                static_cast<unsigned long long>(workload_->acknowledged_writes()));
    std::fflush(stdout);
  }

  auto coordinator = cluster_->coordinator();
  workload_->Start();

  // Phase 1: steady on the initial nodes.
  Clock::time_point phase_start = Clock::now();
  uint64_t phase_ops = workload_->ops();
  Steady(phase_start);
  ops_before_.Add(workload_->ops() - phase_ops, SecondsSince(phase_start));

  // Phase 2: a node joins; the balancer bootstraps it in two phases.
  phase_start = Clock::now();
  {
    // The optimum for a joining node: it ends with its fair share, total / (nodes + 1).
    auto bytes = NodeBytes(*cluster_, *coordinator->map());
    if (bytes.ok()) {
      uint64_t total = 0;
      for (const auto& [node, node_bytes] : *bytes) total += node_bytes;
      optimal_bytes_ += total / (kInitialNodes + 1);
    } else {
      std::fprintf(stderr, "warning: sizing the nodes: %s\n", bytes.status().ToString().c_str());
    }
    const Micros added_at = runtime_.Now();
    Status status = cluster_->AddNode(kJoiningNode);
    if (status.ok()) {
      balanced_ &= WaitForMoves("join", [&] {
        return Balanced() && !coordinator->map()->BucketsOf(kJoiningNode).empty();
      });
      join_seconds_ = SecondsSince(phase_start);
      const auto first = coordinator->progress().first_commit_to;
      if (auto it = first.find(kJoiningNode); it != first.end()) {
        first_serve_ms_ = static_cast<double>(it->second - added_at) / 1000.0;
      }
    } else {
      cluster_status_ = Prefixed(status, "AddNode");
    }
  }
  Steady(phase_start);

  // Phase 3: the first node is decommissioned: drained, then removed from the map.
  phase_start = Clock::now();
  if (cluster_status_.ok()) {
    // The optimum for a leaving node: exactly what it holds.
    auto bytes = NodeBytes(*cluster_, *coordinator->map());
    if (bytes.ok()) {
      optimal_bytes_ += (*bytes)[kLeavingNode];
    } else {
      std::fprintf(stderr, "warning: sizing the nodes: %s\n", bytes.status().ToString().c_str());
    }
    Status status = coordinator->RemoveNode(kLeavingNode);
    if (status.ok()) {
      balanced_ &= WaitForMoves(
          "leave", [&] { return !coordinator->map()->HasNode(kLeavingNode) && Balanced(); });
      leave_seconds_ = SecondsSince(phase_start);
    } else {
      cluster_status_ = Prefixed(status, "RemoveNode");
    }
  }
  Steady(phase_start);
  membership_bytes_ = coordinator->progress().bytes_moved;

  // Phase 4 (K > 1): a node dies and comes back.
  if (options_.replicas > 1 && cluster_status_.ok()) {
    phase_start = Clock::now();
    CrashAndRecover();
    Steady(phase_start);
  }

  // Phase 5: steady on the new membership.
  phase_start = Clock::now();
  phase_ops = workload_->ops();
  Steady(phase_start);
  ops_after_.Add(workload_->ops() - phase_ops, SecondsSince(phase_start));

  workload_->Stop();
  const Verification verification = workload_->Verify();
  if (Status status = cluster_->StopAll(); !status.ok() && cluster_status_.ok()) {
    cluster_status_ = Prefixed(status, "StopAll");
  }
  const int rc = Report(verification, load_seconds);
  workload_.reset();
  return rc;
}

int Demo::Report(const Verification& v, double load_seconds) {
  const coordinator::MoveProgress progress = cluster_->coordinator()->progress();
  std::vector<int64_t> fences;
  for (const coordinator::FenceWindow& window : progress.fence_windows) {
    fences.push_back(window.total_micros());
  }
  double fence_p99_ms = 0;
  if (!fences.empty()) {
    std::sort(fences.begin(), fences.end());
    // Nearest rank: the smallest value with at least 99% of the samples at or below it.
    const size_t rank = (fences.size() * 99 + 99) / 100;
    fence_p99_ms = static_cast<double>(fences[rank - 1]) / 1000.0;
  }
  const double elapsed = SecondsSince(started_);
  const bool ok = v.lost_writes == 0 && v.resurrected_deletes == 0 &&
                  v.duplicate_query_results == 0 && v.missing_query_results == 0 &&
                  workload_->inconsistent() == 0 && balanced_ && cluster_status_.ok();

  for (const auto& sample : workload_->error_samples()) {
    std::fprintf(stderr, "  %s\n", sample.c_str());
  }
  if (!cluster_status_.ok()) {
    std::fprintf(stderr, "error: %s\n", cluster_status_.ToString().c_str());
  }
  if (options_.json) {
    nlohmann::json out = {
        {"documents", v.live},
        {"acknowledged_writes", workload_->acknowledged_writes()},
        {"lost_writes", v.lost_writes},
        {"resurrected_deletes", v.resurrected_deletes},
        {"duplicate_query_results", v.duplicate_query_results},
        {"missing_query_results", v.missing_query_results},
        {"replicas", options_.replicas},
        {"bytes_moved", membership_bytes_},
        {"optimal_bytes", optimal_bytes_},
        {"first_serve_ms",
         first_serve_ms_.has_value() ? nlohmann::json(*first_serve_ms_) : nlohmann::json(nullptr)},
        {"failover_ms",
         failover_ms_.has_value() ? nlohmann::json(*failover_ms_) : nlohmann::json(nullptr)},
        {"recovered_ms",
         recovered_ms_.has_value() ? nlohmann::json(*recovered_ms_) : nlohmann::json(nullptr)},
        {"failure_moves", repair_moves_},
        {"failure_bytes", repair_bytes_ + repair_log_bytes_},
        {"failure_snapshot_bytes", repair_bytes_},
        {"failure_log_bytes", repair_log_bytes_},
        {"failure_copies_resumed", repair_resumed_},
        {"errors_during_failure", errors_during_failure_},
        {"ops_per_s_before", ops_before_.PerSecond()},
        {"ops_per_s_during", ops_during_.PerSecond()},
        {"ops_per_s_after", ops_after_.PerSecond()},
        {"fence_p99_ms", fence_p99_ms},
        {"moves_committed", progress.committed},
        {"moves_aborted", progress.aborted},
        {"moves_while_steady", progress.committed - membership_moves_},
        {"errors", workload_->errors()},
        {"unknown_outcomes", workload_->unknown_outcomes()},
        {"inconsistent_results", workload_->inconsistent()},
        {"balanced", balanced_},
        {"elapsed_s", elapsed},
    };
    std::printf("%s\n", out.dump(2).c_str());
    return ok ? 0 : 1;
  }

  std::printf(
      "\nmembership:  n%u joined, balanced after %s; first bucket served after %s\n",
      kJoiningNode.value(),
      join_seconds_.has_value() ? fmt::format("{:.1f} s", *join_seconds_).c_str() : "-",
      first_serve_ms_.has_value() ? fmt::format("{:.0f} ms", *first_serve_ms_).c_str() : "-");
  std::printf("             n%u left, drained and removed after %s\n", kLeavingNode.value(),
              leave_seconds_.has_value() ? fmt::format("{:.1f} s", *leave_seconds_).c_str() : "-");
  if (crashed_) {
    std::printf(
        "failure:     n%u killed; its %llu primaries failed over after %s; restarted after %.0f "
        "s; %u copies of every bucket again after %s (%llu moves, %.2f MiB: %.2f of snapshots, "
        "%.2f from logs; %llu copies resumed from a log); %llu client errors meanwhile\n",
        kCrashingNode.value(), static_cast<unsigned long long>(crashed_primaries_),
        failover_ms_.has_value() ? fmt::format("{:.0f} ms", *failover_ms_).c_str() : "-",
        std::chrono::duration<double>(kRestartDelay).count(), options_.replicas,
        recovered_ms_.has_value() ? fmt::format("{:.1f} s", *recovered_ms_ / 1000.0).c_str() : "-",
        static_cast<unsigned long long>(repair_moves_),
        static_cast<double>(repair_bytes_ + repair_log_bytes_) / kMiB,
        static_cast<double>(repair_bytes_) / kMiB, static_cast<double>(repair_log_bytes_) / kMiB,
        static_cast<unsigned long long>(repair_resumed_),
        static_cast<unsigned long long>(errors_during_failure_));
  }
  std::printf(
      "moves:       %llu committed (%llu while no node joined, left or failed), %llu aborted; "
      "join and leave moved %.2f MiB, optimum %.2f MiB (%.2fx); fence p99 %.1f ms\n",
      static_cast<unsigned long long>(progress.committed),
      static_cast<unsigned long long>(progress.committed - membership_moves_),
      static_cast<unsigned long long>(progress.aborted),
      static_cast<double>(membership_bytes_) / kMiB, static_cast<double>(optimal_bytes_) / kMiB,
      optimal_bytes_ > 0
          ? static_cast<double>(membership_bytes_) / static_cast<double>(optimal_bytes_)
          : 0.0,
      fence_p99_ms);
  std::printf("throughput:  %.0f ops/s before, %.0f during moves, %.0f after (load: %.0f/s)\n",
              ops_before_.PerSecond(), ops_during_.PerSecond(), ops_after_.PerSecond(),
              static_cast<double>(options_.documents) / load_seconds);
  std::printf(
      "writes:      %llu acknowledged; %llu errors (%llu of unknown outcome), %llu "
      "inconsistent results\n",
      static_cast<unsigned long long>(workload_->acknowledged_writes()),
      static_cast<unsigned long long>(workload_->errors()),
      static_cast<unsigned long long>(workload_->unknown_outcomes()),
      static_cast<unsigned long long>(workload_->inconsistent()));
  std::printf(
      "check:       %llu keys, %llu live; lost writes %llu, resurrected deletes %llu; query: "
      "%llu duplicates, %llu missing\n",
      static_cast<unsigned long long>(v.keys), static_cast<unsigned long long>(v.live),
      static_cast<unsigned long long>(v.lost_writes),
      static_cast<unsigned long long>(v.resurrected_deletes),
      static_cast<unsigned long long>(v.duplicate_query_results),
      static_cast<unsigned long long>(v.missing_query_results));
  std::printf("\n%s in %.1f s\n", ok ? "OK" : "FAILED", elapsed);
  return ok ? 0 : 1;
}

int RunDemo(const DemoOptions& options) {
  std::string data_dir = options.data_dir;
  if (data_dir.empty()) {
    char pattern[] = "/tmp/shoal-demo-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("error: mkdtemp");
      return 1;
    }
    data_dir = pattern;
  }
  int rc = 0;
  {
    // Everything of the cluster (runtime included) is gone before its files are removed.
    Demo demo(options, data_dir);
    rc = demo.Run();
  }
  if (options.data_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(data_dir, ec);
    if (ec)
      std::fprintf(stderr, "warning: removing %s: %s\n", data_dir.c_str(), ec.message().c_str());
  }
  return rc;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Run an embedded cluster under load while a node joins, another leaves and a third dies");
  cmd->add_option("--data", options->data_dir,
                  "Data directory (kept); default: a temporary one, removed at the end");
  cmd->add_option("--documents", options->documents, "Documents loaded before the workload")
      ->capture_default_str();
  cmd->add_option("--duration", options->duration_seconds, "Seconds of mixed workload")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--clients", options->clients, "Client threads")
      ->capture_default_str()
      ->check(CLI::Range(1u, kMaxClients));
  cmd->add_option("--replicas", options->replicas,
                  "Copies of every bucket (K); with K > 1 a node is killed mid-run and restarted")
      ->capture_default_str()
      ->check(CLI::Range(1u, kInitialNodes));
  cmd->add_flag("--no-log-resume{false}", options->log_resume,
                "Rebuild every copy from a snapshot, even one the restarted node still holds "
                "(for a comparison)");
  cmd->add_flag("--json", options->json, "Print one JSON object");
  cmd->callback([options]() {
    const int rc = RunDemo(*options);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace shoal::tools
