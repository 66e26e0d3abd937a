#pragma once

// ProcessCluster: a Shoal cluster of real `shoal coordinator` and `shoal node` processes on
// loopback, for the fault tests. Every process is a child of the test, started from the built
// binary with its own data directory and log under one temporary directory, on a free port (the
// coordinator keeps its first port across restarts, so that nodes and clients find it again).
// Children die with the test (PR_SET_PDEATHSIG) and are SIGKILLed by the destructor, so a failed
// or interrupted test leaves no process behind.
//
// Secure by default (docs/security.md): the constructor makes a CA, a node certificate and the
// client certificate of `admin` in dir()/certs; every process gets --certs-dir (and reloads its
// files every second), and the test's clients, admin runtime and CLI runs present the admin
// certificate. SetInsecure, before the first start, runs the cluster with --insecure instead.
//
// Thread-safety: none; the test's main thread drives it (the children's death signal is tied to
// the thread that forked them).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"
#include "src/transport/messages.h"

namespace shoal::cluster_test {

// The role of a child process: the coordinator is node id 0; a second coordinator (a standby
// under ZooKeeper leader election) has an id no test gives a node.
inline constexpr uint32_t kCoordinator = 0;
inline constexpr uint32_t kStandbyCoordinator = 1000;

// One exit of a child observed by Reap.
struct Exit {
  uint32_t id = 0;      // kCoordinator or a node id
  bool killed = false;  // by SIGKILL (a crash failpoint or the test)
  int status = 0;       // the raw wait status
};

// The `shoal` executable the tests start: $SHOAL_BINARY, else the one built with the tests
// (SHOAL_DEFAULT_BINARY, set by the test targets).
[[nodiscard]] std::string ShoalBinary();

class ProcessCluster {
 public:
  // `binary`: the `shoal` executable. Creates a fresh temporary directory.
  explicit ProcessCluster(std::string binary);
  ~ProcessCluster();
  ProcessCluster(const ProcessCluster&) = delete;
  ProcessCluster& operator=(const ProcessCluster&) = delete;

  // Coordinators started from now on keep their metadata under the ZooKeeper `uri`
  // ("zk://HOST:PORT/PATH") with the given election session timeout (default: embedded).
  void UseZooKeeper(std::string uri, int election_session_ms);
  // Coordinators started from now on create a new cluster with `replicas` copies of every bucket
  // (`--replicas`); a `min_in_sync` other than 0 is then set by an admin call once the first
  // coordinator serves (the coordinator has no flag for it; 0 keeps its default, a majority of
  // K). Without a call, the coordinator's default applies (one copy).
  void SetReplication(uint32_t replicas, uint32_t min_in_sync = 0);
  // Processes started from now on serve plaintext (--insecure), and the test's clients dial
  // plaintext.
  void SetInsecure() { insecure_ = true; }
  // Every process is started with --enable-failpoints (so that a test can set failpoints over
  // the network) unless this is called first.
  void DisableRemoteFailpoints() { remote_failpoints_ = false; }
  // Node `id`, when started from now on, serves and dials with the certificates of `certs_dir`
  // (e.g. of another CA) instead of the cluster's.
  void SetNodeCertsDir(uint32_t id, std::string certs_dir) {
    node_certs_[id] = std::move(certs_dir);
  }
  // Node `id`, when started from now on (StartNode), also gets `args` (e.g. {"--max-calls", "4"}).
  void SetNodeArgs(uint32_t id, std::vector<std::string> args) { node_args_[id] = std::move(args); }
  // The coordinator with a new map of nodes 1..initial_nodes and `buckets`; `failpoints` is the
  // process's SHOAL_FAILPOINTS (empty: none).
  [[nodiscard]] Status StartCoordinator(uint32_t initial_nodes, uint32_t buckets,
                                        const std::string& failpoints = {});
  // A second coordinator on the same ZooKeeper path (UseZooKeeper first): a standby while the
  // first one leads. Start it before the nodes, which are given both addresses.
  [[nodiscard]] Status StartStandbyCoordinator(uint32_t initial_nodes, uint32_t buckets);
  [[nodiscard]] Status StartNode(uint32_t id, const std::string& failpoints = {});
  // Starts `id` again on its data directory, without failpoints.
  [[nodiscard]] Status Restart(uint32_t id);
  // Kills every process of `ids` that runs, then starts them all again at once (as Restart),
  // and waits until each serves.
  [[nodiscard]] Status RestartTogether(const std::vector<uint32_t>& ids);
  // Nodes started from now on keep their first port across restarts, as with the fixed ports of
  // `shoal local`; by default a restarted node binds a new port (and the coordinator learns it
  // from the node's heartbeat).
  void KeepNodePorts() { keep_node_ports_ = true; }
  // SIGKILL, then waits for the process to end.
  void Kill(uint32_t id);
  [[nodiscard]] bool Running(uint32_t id) const;
  // SIGSTOP / SIGCONT: a process that stops answering without dying (and its ZooKeeper sessions
  // expire meanwhile).
  void Pause(uint32_t id);
  void Resume(uint32_t id);

