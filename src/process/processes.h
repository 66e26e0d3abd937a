#pragma once

// The networked server roles: a coordinator process and a storage node process, each on its own
// GrpcRuntime (docs/design/network.md). `shoal coordinator` and `shoal node` run one of them
// until SIGTERM; tests start several in one process on loopback.
//
// Coordinator failover (zk:// metadata only; docs/design/network.md "Coordinator failover"):
// several coordinator processes may share one ZooKeeper path. Each runs a LeaderElection
// (keys coordinator/leader and coordinator/epoch); the leader runs the Coordinator on a
// FencedMetadataStore, so each of its metadata writes carries the election's fence and fails
// once a newer leader took over. A standby serves only to say so (kUnavailable naming the
// leader) and polls the election every election_poll; when the leader's session ends (its
// process died or was cut off for longer than election_session_timeout) a standby takes over and
// recovers interrupted moves from the move log, as after a restart. A leader that finds its
// session ended stops its Coordinator at once and becomes a standby again (with a new session).
// Events: coordinator.lead (leader_epoch), coordinator.standby (lost_epoch),
// coordinator.lead_failed (error).
// With the embedded store there is no election: the one process leads.
//
// Map watch: the leader answers Shoal.WatchMap from a MapWatchHub fed by its Coordinator; losing
// the lead (or Stop) ends every waiting watch with kUnavailable, and a standby answers it with
// UNAVAILABLE naming the leader, so watchers move on to the leader.
//
// Thread-safety: Start and Stop are called by the owner; the accessors are thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/coordinator/coordinator.h"
#include "src/metadata/fenced_metadata_store.h"
#include "src/metadata/leader_election.h"
#include "src/metadata/metadata_store.h"
#include "src/net/grpc_runtime.h"
#include "src/node/storage_health.h"
#include "src/node/storage_node.h"
#include "src/process/fail_stop.h"
#include "src/process/map_watch_hub.h"
#include "src/process/user_admin.h"
#include "src/security/cert_expiry.h"
#include "src/storage/store_options.h"

