// `shoal local`: a coordinator and N nodes of a networked cluster as child processes on
// loopback, supervised (restarted when one dies) until Ctrl-C.

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
#include "src/cluster/shard_map.h"
#include "src/process/processes.h"
#include "tools/shoal/local_existing.h"
#include "tools/shoal/local_security.h"
#include "tools/shoal/local_supervisor.h"
#include "tools/shoal/net_commands.h"
#include "tools/shoal/server_flags.h"

namespace shoal::tools {
namespace {

struct LocalFlags {
  uint32_t nodes = 3;
  std::string data = "shoal-local";
  int base_port = 7400;
  uint32_t buckets = 32;
  uint32_t replicas = 0;     // 0: 3 with 3 nodes or more, else 1
  uint32_t min_in_sync = 0;  // 0: a majority of --replicas
  std::string metadata = "embedded";
  bool json = false;
  bool no_restart = false;
  uint32_t restart_delay_ms = 1000;
  bool insecure = false;
  bool enable_failpoints = false;  // passed to every child
  AuthLimitFlags auth;             // passed to every child
  LogFlags log;
};

// Starts `args` as a child process of this same binary; its output goes to `log`.
pid_t Launch(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // The child: default signal handling, output to its log, then exec.
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  if (std::freopen(log.c_str(), "a", stdout) == nullptr ||
      std::freopen(log.c_str(), "a", stderr) == nullptr) {
    _exit(127);
  }
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  _exit(127);
}

// The first of the `count` ports from `base` on 127.0.0.1 that cannot be bound (a process
// listens on it).
std::optional<int> FirstPortInUse(int base, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    const int port = base + static_cast<int>(i);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return std::nullopt;  // cannot tell: the children will say
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool bound =
        ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (!bound) return port;
  }
  return std::nullopt;
}

nlohmann::json NodeIds(const std::vector<NodeId>& nodes) {
  nlohmann::json ids = nlohmann::json::array();
  for (NodeId node : nodes) ids.push_back(node.value());
  return ids;
}

// Waits up to `timeout` for the cluster to answer a client, each node included.
bool WaitUntilServing(const std::string& coordinator, const ConnectOptions& connect, uint32_t nodes,
                      std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto db = Database::Connect(coordinator, connect);
    if (db.ok()) {
      auto probe = (*db)->CreateCollection("_probe");
      // Reads of keys spread over the hash space reach every node that holds a bucket.
      bool all = probe.ok();
      for (uint32_t i = 0; all && i < nodes * 16; ++i) {
        auto doc = probe->Get(fmt::format("probe-{}", i));
        all = doc.ok() || doc.status().code() == StatusCode::kNotFound;
      }
      if (all) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

int RunLocal(const LocalFlags& given) {
  LocalFlags flags = given;
  if (flags.replicas == 0) flags.replicas = flags.nodes >= 3 ? 3 : 1;
  if (!CheckReplicaFlags(flags.replicas, flags.nodes, "--nodes", flags.min_in_sync)) return 2;
  if (auto limits = AuthenticatorOptionsOf(flags.auth); !limits.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(MessageOf(limits.status())).c_str());
    return 2;
  }
  process::BlockTerminationSignals();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // Another cluster on these ports would answer this one's checks (and the user's credentials
  // for the address would be rewritten for a cluster that never serves): refused first.
  if (const std::optional<int> taken = FirstPortInUse(flags.base_port, flags.nodes + 1)) {
    std::fprintf(stderr,
                 "error: 127.0.0.1:%d is in use (another shoal local?): a cluster needs ports %d "
                 "to %d free; pick others with --base-port (and its own --data)\n",
                 *taken, flags.base_port, flags.base_port + static_cast<int>(flags.nodes));
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.data, ec);
  if (ec) {
    std::fprintf(stderr, "error: create %s: %s\n", flags.data.c_str(), ec.message().c_str());
    return 1;
  }
  const std::string coordinator = fmt::format("127.0.0.1:{}", flags.base_port);
  auto security = PrepareLocalSecurity(flags.data, coordinator, flags.insecure);
  if (!security.ok()) {
    std::fprintf(stderr, "error: certificates in %s/certs: %s\n", flags.data.c_str(),
                 security.status().ToString().c_str());
    return 1;
  }
  // What every child is given beside its own role's flags.
  std::vector<std::string> shared_args = ChildSecurityArgs(*security);
  if (flags.enable_failpoints) shared_args.push_back("--enable-failpoints");
  for (std::string& arg : AuthLimitArgs(flags.auth)) shared_args.push_back(std::move(arg));
  using Clock = LocalSupervisor::Clock;
  LocalSupervisor supervisor(
      SupervisorOptions{.restart = !flags.no_restart,
                        .restart_delay = std::chrono::milliseconds(flags.restart_delay_ms)},
      [](const ChildSpec& spec) { return Launch(spec.args, spec.log); },
      [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
  std::vector<std::string> coordinator_args = {"shoal",           "coordinator",
                                               "--data",          flags.data + "/coordinator",
                                               "--listen",        coordinator,
                                               "--initial-nodes", std::to_string(flags.nodes),
                                               "--buckets",       std::to_string(flags.buckets),
                                               "--replicas",      std::to_string(flags.replicas),
                                               "--metadata",      flags.metadata,
                                               "--log-level",     flags.log.level,
                                               "--log-format",    flags.log.format};
  if (flags.min_in_sync != 0) {
    coordinator_args.insert(coordinator_args.end(),
                            {"--min-in-sync", std::to_string(flags.min_in_sync)});
  }
  coordinator_args.insert(coordinator_args.end(), shared_args.begin(), shared_args.end());
  supervisor.Start({.name = "coordinator",
                    .args = std::move(coordinator_args),
                    .log = flags.data + "/coordinator.log"},
                   Clock::now());
  std::vector<std::string> node_addresses;
  for (uint32_t i = 1; i <= flags.nodes; ++i) {
    const std::string listen = fmt::format("127.0.0.1:{}", flags.base_port + static_cast<int>(i));
    node_addresses.push_back(listen);
    std::vector<std::string> args = {
        "shoal",           "node",          "--id",
        std::to_string(i), "--data",        fmt::format("{}/node-{}", flags.data, i),
        "--listen",        listen,          "--coordinator",
        coordinator,       "--log-level",   flags.log.level,
        "--log-format",    flags.log.format};
    args.insert(args.end(), shared_args.begin(), shared_args.end());
    supervisor.Start({.name = fmt::format("node {}", i),
                      .args = std::move(args),
                      .log = fmt::format("{}/node-{}.log", flags.data, i)},
                     Clock::now());
  }
  bool serving = WaitUntilServing(coordinator, LocalConnectOptions(*security), flags.nodes,
                                  std::chrono::seconds(20));
  // A data directory that holds a cluster keeps its own setting and members (local_existing.h).
  // Read whenever the coordinator answers: a cluster some of whose buckets have no copy on the
  // nodes started does not serve every key, and the output must say why.
  uint32_t replicas = flags.replicas;
  uint32_t min_in_sync = flags.min_in_sync != 0
                             ? flags.min_in_sync
                             : cluster::ShardMap::DefaultMinInSync(flags.replicas);
  LocalDescription described;
  // One client of the cluster for the map, then the password.
  StatusOr<std::unique_ptr<net::GrpcRuntime>> runtime = StartLocalRuntime(*security, coordinator);
  StatusOr<LocalDescription> read =
      runtime.ok() ? DescribeLocalCluster(**runtime, {.nodes = flags.nodes,
                                                      .replicas = given.replicas,
                                                      .min_in_sync = given.min_in_sync})
                   : StatusOr<LocalDescription>(runtime.status());
  if (read.ok()) {
    described = std::move(*read);
    replicas = described.view.replicas;
    min_in_sync = described.view.min_in_sync;
    // Before "ready": the credentials files carry the password, so it must be stored first;
    // then the user's credentials file may name this cluster.
    if (Status set = SetLocalAdminPassword(*security, **runtime); !set.ok()) {
      std::fprintf(stderr, "error: setting the password of admin: %s\n", set.ToString().c_str());
      serving = false;
      security->registration_error = "the password of admin could not be set";
    } else {
      RegisterLocalCluster(&*security);
    }
  } else {
    serving = false;
    described.lines.push_back(
        fmt::format("map          could not be read: {}", std::string(MessageOf(read.status()))));
    security->registration_error = "the coordinator did not answer";
  }
  if (runtime.ok()) (*runtime)->Shutdown();
  const auto pid_of = [&](const std::string& name) { return supervisor.PidOf(name).value_or(0); };
  if (flags.json) {
    nlohmann::json pids{{"coordinator", pid_of("coordinator")}};
    for (uint32_t i = 1; i <= flags.nodes; ++i) {
      pids[fmt::format("node {}", i)] = pid_of(fmt::format("node {}", i));
    }
    nlohmann::json out{{"cluster", "shoal://" + coordinator},
                       {"coordinator", coordinator},
                       {"nodes", node_addresses},
                       {"pids", pids},
                       {"data", flags.data},
                       {"replicas", replicas},
                       {"min_in_sync", min_in_sync},
                       {"not_members", NodeIds(described.view.not_members)},
                       {"not_started", NodeIds(described.view.not_started)},
                       {"notes", described.lines},
                       {"tls", security->secure},
                       {"certs_dir", security->certs_dir},
                       {"credentials", security->credentials_file},
                       {"registered_in", security->registered_in},
                       {"serving", serving}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("coordinator  %s (pid %d)\n", coordinator.c_str(), pid_of("coordinator"));
    for (size_t i = 0; i < node_addresses.size(); ++i) {
      std::printf("node %-7zu %s (pid %d)\n", i + 1, node_addresses[i].c_str(),
                  pid_of(fmt::format("node {}", i + 1)));
    }
    std::printf("data         %s (logs: %s/*.log)\n", flags.data.c_str(), flags.data.c_str());
    if (replicas > 1 && min_in_sync < replicas) {
      const uint32_t spare = replicas - min_in_sync;
      std::printf(
          "copies       %u of every bucket, on different nodes; a write needs %u "
          "(min_in_sync), so writes go on with any %u node%s down\n",
          replicas, min_in_sync, spare, spare == 1 ? "" : "s");
    } else if (replicas > 1) {
      std::printf(
          "copies       %u of every bucket, on different nodes; a write needs all %u "
          "(min_in_sync): a node down stops writes to its buckets until it returns or they are "
          "copied elsewhere\n",
          replicas, min_in_sync);
    } else {
      std::printf(
          "copies       1 of every bucket: a node lost takes its buckets with it "
          "(--replicas 3 keeps three)\n");
    }
    for (const auto& line : described.lines) std::printf("%s\n", line.c_str());
    for (const auto& line : LocalSecurityLines(*security, coordinator)) {
      std::printf("%s\n", line.c_str());
    }
    std::printf(serving ? "cluster      shoal://%s ready; Ctrl-C stops it\n"
                : !described.view.not_started.empty()
                    ? "cluster      shoal://%s NOT serving every key: buckets without a copy on "
                      "the nodes started are unavailable (above); Ctrl-C stops it\n"
                    : "cluster      shoal://%s NOT serving yet (see the logs); Ctrl-C stops it\n",
                coordinator.c_str());
  }
  std::fflush(stdout);

  // Until a signal. A child that exits does not stop the others; the supervisor restarts it
  // (unless --no-restart) and the loop wakes up when a restart is due.
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int exit_code = 0;
  while (true) {
    const Clock::time_point now = Clock::now();
    const std::optional<Clock::time_point> due = supervisor.RestartDue(now);
    if (supervisor.AllGone()) {
      std::printf("local: every process is down\n");
      exit_code = 1;
      break;
    }
    const auto wait =
        due.has_value() ? std::max(*due - now, Clock::duration::zero()) : std::chrono::seconds(1);
    const auto wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    const timespec timeout{.tv_sec = static_cast<time_t>(wait_ns / 1'000'000'000),
                           .tv_nsec = static_cast<long>(wait_ns % 1'000'000'000)};
    const int signal = ::sigtimedwait(&set, nullptr, &timeout);
    if (signal < 0) continue;  // the restart is due, or an interruption
    if (signal != SIGCHLD) break;
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0)
      supervisor.OnExit(pid, status, Clock::now());
  }
  // Nodes first, then the coordinator, each with SIGTERM; SIGKILL whatever hangs.
  std::vector<pid_t> children = supervisor.Running();
  for (auto it = children.rbegin(); it != children.rend(); ++it) ::kill(*it, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid, SIGKILL);
        (void)::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::printf("local: stopped\n");
  return exit_code;
}

}  // namespace

void AddLocalCommand(CLI::App& app) {
  auto local = std::make_shared<LocalFlags>();
  CLI::App* l = app.add_subcommand(
      "local", "A coordinator and N nodes as child processes on loopback, until Ctrl-C");
  l->add_option("--nodes", local->nodes, "Storage nodes")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  l->add_option("--data", local->data, "Data directory of the whole cluster")
      ->capture_default_str();
  l->add_option("--base-port", local->base_port,
                "Coordinator port; node i listens on base-port + i")
      ->capture_default_str()
      ->check(CLI::Range(1024, 65000));
  l->add_option("--buckets", local->buckets, "A new cluster's buckets")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  l->add_option("--replicas", local->replicas,
                "Copies of every bucket (K, at most --nodes; default 3 with 3 nodes or more, "
                "else 1). With K > 1 a node's loss fails over and its copies are rebuilt")
      ->check(CLI::Range(1u, 7u));
  l->add_option("--min-in-sync", local->min_in_sync,
                "Fewest in-sync copies a write is acknowledged with (at most --replicas; default "
                "a majority of them)")
      ->check(CLI::Range(1u, 7u));
  l->add_option("--metadata", local->metadata,
                "The coordinator's metadata store: embedded or zk://HOST:PORT/PATH")
      ->capture_default_str();
  l->add_flag("--json", local->json, "Print the addresses as one JSON object");
  l->add_flag("--no-restart", local->no_restart,
              "Leave a process that dies down (the others keep serving either way)");
  l->add_option("--restart-delay-ms", local->restart_delay_ms,
                "How long after a process dies it is started again")
      ->capture_default_str()
      ->check(CLI::Range(0u, 600'000u));
  l->add_flag("--insecure", local->insecure,
              "No TLS and no certificates: plaintext, and anyone who reaches the ports can read "
              "and change everything (clients then need --insecure too)");
  AddFailpointOption(l, &local->enable_failpoints);
  AddAuthLimitOptions(l, &local->auth);
  AddLogOptions(l, &local->log);
  l->callback([local] { std::exit(RunLocal(*local)); });
}

}  // namespace shoal::tools
