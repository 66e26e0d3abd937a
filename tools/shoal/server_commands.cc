// `shoal coordinator` and `shoal node`: the processes of a networked cluster (`shoal local`,
// which runs them as children: local_command.cc).

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/cluster/replication_setting.h"
#include "src/common/log.h"
#include "src/process/processes.h"
#include "tools/shoal/local_security.h"
#include "tools/shoal/local_supervisor.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/server_flags.h"

namespace shoal::tools {

void AddLogOptions(CLI::App* command, LogFlags* flags) {
  command->add_option("--log-level", flags->level, "debug, info, warning or error")
      ->capture_default_str();
  command->add_option("--log-format", flags->format, "text or json (one object per line)")
      ->capture_default_str();
}

bool CheckReplicaFlags(uint32_t replicas, uint32_t nodes, const char* nodes_flag,
                       uint32_t min_in_sync) {
  const Status setting = cluster::CheckReplicationSetting(replicas, min_in_sync, nodes);
  if (setting.ok()) return true;
  std::fprintf(stderr, "error: --replicas %u with %s %u: %s\n", replicas, nodes_flag, nodes,
               std::string(MessageOf(setting)).c_str());
  return false;
}

bool StartLog(const LogFlags& flags, std::string process) {
  auto level = log::ParseLevel(flags.level);
  auto format = log::ParseFormat(flags.format);
  const Status status = !level.ok() ? level.status() : format.status();
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
    return false;
  }
  log::Configure(
      {.min_level = *level, .format = *format, .process = std::move(process), .sink = stderr});
  return true;
}

void AddFailpointOption(CLI::App* command, bool* enable) {
  command->add_flag("--enable-failpoints", *enable,
                    "Let `shoal failpoint` replace this process's failpoints over the network "
                    "(tests only: a failpoint can crash or stall the process)");
}

namespace {

// A networked cluster's bucket split and merge thresholds until `shoal thresholds` changes them
// (docs/design/replication.md §7): TiKV splits regions at 256 MiB, CockroachDB ranges at 512 MiB;
// at the default move throttle (16 MiB/s) a 256 MiB bucket copies in 16 s, the time a
// re-replicated bucket runs short of a copy. Buckets merge below 64 MiB together (a quarter of
// the split size, so that a split's halves do not merge back) but never below the cluster's
// initial bucket count (--buckets), which a young cluster needs to spread over the nodes that
// join later.
constexpr uint64_t kDefaultSplitMib = 256;
constexpr uint64_t kDefaultMergeMib = 64;

struct CoordinatorFlags {
  std::string data;
  std::string listen = "127.0.0.1:7400";
  uint32_t initial_nodes = 3;
  uint32_t buckets = 32;
  uint32_t replicas = 1;
  uint32_t min_in_sync = 0;  // 0: a majority of --replicas
  std::string metadata = "embedded";
  uint32_t election_session_ms = 4'000;
  std::string grpc_server = "sync";
  double max_move_mib_per_s =
      static_cast<double>(coordinator::kDefaultMoveBytesPerSecond) / (1 << 20);
  uint64_t split_mib = kDefaultSplitMib;
  uint64_t merge_mib = kDefaultMergeMib;
  bool no_sync = false;
  bool json = false;
  bool enable_failpoints = false;
  LogFlags log;
  ServerSecurityFlags security;
};

struct NodeFlags {
  std::string data;
  std::string listen = "127.0.0.1:0";
  std::string advertise;
  std::string coordinator;
  uint32_t id = 0;
  std::string grpc_server = "sync";
  bool no_sync = false;
  int background_nice = process::NodeProcessOptions{}.background_nice;
  uint64_t min_free_disk_mib = process::NodeProcessOptions{}.min_free_disk_bytes >> 20;
  int64_t max_sync_stall_ms = process::NodeProcessOptions{}.max_sync_stall.count();
  net::CallLimits calls;
  uint32_t max_streams = net::kDefaultMaxStreams;
  bool json = false;
  bool enable_failpoints = false;
  LogFlags log;
  ServerSecurityFlags security;
};

void PrintReady(bool json, const std::string& role, const std::string& address) {
  if (json) {
    std::printf("%s\n", nlohmann::json{{"role", role}, {"listen", address}}.dump().c_str());
  } else {
    std::printf("%s listening on %s\n", role.c_str(), address.c_str());
  }
  std::fflush(stdout);
}

// The process's TransportSecurity, or nullopt after printing why there is none (exit code 2).
std::optional<net::TransportSecurity> SecurityOrExplain(const ServerSecurityFlags& flags) {
  auto security = ServerSecurity(flags);
  if (!security.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(MessageOf(security.status())).c_str());
    return std::nullopt;
  }
  return *security;
}