  // The children that ended since the last call (without blocking).
  [[nodiscard]] std::vector<Exit> Reap();

  // Until a client reads keys on every node of the map and the coordinator answers admin calls.
  [[nodiscard]] Status WaitServing(int seconds);

  // The coordinator's admin progress (balanced, moves committed, epoch).
  [[nodiscard]] StatusOr<wire::AdminResponse> Progress();
  // Polls Progress until the coordinator reports the cluster balanced: OK, or kDeadlineExceeded
  // naming the last answer. `each_poll` (may be empty) runs before every poll (a test restarts
  // dead processes there).
  [[nodiscard]] Status AwaitBalanced(std::chrono::seconds timeout,
                                     const std::function<void()>& each_poll = {});
  // Polls `shoal status --json` until every node that holds buckets reports bytes (the balancer
  // plans with them): OK, or kDeadlineExceeded with the last status.
  [[nodiscard]] Status AwaitLoadReported(std::chrono::seconds timeout,
                                         const std::function<void()>& each_poll = {});
  // Until node `id` answers a call addressed through the coordinator's address book (a restarted
  // node listens on a new port and is known there once it checked in): OK, or kDeadlineExceeded.
  [[nodiscard]] Status AwaitReachable(uint32_t id, std::chrono::seconds timeout);
  // add-node / remove-node retry while the coordinator is unreachable, calling `hook` between
  // attempts (the test restarts dead processes there: the coordinator may die at a failpoint
  // right after accepting the request).
  void SetBetweenAttempts(std::function<void()> hook) { between_attempts_ = std::move(hook); }
  [[nodiscard]] Status AddNode(uint32_t id);
  // Replaces the failpoints of running coordinator `id` (`shoal failpoint`; "" switches them off).
  [[nodiscard]] Status SetCoordinatorFailpoints(uint32_t id, const std::string& spec);
  // The same for running node `id`.
  [[nodiscard]] Status SetNodeFailpoints(uint32_t id, const std::string& spec);
  [[nodiscard]] Status RemoveNode(uint32_t id);

  // Runs `shoal ARGS... --cluster URI` to its end, as `admin`; its stdout in *out. The exit
  // status.
  [[nodiscard]] int RunCli(const std::vector<std::string>& args, std::string* out);
  // The same with `security` (e.g. {"--insecure"}) instead of the admin certificate; its stderr
  // in *err.
  [[nodiscard]] int RunCliWith(const std::vector<std::string>& args,
                               const std::vector<std::string>& security, std::string* out,
                               std::string* err);

  // The coordinator's map and collections, as it answers GetMap (from memory).
  [[nodiscard]] StatusOr<transport::ClusterState> State();
  // The buckets each node reports holding (BucketLoad) that the map does not give it, and the
  // nodes that do not answer; empty when every node holds exactly its buckets.
  [[nodiscard]] std::string MapDisagreement();