namespace shoal::process {

struct CoordinatorProcessOptions {
  std::string data_dir{};  // metadata in data_dir/metadata, the address book in data_dir/addresses
  std::string listen = "127.0.0.1:7400";
  // A new cluster only (the stored map wins on restart): nodes 1..initial_nodes and this many
  // buckets.
  uint32_t initial_nodes = 3;
  uint32_t buckets = 32;
  // A new cluster only: K, the copies of every bucket (1 <= K <= initial_nodes), and the fewest
  // in-sync copies a write is acknowledged with (1 <= min_in_sync <= K; 0: a majority of K).
  uint32_t replication_factor = 1;
  uint32_t min_in_sync = 0;
  bool sync = true;  // fsync metadata writes
  // Where the metadata lives: "embedded" (RocksDB in data_dir/metadata) or
  // "zk://HOST:PORT[,HOST:PORT...]/PATH" (a ZooKeeper ensemble, under the znode PATH).
  std::string metadata = "embedded";
  coordinator::CoordinatorOptions coordinator{};
  size_t max_message_bytes = net::kDefaultMaxMessageBytes;
  // Leader election (zk:// only). The session timeout bounds how long a dead leader holds the
  // role (ZooKeeper clamps it to [2, 20] x its tickTime).
  std::chrono::milliseconds election_session_timeout{4'000};
  std::chrono::milliseconds election_poll{100};
  // A new leader waits up to this long to learn the address of every node of the map (from the
  // nodes' heartbeats, which reach standbys too) before its Coordinator starts recovering moves.
  std::chrono::milliseconds learn_addresses_timeout{3'000};
  net::GrpcServerMode server_mode = net::GrpcServerMode::kSync;
  // Map watches held at once (docs/design/network.md "Map watch"); one more: kResourceExhausted.
  size_t max_map_watchers = kDefaultMaxMapWatchers;
  // TLS of its server and of its calls to nodes (docs/security.md); plaintext by default.
  net::TransportSecurity security{};
  // net::GrpcRuntimeOptions::remote_failpoints (`--enable-failpoints`).
  bool enable_failpoints = false;
};

class CoordinatorProcess {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<CoordinatorProcess>> Start(
      const CoordinatorProcessOptions& options);
  ~CoordinatorProcess();

  // Stops serving, ends the coordinator's tasks and closes the metadata store. Idempotent.
  void Stop();

  [[nodiscard]] std::string address() const { return runtime_->advertised_address(); }
  // The running Coordinator; only while leader() (a standby has none).
  [[nodiscard]] coordinator::Coordinator& coordinator() { return *current(); }
  [[nodiscard]] net::GrpcRuntime& runtime() { return *runtime_; }
  // True while this process leads (always with the embedded store).
  [[nodiscard]] bool leader() const { return current() != nullptr; }
  // The leader epoch of this process's current leadership (nullopt: a standby, or no election).
  [[nodiscard]] std::optional<uint64_t> leader_epoch() const;
  // Map watches waiting now.
  [[nodiscard]] size_t map_watchers() const { return watch_hub_->watchers(); }
  // Until this process leads, or `timeout` passed: whether it leads.
  [[nodiscard]] bool WaitLeader(std::chrono::milliseconds timeout);

 private:
  CoordinatorProcess() = default;
  [[nodiscard]] std::shared_ptr<coordinator::Coordinator> current() const;
  // Opens and starts the Coordinator (after winning the election, or at once without one).
  [[nodiscard]] Status Lead();
  void LoseLead();
  void ElectionLoop();
  void AnswerAdmin(const wire::AdminRequest& request, wire::AdminResponse* out);
  void AnswerWatch(const wire::WatchMapRequest& request, const std::function<bool()>& cancelled,
                   wire::WatchMapResponse* out);

  CoordinatorProcessOptions options_;
  std::unique_ptr<net::GrpcRuntime> runtime_;
  std::unique_ptr<MapWatchHub> watch_hub_;
  std::unique_ptr<metadata::MetadataStore> metadata_;
  std::unique_ptr<metadata::LeaderElection> election_;  // zk:// only
  // zk:// only: what each leadership's Coordinator writes through, fenced at that leadership's
  // epoch (a fixed check, so that tasks of an earlier leadership of this same process stay
  // fenced after it leads again). Kept until Stop: the Coordinators refer to them.
  std::vector<std::unique_ptr<metadata::FencedMetadataStore>> fenced_;
  std::thread election_thread_;
  std::unique_ptr<security::CertificateExpiryMonitor> expiry_;  // over TLS only
  // Watches the embedded metadata directory; its removal is logged (not a fail-stop).
  std::unique_ptr<FailStop> fail_stop_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // coordinator_ was set, or stopping_
  // Set while leading.
  std::shared_ptr<coordinator::Coordinator> coordinator_ ABSL_GUARDED_BY(mu_);
  // The store the leader writes the user table to (fenced under an election); set while leading.
  metadata::MetadataStore* users_store_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

struct NodeProcessOptions {
  // The node's id; 0 = the id stored in data_dir by an earlier start (data_dir/node-id).
  uint32_t id = 0;
  std::string data_dir{};
  std::string listen = "127.0.0.1:0";
  std::string advertise{};  // see net::GrpcRuntimeOptions::advertise
  std::string coordinator{};
  bool sync = false;  // fsync every acknowledged write
  size_t max_message_bytes = net::kDefaultMaxMessageBytes;
  net::GrpcServerMode server_mode = net::GrpcServerMode::kSync;
  // node::NodeOptions::background_nice: move work this many nice steps below requests (Linux).
  int background_nice = node::NodeOptions{}.background_nice;
  // storage::StoreOptions::min_free_disk_bytes: document writes stop (NO_SPACE) while they
  // would leave less free disk than this.
  uint64_t min_free_disk_bytes = storage::StoreOptions{}.min_free_disk_bytes;
  // node::StorageHealthOptions::max_sync_duration: the process stops (exit status 74) when a
  // WAL sync has not returned for this long; 0 = never.
  std::chrono::milliseconds max_sync_stall = node::StorageHealthOptions{}.max_sync_duration;
  // Calls its server handles at once, in all and per client address, and scan streams it serves
  // at once (docs/limits.md).
  net::CallLimits call_limits{};
  uint32_t max_streams = net::kDefaultMaxStreams;
  // TLS of its server and of its calls to the coordinator and other nodes (docs/security.md);
  // plaintext by default.
  net::TransportSecurity security{};
  // net::GrpcRuntimeOptions::remote_failpoints (`--enable-failpoints`).
  bool enable_failpoints = false;
};

class NodeProcess {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<NodeProcess>> Start(
      const NodeProcessOptions& options);
  ~NodeProcess();

  // Stops serving, waits for the node's handlers and closes its store. Idempotent.
  [[nodiscard]] Status Stop();

  [[nodiscard]] NodeId id() const { return node_->id(); }
  [[nodiscard]] std::string address() const { return runtime_->advertised_address(); }
  [[nodiscard]] node::StorageNode& node() { return *node_; }

 private:
  NodeProcess() = default;

  std::unique_ptr<net::GrpcRuntime> runtime_;
  std::shared_ptr<node::StorageNode> node_;
  std::unique_ptr<UserTableFollower> users_;                    // over TLS only
  std::unique_ptr<security::CertificateExpiryMonitor> expiry_;  // over TLS only
  std::unique_ptr<FailStop> fail_stop_;  // its store failed (node::StorageHealth): it stops
  bool stopped_ = false;
};

// Blocks SIGINT and SIGTERM in the calling thread (call before any thread starts, so every
// thread inherits the mask), then WaitForTermination returns the signal once one arrives.
void BlockTerminationSignals();
[[nodiscard]] int WaitForTermination();

}  // namespace shoal::process
