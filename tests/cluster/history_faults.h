#pragma once

// Faults: the seeded fault injector of the linearizability check of a real cluster
// (history_test.cc). Run on a thread of its own against a LocalCluster, it kills, stops and wakes
// node processes from outside, as a crash, a hang or an operator's signal would, and leaves the
// restarts to shoal local. Kept apart from the check so that the check reads as the workload, the
// recording and the verdict, and the schedule of faults can be read (and tuned) on its own.
//
// The schedule. Between faults it waits 1.5-4 s, then up to 15 s until every node runs and
// `shoal status` reports no bucket short of a copy or of a reachable primary (a fault that finds
// the cluster not healed goes ahead and is counted). It then, at random:
//   - SIGKILLs a node (shoal local restarts it after its restart delay; it comes back fenced, its
//     primaries fail over and its copies are rebuilt);
//   - SIGSTOPs one and SIGKILLs it 1-2.5 s later (a hang, then a crash: down past the failover
//     timeout);
//   - SIGSTOPs one past the failover timeout (1.5-3 s, then SIGCONT: its primaries fail over while
//     it sleeps, or it wakes during the failover);
//   - SIGSTOPs one briefly (0.2-0.8 s, below the failure bound);
//   - kills one and, once it is back but before its copies are rebuilt, a second;
//   - or kills two 200 ms apart (both down for a moment).
// At most one node is down for long, so writes go on. A node is killed at most kMaxQuickKills
// times in a row within kQuickExit of its start (shoal local gives up a child that keeps exiting
// right after its start). A node it stopped is always woken, also when told to stop meanwhile.
//
// The seed fixes the choices, not their timing against the cluster's processes.
//
// Thread-safety: Loop on one thread; RequestStop from any; counts once Loop has returned.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "src/common/random.h"
#include "tests/cluster/local_cluster.h"

namespace shoal::cluster_test {

struct FaultCounts {
  uint64_t kills = 0;
  uint64_t stops = 0;
  uint64_t restarts = 0;  // kills that shoal local restarted, as seen by a new pid
  uint64_t unhealed = 0;  // faults begun while the cluster had not healed from the last one
};

// The fault thread's state of one node: when it started and how often in a row it was killed
// soon after.
struct NodeLife {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int quick_kills = 0;
};

class Faults {
 public:
  // Called on the fault thread with a description of each fault as it is made (and of each
  // restart seen), for the run's fault timeline.
  using Recorder = std::function<void(std::string what)>;

  // `cluster` must outlive this and run while Loop does; `seed` fixes the schedule.
  Faults(const LocalCluster& cluster, uint64_t seed, Recorder record);
  Faults(const Faults&) = delete;
  Faults& operator=(const Faults&) = delete;

  // Makes faults until RequestStop; a node it stopped is woken before it returns.
  void Loop();

  // Ends Loop's waits and stops it from beginning another fault. The fault in progress ends
  // early (a stopped node is woken at once; a hung node due to be killed is killed at once).
  void RequestStop();

  [[nodiscard]] const FaultCounts& counts() const { return counts_; }

 private:
  using Clock = std::chrono::steady_clock;
  // shoal local stops restarting a child after 5 quick exits in a row (local_supervisor.h).
  static constexpr int kMaxQuickKills = 3;
  static constexpr auto kQuickExit = std::chrono::seconds(10);

  // Sleeps `duration` unless RequestStop comes first; false if it has.
  bool SleepUnlessStopped(std::chrono::milliseconds duration);
  bool Stopped();

  // Whether killing node `id` now keeps it within kMaxQuickKills quick kills in a row.
  bool MayKill(uint32_t id);
  // SIGKILL of node `id`, unless it does not run or was killed too often right after its start.
  bool Kill(uint32_t id);
  // Until shoal local has started node `id` again (a pid other than the killed one), at most
  // 10 s; true if it has.
  bool AwaitRestart(uint32_t id);
  // SIGSTOP of node `id` for `duration` (less if RequestStop comes), then SIGCONT: always,
  // whatever happens meanwhile.
  void StopNode(uint32_t id, std::chrono::milliseconds duration);

  const LocalCluster& cluster_;
  const Recorder record_;
  Random random_;  // the fault thread's
  FaultCounts counts_;
  std::map<uint32_t, NodeLife> lives_;
  std::map<uint32_t, pid_t> killed_pid_;

  std::mutex mu_;
  std::condition_variable wake_;  // stop_ became true
  bool stop_ = false;             // guarded by mu_
};

}  // namespace shoal::cluster_test