int RunCoordinator(const CoordinatorFlags& flags) {
  if (!StartLog(flags.log, "coordinator")) return 2;
  auto security = SecurityOrExplain(flags.security);
  if (!security.has_value()) return 2;
  RouteGrpcLog();
  WarnInsecure(flags.security);
  process::BlockTerminationSignals();
  process::CoordinatorProcessOptions options;
  options.security = *security;
  options.enable_failpoints = flags.enable_failpoints;
  options.data_dir = flags.data;
  options.listen = flags.listen;
  options.initial_nodes = flags.initial_nodes;
  options.buckets = flags.buckets;
  if (!CheckReplicaFlags(flags.replicas, flags.initial_nodes, "--initial-nodes",
                         flags.min_in_sync)) {
    return 2;
  }
  options.replication_factor = flags.replicas;
  options.min_in_sync = flags.min_in_sync;
  options.sync = !flags.no_sync;
  options.metadata = flags.metadata;
  options.election_session_timeout = std::chrono::milliseconds(flags.election_session_ms);
  options.coordinator.max_bytes_per_second =
      static_cast<uint64_t>(flags.max_move_mib_per_s * static_cast<double>(1 << 20));
  options.coordinator.split_bytes = flags.split_mib << 20;
  options.coordinator.merge_bytes = flags.merge_mib << 20;
  options.coordinator.min_buckets = flags.buckets;
  if (Status valid =
          coordinator::ValidateThresholds({.split_bytes = options.coordinator.split_bytes,
                                           .merge_bytes = options.coordinator.merge_bytes});
      !valid.ok()) {
    std::fprintf(stderr, "error: %s\n", valid.ToString().c_str());
    return 2;
  }
  auto server_mode = net::ParseGrpcServerMode(flags.grpc_server);
  if (!server_mode.ok()) {
    std::fprintf(stderr, "error: %s\n", server_mode.status().ToString().c_str());
    return 2;
  }
  options.server_mode = *server_mode;
  auto started = process::CoordinatorProcess::Start(options);
  if (!started.ok()) {
    log::Error("process.fail", {{"error", started.status().ToString()}});
    std::fprintf(stderr, "error: %s\n", started.status().ToString().c_str());
    return 1;
  }
  log::Info("process.start", {{"role", "coordinator"},
                              {"listen", (*started)->address()},
                              {"data", flags.data},
                              {"metadata", flags.metadata},
                              {"tls", !flags.security.insecure},
                              {"remote_failpoints", flags.enable_failpoints},
                              {"sync", !flags.no_sync}});
  PrintReady(flags.json, "coordinator", (*started)->address());
  const int signal = process::WaitForTermination();
  log::Info("process.stop", {{"signal", signal}});
  (*started)->Stop();
  log::Info("process.stopped");
  return 0;
}