  [[nodiscard]] std::string uri() const { return "shoal://" + coordinators(); }
  // The coordinators' addresses, comma-separated (the standby's after the first's).
  [[nodiscard]] std::string coordinators() const;
  // A client-only gRPC runtime (it serves nothing) that knows the coordinators, for a test's
  // own client::Client or admin calls.
  [[nodiscard]] StatusOr<std::unique_ptr<net::GrpcRuntime>> ClientRuntime() const;
  // Database::Connect's options for this cluster: the admin certificate (or plaintext).
  [[nodiscard]] ConnectOptions connect_options() const;
  // The TLS of a test's own runtime: the admin certificate (or plaintext).
  [[nodiscard]] net::TransportSecurity client_security() const;
  // The certificates of the processes and of `admin` (empty when the CA could not be made).
  [[nodiscard]] std::string certs_dir() const { return dir_ + "/certs"; }
  // The address of coordinator `id` (kCoordinator or kStandbyCoordinator).
  [[nodiscard]] std::string CoordinatorAddress(uint32_t id) const;
  // The address node `id` serves on (the first line of its stdout, rewritten at each start).
  [[nodiscard]] std::string NodeAddress(uint32_t id) const;
  [[nodiscard]] const std::string& dir() const { return dir_; }
  // The last lines of every log, for a failure message.
  [[nodiscard]] std::string LogTails(int lines) const;
  // True when the log of `id` holds `text`.
  [[nodiscard]] bool LogShows(uint32_t id, const std::string& text) const;
  // True when the log of `id` shows that failpoint `name` was hit.
  [[nodiscard]] bool LogShowsFailpoint(uint32_t id, const std::string& name) const;
  // The log of `id` from byte `from` on (LogSize, taken earlier, reads only what came after).
  [[nodiscard]] std::string Log(uint32_t id, size_t from = 0) const;
  [[nodiscard]] size_t LogSize(uint32_t id) const { return Log(id).size(); }

 private:
  struct Child {
    pid_t pid = -1;
    std::vector<std::string> args;
  };
  [[nodiscard]] std::string NameOf(uint32_t id) const;
  [[nodiscard]] Status Launch(uint32_t id, const std::vector<std::string>& args,
                              const std::string& failpoints);
  // Launch's two halves: start the process; wait until it printed the address it serves on.
  [[nodiscard]] Status Begin(uint32_t id, const std::vector<std::string>& args,
                             const std::string& failpoints);
  [[nodiscard]] Status AwaitListening(uint32_t id);
  [[nodiscard]] net::GrpcRuntime* Admin();
  [[nodiscard]] Status RunAdminCommand(const std::vector<std::string>& args);
  [[nodiscard]] std::vector<std::string> CoordinatorArgs(const std::string& data, uint32_t nodes,
                                                         uint32_t buckets) const;

  const std::string binary_;
  std::string dir_;
  std::string coordinator_address_;
  std::string standby_address_;
  std::string metadata_;  // --metadata of the coordinators ("" = embedded)
  int election_session_ms_ = 0;
  uint32_t replicas_ = 0;     // --replicas of the coordinators (0 = not passed)
  uint32_t min_in_sync_ = 0;  // set after the first start (0 = the default)
  std::map<uint32_t, Child> children_;
  std::unique_ptr<net::GrpcRuntime> admin_;
  std::function<void()> between_attempts_;
  bool keep_node_ports_ = false;
  bool insecure_ = false;
  bool remote_failpoints_ = true;                           // DisableRemoteFailpoints
  std::map<uint32_t, std::string> node_certs_;              // SetNodeCertsDir
  std::map<uint32_t, std::vector<std::string>> node_args_;  // SetNodeArgs
  Status certs_ = OkStatus();  // making the certificates; starts fail with it
  // --certs-dir or --insecure, appended to every process's arguments.
  [[nodiscard]] std::vector<std::string> SecurityArgs() const;
  [[nodiscard]] std::vector<std::string> CliSecurityArgs() const;
};

}  // namespace shoal::cluster_test
