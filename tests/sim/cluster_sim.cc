#include "tests/sim/cluster_sim.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "src/client/client.h"
#include "src/common/log.h"
#include "src/common/random.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/transport/failpoints.h"
#include "src/transport/sim_runtime.h"
#include "tests/sim/linearizability.h"
#include "tests/sim/sim_chaos.h"
#include "tests/sim/stale_reads.h"

namespace shoal::sim {
namespace {

using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;

OpOutcome OutcomeOf(const Status& status) {
  if (status.ok()) return OpOutcome::kOk;
  if (storage::Is(status, storage::ErrorReason::kDuplicate)) return OpOutcome::kDuplicate;
  if (storage::Is(status, storage::ErrorReason::kNotFound)) return OpOutcome::kNotFound;
  if (storage::Is(status, storage::ErrorReason::kConditionFailed)) {
    return OpOutcome::kConditionFailed;
  }
  return OpOutcome::kUnknown;
}

// Shared state of one run. Only one simulated task runs at a time, so plain fields suffice.
struct World {
  explicit World(const ClusterSimOptions& o)
      : options(o),
        chaos_random(o.seed * 7919 + 1),
        chaos([this](std::string what) { Fail(std::move(what)); }) {}

  const ClusterSimOptions options;
  Random chaos_random;
  ChaosState chaos;
  HistoryRecorder history;
  std::vector<BoundedRead> bounded_reads;  // ClusterSimOptions::any_replica_reads
  CollectionId collection;
  bool collection_ready = false;
  bool stop_clients = false;
  int clients_running = 0;
  std::string failure;
  ClusterSimResult result;

