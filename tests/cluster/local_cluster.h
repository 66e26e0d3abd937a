#pragma once

// LocalCluster: `shoal local` (a coordinator and its nodes, supervised by one process that
// restarts a node that exits) run as a child of the test, for tests that fault the nodes of a
// whole cluster from outside, as an operator's signals would (history_test.cc). Unlike
// ProcessCluster, the test does not start each process itself: it finds the nodes that shoal local
// runs through /proc, and shoal local restarts a node the test killed.
//
// shoal local leads a process group of its own that its coordinator and nodes join, so that one
// kill(-group) reaches every process however the test ends: Stop at the end, the destructor if the
// test returns early, and the handler of InstallEmergencyCleanup if the test crashes or is
// terminated.
//
// Thread-safety: Start, Stop and the destructor from one thread; NodePid, StatusJson, Healthy and
// the accessors from any thread while the cluster runs (they read /proc, the output file and the
// cluster, never change this object). One LocalCluster runs at a time in a process: the emergency
// cleanup knows one process group.

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "include/shoal/status.h"
#include "src/common/random.h"

namespace shoal::cluster_test {

// Installs a handler of crash and termination signals (SIGABRT, SIGSEGV, SIGTERM, SIGINT, ...)
// that wakes, then SIGKILLs, the process group of the running LocalCluster before the signal takes
// its default course, so that no node outlives the test or is left stopped. Idempotent.
void InstallEmergencyCleanup();

class LocalCluster {
 public:
  struct Options {
    uint32_t nodes = 3;          // --nodes
    uint32_t replicas = 3;       // --replicas: K copies of every bucket
    uint32_t buckets = 8;        // --buckets
    int restart_delay_ms = 500;  // --restart-delay-ms: how long a node that exited stays down
  };

  // `binary`: the `shoal` executable; `dir`: an existing directory for shoal local's output
  // (local.out) and the cluster's data and logs (data/).
  LocalCluster(std::string binary, std::string dir, Options options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Starts shoal local on fresh ports (drawn with `random`) and waits for its "serving" line;
  // tries 3 port ranges, as another process may take a port before shoal local binds it.
  [[nodiscard]] Status Start(Random& random);

  // SIGCONT then SIGTERM to the group; SIGKILL whatever is left after 20 s. Does nothing when not
  // running.
  void Stop();

  // The pid of node `id` (1..nodes) running now, or 0 (killed and not restarted yet): the child
  // of shoal local whose arguments are "node --id <id>".
  [[nodiscard]] pid_t NodePid(uint32_t id) const;

  // One `shoal status --json` of the cluster, or nullopt when it did not answer.
  [[nodiscard]] std::optional<nlohmann::json> StatusJson() const;

  // Every node runs and the coordinator reports every bucket with K copies and a reachable
  // primary.
  [[nodiscard]] bool Healthy() const;

  [[nodiscard]] uint32_t nodes() const { return options_.nodes; }
  // The cluster's URI, once Start succeeded.
  [[nodiscard]] const std::string& uri() const { return uri_; }
  [[nodiscard]] std::string data_dir() const { return dir_ + "/data"; }
  // The credentials file shoal local registers its cluster in (its SHOAL_CREDENTIALS): how the
  // test's clients find the admin certificate of the secure cluster.
  [[nodiscard]] std::string credentials_file() const { return dir_ + "/credentials"; }
  // Everything shoal local printed so far.
  [[nodiscard]] std::string Output() const;

 private:
  // Forks and execs shoal local on ports from `base`, then waits for its ready line.
  [[nodiscard]] Status Launch(int base);

  const std::string binary_;
  const std::string dir_;
  const Options options_;
  pid_t pid_ = 0;  // shoal local, the leader of its process group; 0 when not running
  std::string uri_;
};

}  // namespace shoal::cluster_test