int RunNode(const NodeFlags& flags) {
  if (!StartLog(flags.log, flags.id == 0 ? "node" : fmt::format("node-{}", flags.id))) return 2;
  auto security = SecurityOrExplain(flags.security);
  if (!security.has_value()) return 2;
  RouteGrpcLog();
  WarnInsecure(flags.security);
  process::BlockTerminationSignals();
  process::NodeProcessOptions options;
  options.security = *security;
  options.enable_failpoints = flags.enable_failpoints;
  options.id = flags.id;
  options.data_dir = flags.data;
  options.listen = flags.listen;
  options.advertise = flags.advertise;
  options.coordinator = flags.coordinator;
  options.sync = !flags.no_sync;
  options.background_nice = flags.background_nice;
  options.min_free_disk_bytes = flags.min_free_disk_mib << 20;
  options.max_sync_stall = std::chrono::milliseconds(flags.max_sync_stall_ms);
  options.call_limits = flags.calls;
  options.max_streams = flags.max_streams;
  auto server_mode = net::ParseGrpcServerMode(flags.grpc_server);
  if (!server_mode.ok()) {
    std::fprintf(stderr, "error: %s\n", server_mode.status().ToString().c_str());
    return 2;
  }
  options.server_mode = *server_mode;
  auto started = process::NodeProcess::Start(options);
  if (!started.ok()) {
    log::Error("process.fail", {{"error", started.status().ToString()}});
    std::fprintf(stderr, "error: %s\n", started.status().ToString().c_str());
    return 1;
  }
  const uint32_t id = (*started)->id().value();
  // A node whose id was assigned at its first start learns its name only now.
  if (flags.id == 0 && !StartLog(flags.log, fmt::format("node-{}", id))) return 2;
  log::Info("process.start", {{"role", "node"},
                              {"node", id},
                              {"listen", (*started)->address()},
                              {"coordinator", flags.coordinator},
                              {"data", flags.data},
                              {"tls", !flags.security.insecure},
                              {"remote_failpoints", flags.enable_failpoints},
                              {"sync", !flags.no_sync}});
  PrintReady(flags.json, fmt::format("node {}", id), (*started)->address());
  const int signal = process::WaitForTermination();
  log::Info("process.stop", {{"signal", signal}});
  Status status = (*started)->Stop();
  if (!status.ok()) {
    log::Error("process.fail", {{"error", status.ToString()}});
    std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
    return 1;
  }
  log::Info("process.stopped");
  return 0;
}

}  // namespace

