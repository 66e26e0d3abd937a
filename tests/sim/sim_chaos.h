#pragma once

// The chaos both cluster-level simulations share (cluster_sim.h, hotspot_sim.h): a supervisor
// that restarts crashed nodes and the coordinator, admin work run as coordinator tasks, and a
// chaos loop drawing bucket moves, splits, merges, node additions and removals and crashes from
// a wheel each simulation fills with its own mix (and its own events). Also the cluster and
// client settings both simulations run with.

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/client/client.h"
#include "src/common/random.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/sim_runtime.h"

namespace shoal::sim {

// The part of a simulation's shared state that the chaos and the supervisor read and write. Only
// one simulated task runs at a time, so plain fields suffice; not thread-safe otherwise.
struct ChaosState {
  // `fail` records a failure of the run.
  explicit ChaosState(std::function<void(std::string)> fail) : fail(std::move(fail)) {}

  std::set<NodeId> members;               // nodes that should be running
  uint32_t next_node = 4;                 // the id of the next node added
  bool stop_chaos = false;                // no more chaos; the supervisor restarts at once
  bool done = false;                      // the run is over; the supervisor stops
  uint64_t crashes = 0;                   // nodes and the coordinator crashed by the chaos loop
  uint64_t splits = 0;                    // splits started by the chaos loop
  uint64_t partitions = 0;                // link partitions the chaos loop injected
  std::function<void(std::string)> fail;  // records a failure of the run
};

// One draw of the chaos loop. kOwn1 and kOwn2 are the simulation's own (ChaosOptions::own).
enum class ChaosEvent : uint8_t {
  kQuiet,
  kMoveBucket,  // to a random active node, by either transition mode
  kSplitBucket,
  kMergeBuckets,  // with the right neighbour, if both sit on the same nodes
  kAddNode,       // at most 5 members
  kRemoveNode,    // at least 2 active nodes stay
  kCrashNode,     // the supervisor restarts it
  kCrashCoordinator,
  // One member node or the coordinator cut from a random nonempty subset of the others (nodes
  // and the coordinator), in both directions or, one time in four each, only what it sends or
  // only what it receives; healed by itself within ChaosOptions::max_partition.
  kPartition,
  kOwn1,
  kOwn2,
};

// How a chaos loop behaves: a pause of [min_pause, min_pause + pause_jitter) between draws, then
// one event drawn uniformly from `wheel` (repeat an event to make it likelier).
struct ChaosOptions {
  transport::Micros min_pause = 0;
  transport::Micros pause_jitter = 0;
  std::vector<ChaosEvent> wheel;
  bool crashes = true;  // false: crash events do nothing
  // A drawn coordinator crash is skipped one time in this many (0: never).
  uint64_t coordinator_crash_skip_one_in = 0;
  std::function<void(ChaosEvent, Random&)> own;  // runs kOwn1 and kOwn2
  // A partition lasts [min_partition, min_partition + partition_jitter).
  transport::Micros min_partition = 200'000;
  transport::Micros partition_jitter = 2'000'000;
};

// Starts the cluster; its initial nodes become the members. On failure also fails the run and
// marks it done.
[[nodiscard]] Status StartSimCluster(server::EmbeddedCluster& cluster, ChaosState& state);

// After the run's time limit: fails the run unless it is done, stops the chaos, shuts the runtime
// down and closes every process. Returns the count of simulated events.
[[nodiscard]] uint64_t EndSimRun(transport::SimRuntime& sim, server::EmbeddedCluster& cluster,
                                 ChaosState& state);

// Restarts crashed member nodes and the coordinator once they have been down `restart_after`
// (at once after stop_chaos), until `state.done`. Runs as a simulated task.
void SupervisorLoop(transport::SimRuntime& sim, server::EmbeddedCluster& cluster, ChaosState& state,
                    transport::Micros restart_after);

// Runs `fn` as a coordinator task, so that a coordinator crash cancels it too; nothing if the
// coordinator is down.
void SpawnAdmin(transport::SimRuntime& sim, server::EmbeddedCluster& cluster,
                std::function<void(coordinator::Coordinator&)> fn);

// Draws chaos events from `random` until `state.stop_chaos`. Runs as a simulated task.
void ChaosLoop(transport::SimRuntime& sim, server::EmbeddedCluster& cluster, ChaosState& state,
               Random& random, const ChaosOptions& options);

// Whether every cluster-level operation is over: coordinator up and recovered, no transitions.
[[nodiscard]] bool ClusterQuiet(transport::SimRuntime& sim, server::EmbeddedCluster& cluster);

// Three nodes, 8 buckets, short timeouts and small stores, in `data_dir`.
[[nodiscard]] server::EmbeddedClusterOptions SimClusterOptions(const std::string& data_dir);

// Short call timeouts, 8 attempts with a backoff of 1 to 100 ms.
[[nodiscard]] client::ClientOptions SimClientOptions();

}  // namespace shoal::sim