  void Fail(std::string what) {
    if (failure.empty()) failure = std::move(what);
  }
};

void ClientLoop(transport::SimRuntime& sim, World& world, uint32_t id) {
  client::Client client(sim, SimClientOptions());
  Random random(world.options.seed * 1000003 + id);
  uint64_t sequence = 0;
  ++world.clients_running;
  while (!world.stop_clients) {
    const std::string key = fmt::format("k{}", random.Uniform(world.options.keys));
    const std::string value = fmt::format(R"({{"v":"c{}-{}"}})", id, sequence++);
    const uint64_t choice = random.Uniform(10);
    const CollectionId c = world.collection;
    auto record = [&](OpKind kind, std::string v, std::string expected, const Status& status,
                      std::string read, Micros call) {
      auto handle = world.history.Begin(key, id, kind, std::move(v), std::move(expected), call);
      const OpOutcome outcome = OutcomeOf(status);
      if (outcome == OpOutcome::kUnknown) {
        world.history.EndUnknown(handle);
      } else {
        world.history.End(handle, outcome, std::move(read), sim.Now());
      }
      ++world.result.operations;
    };
    const Micros call = sim.Now();
    if (world.options.batch_writes && random.Uniform(3) == 0) {
      // Several writes in one Client::Batch: one history op per write, all called now.
      std::vector<transport::WriteRequest> writes;
      std::vector<OpKind> kinds;
      const uint64_t size = 2 + random.Uniform(4);
      for (uint64_t i = 0; i < size; ++i) {
        transport::WriteRequest write;
        write.collection = c;
        write.primary_key = fmt::format("k{}", random.Uniform(world.options.keys));
        write.body = fmt::format(R"({{"v":"c{}-{}"}})", id, sequence++);
        switch (random.Uniform(4)) {
          case 0:
            write.op = transport::WriteOp::kInsert;
            kinds.push_back(OpKind::kInsert);
            break;
          case 1:
            write.op = transport::WriteOp::kUpdate;
            kinds.push_back(OpKind::kUpdate);
            break;
          case 2:
            write.op = transport::WriteOp::kUpsert;
            kinds.push_back(OpKind::kUpsert);
            break;
          default:
            write.op = transport::WriteOp::kDelete;
            write.body.clear();
            kinds.push_back(OpKind::kDelete);
            break;
        }
        writes.push_back(std::move(write));
      }
      std::vector<HistoryRecorder::Handle> handles;
      for (uint64_t i = 0; i < size; ++i) {
        handles.push_back(
            world.history.Begin(writes[i].primary_key, id, kinds[i], writes[i].body, "", call));
      }
      auto results = client.Batch(writes);
      for (uint64_t i = 0; i < size; ++i) {
        const OpOutcome outcome =
            results.ok() ? OutcomeOf((*results)[i].status()) : OpOutcome::kUnknown;
        if (outcome == OpOutcome::kUnknown) {
          world.history.EndUnknown(handles[i]);
        } else {
          world.history.End(handles[i], outcome, "", sim.Now());
        }
        ++world.result.operations;
      }
      if (!results.ok() && results.status().code() == StatusCode::kCancelled) break;
    } else if (choice < 3 && world.options.any_replica_reads && sequence % 2 == 0) {
      auto got = client.GetAnyReplica(c, key);
      if (got.status().code() == StatusCode::kCancelled) break;
      const bool absent = storage::Is(got.status(), storage::ErrorReason::kNotFound);
      if (got.ok() || absent) {
        world.bounded_reads.push_back(
            BoundedRead{.key = key,
                        .call_us = call,
                        .return_us = sim.Now(),
                        .value = got.ok() ? std::optional<std::string>(got->body) : std::nullopt});
        ++world.result.any_replica_reads;
      }
    } else if (choice < 3) {
      auto got = client.Get(c, key);
      if (got.status().code() == StatusCode::kCancelled) break;
      record(OpKind::kGet, "", "", got.status(), got.ok() ? got->body : "", call);
    } else if (choice < 4) {
      auto r = client.Insert(c, key, value);
      record(OpKind::kInsert, value, "", r.status(), "", call);
    } else if (choice < 5) {
      auto r = client.Update(c, key, value);
      record(OpKind::kUpdate, value, "", r.status(), "", call);
    } else if (choice < 7) {
      auto r = client.Upsert(c, key, value);
      record(OpKind::kUpsert, value, "", r.status(), "", call);
    } else if (choice < 8) {
      auto r = client.Delete(c, key);
      record(OpKind::kDelete, "", "", r.status(), "", call);
    } else {
      // Read, then compare-and-set on the version read (a version names one write of a key).
      auto got = client.Get(c, key);
      record(OpKind::kGet, "", "", got.status(), got.ok() ? got->body : "", call);
      if (got.ok()) {
        const Micros cas_call = sim.Now();
        auto r = client.CompareAndSet(c, key, got->version, value);
        Status status = r.status();
        // CAS on a key deleted meanwhile answers NOT_FOUND: the model's "condition failed".
        if (storage::Is(status, storage::ErrorReason::kNotFound)) {
          status = storage::StorageError(storage::ErrorReason::kConditionFailed, "absent");
        }
        record(OpKind::kCompareAndSet, value, got->body, status, "", cas_call);
      }
    }
    if (!sim.Sleep(static_cast<Micros>(random.Uniform(3 * kMs))).ok()) break;
  }
  --world.clients_running;
}

// At most one node may acknowledge a write to a point at any instant (ARCHITECTURE.md §4).
void SafetyLoop(transport::SimRuntime& sim, World& world, server::EmbeddedCluster& cluster) {
  while (!world.chaos.done) {
    if (!sim.Sleep(5 * kMs).ok()) return;
    auto coordinator = cluster.coordinator();
    auto map = coordinator == nullptr ? nullptr : coordinator->map();
    if (map == nullptr) continue;
    std::vector<uint64_t> points;
    for (const auto& bucket : map->buckets()) {
      points.push_back(bucket.range.begin());
      points.push_back(bucket.range.Midpoint());
    }
    for (uint64_t point : points) {
      int acknowledgers = 0;
      std::string who;  // each acknowledger's map epoch
      for (NodeId id : cluster.started_nodes()) {
        if (!sim.IsAlive(Address::Node(id))) continue;
        auto node = cluster.node(id);
        if (node == nullptr) continue;
        // Asked as the node, so that its read lease is judged on its own clock.
        bool can = false;
        sim.RunAs(Address::Node(id), [&] { can = node->CanAcknowledgeWrite(Point(point)); });
        if (!can) continue;
        ++acknowledgers;
        who += fmt::format(" n{} at {};", id.value(), node->epoch().DebugString());
      }
      if (acknowledgers > 1) {
        world.Fail(fmt::format("{} nodes may acknowledge writes to point {:#018x} at t={} us:{}",
                               acknowledgers, point, sim.Now(), who));
      }
    }
  }
}

// Bucket moves are the likeliest event; node crashes come twice as often as coordinator crashes.
ChaosOptions ClusterChaos(const World& world) {
  using enum ChaosEvent;
  if (world.options.replication_factor > 1) {
    std::vector<ChaosEvent> wheel{kCrashNode,  kCrashNode,  kCrashCoordinator, kAddNode,
                                  kRemoveNode, kMoveBucket, kSplitBucket,      kMergeBuckets,
                                  kQuiet,      kQuiet};
    if (world.options.partitions) wheel.insert(wheel.end(), {kPartition, kPartition});
    return ChaosOptions{.min_pause = 300 * kMs,
                        .pause_jitter = 700 * kMs,
                        .wheel = std::move(wheel),
                        .crashes = world.options.crashes,
                        .coordinator_crash_skip_one_in = 0,
                        .own = nullptr};
  }
  return ChaosOptions{.min_pause = 100 * kMs,
                      .pause_jitter = 300 * kMs,
                      .wheel = {kMoveBucket, kMoveBucket, kMoveBucket, kMoveBucket, kMoveBucket,
                                kSplitBucket, kMergeBuckets, kAddNode, kRemoveNode, kCrashNode,
                                kCrashNode, kCrashCoordinator, kQuiet, kQuiet},
                      .crashes = world.options.crashes,
                      .coordinator_crash_skip_one_in = 0,
                      .own = nullptr};
}

void Harness(transport::SimRuntime& sim, World& world, server::EmbeddedCluster& cluster) {
  if (!StartSimCluster(cluster, world.chaos).ok()) return;
  client::Client admin(sim);
  for (int attempt = 0; !world.collection_ready && attempt < 50; ++attempt) {
    auto id = admin.OpenCollection("sim");
    if (id.ok()) {
      world.collection = *id;
      world.collection_ready = true;
    } else if (!sim.Sleep(100 * kMs).ok()) {
      return;
    }
  }
  if (!world.collection_ready) {
    world.Fail("could not create the collection");
    world.chaos.done = true;
    return;
  }
  for (int c = 0; c < world.options.clients; ++c) {
    sim.Spawn(Address::Client(static_cast<uint32_t>(c + 1)), "client",
              [&sim, &world, c] { ClientLoop(sim, world, static_cast<uint32_t>(c + 1)); });
  }
  sim.Spawn(Address::Client(900), "supervisor",
            [&] { SupervisorLoop(sim, cluster, world.chaos, 300 * kMs); });
  sim.Spawn(Address::Client(901), "safety", [&] { SafetyLoop(sim, world, cluster); });
  sim.Spawn(Address::Client(902), "chaos", [&, options = ClusterChaos(world)] {
    ChaosLoop(sim, cluster, world.chaos, world.chaos_random, options);
  });

  (void)sim.Sleep(world.options.duration_us);
  // Heal: no more chaos, no more loss; the supervisor restarts whatever is down.
  world.chaos.stop_chaos = true;
  sim.SetLoss(0);
  sim.HealAllLinks();
  for (int i = 0; i < 600; ++i) {
    (void)sim.Sleep(100 * kMs);
    if (ClusterQuiet(sim, cluster)) break;
  }
  world.stop_clients = true;
  for (int i = 0; i < 600 && world.clients_running > 0; ++i) (void)sim.Sleep(100 * kMs);
  if (world.clients_running > 0) world.Fail("clients did not stop");

  // Final reads: recorded like any other operation, then one full query.
  client::Client reader(sim);
  std::set<std::string> live;
  for (int k = 0; k < world.options.keys; ++k) {
    const std::string key = fmt::format("k{}", k);
    const Micros call = sim.Now();
    auto got = reader.Get(world.collection, key);
    const OpOutcome outcome = OutcomeOf(got.status());
    auto handle = world.history.Begin(key, 999, OpKind::kGet, "", "", call);
    if (outcome == OpOutcome::kUnknown) {
      world.Fail(fmt::format("final read of {} failed: {}", key, got.status().ToString()));
      if (std::getenv("SHOAL_SIM_VERBOSE") != nullptr) {
        if (auto coordinator = cluster.coordinator(); coordinator != nullptr) {
          if (auto map = coordinator->map(); map != nullptr) {
            std::fprintf(stderr, "t=%lld map: %s\n", static_cast<long long>(sim.Now()),
                         map->DebugString().c_str());
          }
        }
      }
      world.history.EndUnknown(handle);
    } else {
      world.history.End(handle, outcome, got.ok() ? got->body : "", sim.Now());
      if (got.ok()) live.insert(key);
    }
  }
  client::QueryOptions query{
      .collection = world.collection, .filter = {}, .limit = 7, .cursor = ""};
  std::map<std::string, int> seen;
  for (int page = 0; page < 1000; ++page) {
    auto result = reader.Query(query);
    if (!result.ok()) {
      world.Fail(fmt::format("final query failed: {}", result.status().ToString()));
      break;
    }
    for (const auto& document : result->documents) ++seen[document.primary_key];
    if (result->next_cursor.empty()) break;
    query.cursor = result->next_cursor;
  }
  for (const auto& [key, count] : seen) {
    if (count != 1) world.Fail(fmt::format("query returned {} {} times", key, count));
    if (live.count(key) == 0) world.Fail(fmt::format("query returned absent {}", key));
  }
  for (const auto& key : live) {
    if (seen.count(key) == 0) world.Fail(fmt::format("query missed {}", key));
  }
  if (auto coordinator = cluster.coordinator(); coordinator != nullptr) {
    if (auto map = coordinator->map(); map != nullptr) {
      for (const auto& bucket : map->buckets()) {
        if (bucket.term > Term(1)) ++world.result.failovers;
      }
    }
    world.result.moves = coordinator->progress().committed;
    world.result.aborted_moves = coordinator->progress().aborted;
    if (std::getenv("SHOAL_SIM_VERBOSE") != nullptr) {
      const auto p = coordinator->progress();
      std::fprintf(stderr, "started %llu committed %llu aborted %llu\n",
                   static_cast<unsigned long long>(p.started),
                   static_cast<unsigned long long>(p.committed),
                   static_cast<unsigned long long>(p.aborted));
      for (const auto& reason : coordinator->progress().abort_reasons) {
        std::fprintf(stderr, "abort: %s\n", reason.c_str());
      }
    }
  }
  if (Status s = cluster.StopAll(); !s.ok()) world.Fail(fmt::format("stop: {}", s.ToString()));
  world.chaos.done = true;
}

}  // namespace

ClusterSimResult RunClusterSim(const ClusterSimOptions& options) {
  const std::string dir = fmt::format("{}/seed-{}", options.dir, options.seed);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  World world(options);
  // SHOAL_SIM_LOG=1: the processes' event log on stderr, to follow a failing seed.
  if (std::getenv("SHOAL_SIM_LOG") != nullptr) log::Configure(log::Options{});
  {
    transport::SimRuntime sim(transport::SimOptions{
        .seed = options.seed, .min_delay = 100, .max_delay = 3000, .loss = options.loss});
    server::EmbeddedClusterOptions cluster_options = SimClusterOptions(dir);
    cluster_options.replication_factor = options.replication_factor;
    // Odd seeds also split and merge by size on their own (paper 001 §3.1 bounded partitions).
    const bool auto_split = options.seed % 2 == 1;
    cluster_options.coordinator.split_bytes =
        options.split_bytes != 0 ? options.split_bytes : (auto_split ? 400 : 0);
    cluster_options.coordinator.merge_bytes =
        options.merge_bytes != 0 ? options.merge_bytes : (auto_split ? 150 : 0);
    // Seeds 4k and 4k+1 copy move files chunk by chunk (FetchMoveFile), as a networked cluster
    // does, in chunks small enough that every file takes several; the others read them by path.
    if ((options.seed / 2) % 2 == 0) {
      cluster_options.node.move_file_transfer = node::MoveFileTransfer::kFetch;
      cluster_options.node.move_chunk_bytes = 512;
    }
    server::EmbeddedCluster cluster(sim, cluster_options);
    if (options.replication_factor > 1 && options.clock_drift > 0) {
      // Clocks of every node id the run may use and of the coordinator, from a generator of
      // their own so that the chaos draws stay what they were.
      Random clocks(options.seed * 104729 + 17);
      auto draw = [&](const Address& process) {
        const double rate = 1.0 + options.clock_drift * (2.0 * clocks.NextDouble() - 1.0);
        const auto offset = static_cast<Micros>(clocks.Uniform(kSecond));
        sim.SetClock(process, transport::SimClock{.rate = rate, .offset = offset});
      };
      draw(Address::Coordinator());
      for (uint32_t id = 1; id <= 16; ++id) draw(Address::Node(NodeId(id)));
    }

    sim.SetChaosHook([&world](const Address&, std::string_view name) {
      // Unscheduled points (failpoints.h): no draw, so each recorded seed keeps its schedule.
      if (transport::IsUnscheduledFailpoint(name)) return false;
      ++world.result.failpoint_hits[std::string(name)];
      if (world.chaos.stop_chaos || !world.options.crashes) return false;
      // Switch-then-copy moves are rarer than copy-then-switch ones; crash at their steps more
      // often so that every shard of seeds covers their recovery (roll forward).
      // (after_seal is one of their steps: reached ~140 times in 50 seeds, at 1% it went
      // uncrashed in a whole shard once the balancer's schedule changed.)
      // Copies resumed from a log (a few per seed at K = 3) likewise.
      const bool rare = name.find("switch") != std::string_view::npos ||
                        name.find("transfer") != std::string_view::npos ||
                        name.find("seal") != std::string_view::npos ||
                        name.find("resume") != std::string_view::npos;
      const double p = world.options.failpoint_crash_probability * (rare ? 8 : 1);
      if (world.chaos_random.NextDouble() >= p) return false;
      ++world.result.crashes;
      ++world.result.failpoint_crashes[std::string(name)];
      return true;
    });
    sim.Spawn(Address::Client(1000), "harness", [&] { Harness(sim, world, cluster); });
    sim.RunUntil(options.duration_us + 300 * kSecond);
    world.stop_clients = true;
    world.result.events = EndSimRun(sim, cluster, world.chaos);
    world.result.crashes += world.chaos.crashes;
    world.result.splits = world.chaos.splits;
    world.result.partitions = world.chaos.partitions;
  }
  std::filesystem::remove_all(dir, ec);

  if (world.failure.empty()) {
    CheckOptions check;
    check.timeout = std::chrono::milliseconds(10000);
    const auto summary = world.history.CheckAll(check);
    if (!summary.ok()) world.Fail(summary.DebugString());
  }
  if (world.failure.empty() && !world.bounded_reads.empty()) {
    // The nodes' max_staleness (NodeOptions, 1 s) plus the simulated network's delays.
    constexpr int64_t kStalenessBound = 1'200'000;
    if (auto stale =
            CheckBoundedReads(world.history.ByKey(), world.bounded_reads, kStalenessBound)) {
      world.Fail(*stale);
    }
  }
  world.result.ok = world.failure.empty();
  if (!world.result.ok) {
    world.result.failure = fmt::format("seed {}: {}", options.seed, world.failure);
  }
  return world.result;
}

}  // namespace shoal::sim
