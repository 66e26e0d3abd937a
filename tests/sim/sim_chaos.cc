#include "tests/sim/sim_chaos.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

namespace shoal::sim {

using transport::Address;
using transport::Micros;

namespace {

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;

}  // namespace

Status StartSimCluster(server::EmbeddedCluster& cluster, ChaosState& state) {
  if (Status s = cluster.Start(); !s.ok()) {
    state.fail(fmt::format("cluster start: {}", s.ToString()));
    state.done = true;
    return s;
  }
  for (NodeId node : cluster.started_nodes()) state.members.insert(node);
  return OkStatus();
}

uint64_t EndSimRun(transport::SimRuntime& sim, server::EmbeddedCluster& cluster,
                   ChaosState& state) {
  if (!state.done) state.fail("the run did not finish within the simulated time limit");
  state.done = true;
  state.stop_chaos = true;
  sim.Shutdown();
  (void)cluster.StopAll();
  return sim.events();
}

void SupervisorLoop(transport::SimRuntime& sim, server::EmbeddedCluster& cluster, ChaosState& state,
                    Micros restart_after) {
  std::map<NodeId, Micros> down_since;
  Micros coordinator_down_since = -1;
  while (!state.done) {
    if (!sim.Sleep(50 * kMs).ok()) return;
    const Micros now = sim.Now();
    const Micros wait = state.stop_chaos ? 0 : restart_after;
    for (NodeId node : state.members) {
      if (sim.IsAlive(Address::Node(node))) continue;
      auto [it, fresh] = down_since.emplace(node, now);
      if (now - it->second < wait) continue;
      down_since.erase(node);
      if (Status s = cluster.StartNode(node); !s.ok()) {
        state.fail(fmt::format("restart of {} failed: {}", node.DebugString(), s.ToString()));
      }
    }
    if (!sim.IsAlive(Address::Coordinator())) {
      if (coordinator_down_since < 0) coordinator_down_since = now;
      if (now - coordinator_down_since >= wait) {
        coordinator_down_since = -1;
        if (Status s = cluster.StartCoordinator(); !s.ok()) {
          state.fail(fmt::format("restart of the coordinator failed: {}", s.ToString()));
        }
      }
    }
  }
}

void SpawnAdmin(transport::SimRuntime& sim, server::EmbeddedCluster& cluster,
                std::function<void(coordinator::Coordinator&)> fn) {
  auto coordinator = cluster.coordinator();
  if (coordinator == nullptr || !sim.IsAlive(Address::Coordinator())) return;
  sim.Spawn(Address::Coordinator(), "admin",
            [coordinator, fn = std::move(fn)] { fn(*coordinator); });
}

void ChaosLoop(transport::SimRuntime& sim, server::EmbeddedCluster& cluster, ChaosState& state,
               Random& random, const ChaosOptions& options) {
  while (!state.stop_chaos) {
    const Micros pause =
        options.min_pause + static_cast<Micros>(random.Uniform(options.pause_jitter));
    if (!sim.Sleep(pause).ok()) return;
    if (state.stop_chaos) return;
    auto coordinator = cluster.coordinator();
    auto map = coordinator == nullptr ? nullptr : coordinator->map();
    if (map == nullptr) continue;
    const auto buckets = map->buckets();
    const auto& bucket = buckets[random.Uniform(buckets.size())];
    const auto active = map->ActiveNodes();
    const ChaosEvent event = options.wheel[random.Uniform(options.wheel.size())];
    switch (event) {
      case ChaosEvent::kQuiet:
        break;
      case ChaosEvent::kMoveBucket: {
        const NodeId to = active[random.Uniform(active.size())];
        if (bucket.HasReplica(to)) break;
        // Both protocols: copy-then-switch, and switch-then-copy (also used by joins).
        const auto mode = random.OneIn(2) ? cluster::TransitionMode::kCopyThenSwitch
                                          : cluster::TransitionMode::kSwitchThenCopy;
        SpawnAdmin(sim, cluster, [id = bucket.id, to, mode](coordinator::Coordinator& c) {
          (void)c.MoveBucket(id, to, mode);
        });
        break;
      }
      case ChaosEvent::kSplitBucket:
        ++state.splits;
        SpawnAdmin(sim, cluster,
                   [id = bucket.id](coordinator::Coordinator& c) { (void)c.SplitBucket(id); });
        break;
      case ChaosEvent::kMergeBuckets: {
        const auto index = map->IndexOf(bucket.id);
        if (!index.has_value() || *index + 1 >= buckets.size()) break;
        const auto& right = buckets[*index + 1];
        if (bucket.replicas != right.replicas) break;
        SpawnAdmin(sim, cluster, [l = bucket.id, r = right.id](coordinator::Coordinator& c) {
          (void)c.MergeBuckets(l, r);
        });
        break;
      }
      case ChaosEvent::kAddNode: {
        if (state.members.size() >= 5) break;
        const NodeId node(state.next_node++);
        if (Status s = cluster.StartNode(node); !s.ok()) {
          state.fail(fmt::format("start of {} failed: {}", node.DebugString(), s.ToString()));
          break;
        }
        state.members.insert(node);
        SpawnAdmin(sim, cluster, [node](coordinator::Coordinator& c) { (void)c.AddNode(node); });
        break;
      }
      case ChaosEvent::kRemoveNode: {
        // Never below K active nodes: a leaving node's copies need somewhere to go.
        if (active.size() <= std::max<size_t>(2, map->replication_factor())) break;
        const NodeId node = active[random.Uniform(active.size())];
        SpawnAdmin(sim, cluster, [node](coordinator::Coordinator& c) { (void)c.RemoveNode(node); });
        break;
      }
      case ChaosEvent::kCrashNode: {
        if (!options.crashes) break;
        std::vector<NodeId> alive;
        for (NodeId n : state.members) {
          if (sim.IsAlive(Address::Node(n))) alive.push_back(n);
        }
        if (alive.empty()) break;
        const NodeId victim = alive[random.Uniform(alive.size())];
        ++state.crashes;
        sim.Stop(Address::Node(victim));
        break;
      }
      case ChaosEvent::kCrashCoordinator:
        if (!options.crashes) break;
        if (options.coordinator_crash_skip_one_in > 0 &&
            random.OneIn(options.coordinator_crash_skip_one_in)) {
          break;
        }
        ++state.crashes;
        cluster.CrashCoordinator();
        break;
      case ChaosEvent::kPartition: {
        std::vector<Address> processes{Address::Coordinator()};
        for (NodeId n : state.members) processes.push_back(Address::Node(n));
        const Address victim = processes[random.Uniform(processes.size())];
        std::vector<Address> others;
        for (const Address& p : processes) {
          if (p != victim && random.OneIn(2)) others.push_back(p);
        }
        if (others.empty()) {
          others.push_back(victim == processes.front() ? processes.back() : processes.front());
        }
        if (others.front() == victim) break;  // a lone coordinator: nobody to cut it from
        const uint64_t draw = random.Uniform(4);
        const transport::LinkDirection direction = draw == 2   ? transport::LinkDirection::kOutgoing
                                                   : draw == 3 ? transport::LinkDirection::kIncoming
                                                               : transport::LinkDirection::kBoth;
        const Micros heal_after =
            options.min_partition + static_cast<Micros>(random.Uniform(options.partition_jitter));
        ++state.partitions;
        if (std::getenv("SHOAL_SIM_VERBOSE") != nullptr) {
          std::string to;
          for (const Address& o : others) to += " " + o.DebugString();
          std::fprintf(stderr, "t=%lld partition: %s cut from%s (%s) for %lld ms\n",
                       static_cast<long long>(sim.TrueNow()), victim.DebugString().c_str(),
                       to.c_str(),
                       direction == transport::LinkDirection::kBoth       ? "both ways"
                       : direction == transport::LinkDirection::kOutgoing ? "what it sends"
                                                                          : "what it receives",
                       static_cast<long long>(heal_after / kMs));
        }
        sim.CutLinks(victim, others, direction);
        // Heals only the links it cut (an overlapping partition may lose a link early).
        sim.Spawn(Address::Client(903), "heal", [&sim, victim, others, direction, heal_after] {
          (void)sim.Sleep(heal_after);
          sim.HealLinks(victim, others, direction);
        });
        break;
      }
      case ChaosEvent::kOwn1:
      case ChaosEvent::kOwn2:
        options.own(event, random);
        break;
    }
  }
}

bool ClusterQuiet(transport::SimRuntime& sim, server::EmbeddedCluster& cluster) {
  auto coordinator = cluster.coordinator();
  auto map = coordinator == nullptr ? nullptr : coordinator->map();
  return map != nullptr && coordinator->recovered() && map->TransitionCount() == 0 &&
         sim.IsAlive(Address::Coordinator());
}

server::EmbeddedClusterOptions SimClusterOptions(const std::string& data_dir) {
  server::EmbeddedClusterOptions options;
  options.data_dir = data_dir;
  options.initial_nodes = 3;
  options.buckets = 8;
  options.sync = false;
  options.coordinator.call_timeout = 500 * kMs;
  options.coordinator.balance_interval = 300 * kMs;
  options.coordinator.node_timeout = 2 * kSecond;
  options.node.call_timeout = 500 * kMs;
  options.node.fence_timeout = kSecond;
  options.node.heartbeat_interval = 100 * kMs;
  options.node.store.block_cache_bytes = 1u << 20;
  options.node.store.write_buffer_bytes = 1u << 20;
  options.node.store.background_jobs = 1;
  options.node.store.sync_interval = std::chrono::milliseconds(0);  // no sync thread
  options.node.exact_load_stats = true;
  return options;
}

client::ClientOptions SimClientOptions() {
  return client::ClientOptions{.call_timeout = 500 * kMs,
                               .max_attempts = 8,
                               .initial_backoff = kMs,
                               .max_backoff = 100 * kMs};
}

}  // namespace shoal::sim