void AddServerCommands(CLI::App& app) {
  auto coordinator = std::make_shared<CoordinatorFlags>();
  CLI::App* c = app.add_subcommand("coordinator", "Run a coordinator process until SIGTERM");
  c->add_option("--data", coordinator->data, "Data directory (metadata, address book)")->required();
  c->add_option("--listen", coordinator->listen, "HOST:PORT to serve on")->capture_default_str();
  c->add_option("--initial-nodes", coordinator->initial_nodes,
                "A new cluster's nodes (ids 1..N); a restart keeps the stored map")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  c->add_option("--buckets", coordinator->buckets, "A new cluster's buckets")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  c->add_option("--replicas", coordinator->replicas,
                "A new cluster's copies of every bucket (K, at most --initial-nodes). With K > 1 "
                "a node's loss fails over and its copies are rebuilt")
      ->capture_default_str()
      ->check(CLI::Range(1u, 7u));
  c->add_option("--min-in-sync", coordinator->min_in_sync,
                "A new cluster's fewest in-sync copies a write is acknowledged with (at most "
                "--replicas; default a majority of them). Below it writes are refused with "
                "NOT_ENOUGH_REPLICAS and reads go on; `shoal replicas --set K --min-in-sync M` "
                "changes it online")
      ->check(CLI::Range(1u, 7u));
  c->add_option("--metadata", coordinator->metadata,
                "Metadata store: embedded (in --data) or zk://HOST:PORT[,HOST:PORT...]/PATH")
      ->capture_default_str();
  c->add_option("--election-session-ms", coordinator->election_session_ms,
                "With zk:// metadata: the leader's ZooKeeper session timeout, i.e. how long a dead "
                "leader holds the lead before a standby coordinator takes over")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600'000u));
  c->add_option("--grpc-server", coordinator->grpc_server, "gRPC server API: sync or callback")
      ->check(CLI::IsMember({"sync", "callback"}))
      ->capture_default_str();
  c->add_option("--max-move-mib-per-s", coordinator->max_move_mib_per_s,
                "Move throttle: after each bucket move, pause as long as its bytes take at this "
                "rate (0: unthrottled; trades time to balance for client throughput)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  c->add_option("--split-mib", coordinator->split_mib,
                "A new cluster's split threshold: buckets above it split (0: never); "
                "`shoal thresholds` changes it later")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{64} << 10));
  c->add_option("--merge-mib", coordinator->merge_mib,
                "A new cluster's merge threshold: adjacent buckets together below it merge, "
                "never below --buckets buckets (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{64} << 10));
  c->add_flag("--no-sync", coordinator->no_sync, "Do not fsync metadata writes");
  c->add_flag("--json", coordinator->json, "Print the listen address as JSON");
  AddFailpointOption(c, &coordinator->enable_failpoints);
  AddServerSecurityOptions(c, &coordinator->security);
  AddLogOptions(c, &coordinator->log);
  c->callback([coordinator] { std::exit(RunCoordinator(*coordinator)); });

  auto node = std::make_shared<NodeFlags>();
  CLI::App* n = app.add_subcommand("node", "Run a storage node process until SIGTERM");
  n->add_option("--data", node->data, "Data directory (documents, move files, node id)")
      ->required();
  n->add_option("--listen", node->listen, "HOST:PORT to serve on (port 0: any free port)")
      ->capture_default_str();
  n->add_option("--advertise", node->advertise,
                "HOST:PORT others reach this node on (default: the listen address)");
  n->add_option(
       "--coordinator", node->coordinator,
       "HOST:PORT of the coordinator; several, comma-separated, under coordinator failover")
      ->required();
  n->add_option("--id", node->id, "Node id (stored in the data directory on first start)");
  n->add_option("--grpc-server", node->grpc_server, "gRPC server API: sync or callback")
      ->check(CLI::IsMember({"sync", "callback"}))
      ->capture_default_str();
  n->add_flag("--no-sync", node->no_sync, "Do not fsync every acknowledged write");
  n->add_option("--background-nice", node->background_nice,
                "Run the data work of bucket moves this many nice steps below requests "
                "(Linux; 0: off)")
      ->check(CLI::Range(0, node::kMaxBackgroundNice))
      ->capture_default_str();
  n->add_option("--min-free-disk-mib", node->min_free_disk_mib,
                "Refuse document writes (NO_SPACE) while they would leave less free disk than "
                "this under --data (0: off)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->capture_default_str();
  n->add_option("--max-sync-stall-ms", node->max_sync_stall_ms,
                "Stop the node (exit status 74) when a WAL sync has not returned for this long: "
                "a stalled disk, whose buckets fail over to their other copies (0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}))
      ->capture_default_str();
  n->add_option("--max-calls", node->calls.max_calls,
                "Calls handled at once; one more is refused with RESOURCE_EXHAUSTED "
                "(docs/limits.md)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  n->add_option("--max-calls-per-address", node->calls.max_calls_per_address,
                "Calls handled at once from one client address (host); one more is refused with "
                "RESOURCE_EXHAUSTED (docs/limits.md)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  n->add_option("--max-streams", node->max_streams,
                "Scan streams served at once; one more is refused with RESOURCE_EXHAUSTED "
                "(docs/limits.md)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  n->add_flag("--json", node->json, "Print the listen address as JSON");
  AddFailpointOption(n, &node->enable_failpoints);
  AddServerSecurityOptions(n, &node->security);
  AddLogOptions(n, &node->log);
  n->callback([node] { std::exit(RunNode(*node)); });

  AddLocalCommand(app);
}

}  // namespace shoal::tools
