#include "tests/cluster/process_cluster.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/security/certificates.h"
#include "src/security/credentials_file.h"
#include "src/transport/failpoints.h"

extern char** environ;

namespace shoal::cluster_test {
namespace {

constexpr transport::Micros kAdminTimeout = 5'000'000;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The environment of a child: ours without any SHOAL_FAILPOINTS, plus `failpoints` if given.
std::vector<std::string> ChildEnvironment(const std::string& failpoints) {
  std::vector<std::string> env;
  const std::string prefix = std::string(transport::Failpoints::kEnvironmentVariable) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  }
  if (!failpoints.empty()) env.push_back(prefix + failpoints);
  return env;
}

// fork + exec of `binary` with `args`; stdout to `out` (truncated), stderr to `log` (appended).
// The child dies with the forking thread.
pid_t Spawn(const std::string& binary, const std::vector<std::string>& args,
            const std::vector<std::string>& env, const std::string& out, const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out_fd < 0 || log_fd < 0) ::_exit(127);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(binary.c_str(), argv.data(), envp.data());
  ::_exit(127);
}

}  // namespace

std::string ShoalBinary() {
  const char* binary = std::getenv("SHOAL_BINARY");
  return binary != nullptr ? binary : SHOAL_DEFAULT_BINARY;
}

ProcessCluster::ProcessCluster(std::string binary) : binary_(std::move(binary)) {
  std::string pattern = (std::filesystem::temp_directory_path() / "shoal-fault-XXXXXX").string();
  if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
  certs_ = security::CreateCa({.certs_dir = certs_dir()});
  if (certs_.ok()) certs_ = security::CreateNodeCert({.certs_dir = certs_dir(), .hosts = {}});
  if (certs_.ok()) {
    certs_ = security::CreateClientCert(
        {.certs_dir = certs_dir(), .user = std::string(security::kDefaultUser)});
  }
}

std::vector<std::string> ProcessCluster::SecurityArgs() const {
  if (insecure_) return {"--insecure"};
  // Reloaded every second: the rotation test replaces the files under running processes.
  return {"--certs-dir", certs_dir(), "--cert-reload-seconds", "1"};
}

std::vector<std::string> ProcessCluster::CliSecurityArgs() const {
  if (insecure_) return {"--insecure"};
  return {"--certs-dir", certs_dir()};
}

ConnectOptions ProcessCluster::connect_options() const {
  ConnectOptions options;
  options.insecure = insecure_;
  if (!insecure_) {
    options.certs_dir = certs_dir();
    options.user = std::string(security::kDefaultUser);
  }
  return options;
}

net::TransportSecurity ProcessCluster::client_security() const {
  if (insecure_) return {};
  return {.tls = security::ClientTlsFiles(certs_dir(), security::kDefaultUser)};
}

ProcessCluster::~ProcessCluster() {
  admin_.reset();
  for (auto& [id, child] : children_) {
    if (child.pid > 0) Kill(id);
  }
  if (!dir_.empty() && std::getenv("SHOAL_FAULT_KEEP") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string ProcessCluster::NameOf(uint32_t id) const {
  if (id == kCoordinator) return "coordinator";
  if (id == kStandbyCoordinator) return "coordinator-2";
  return fmt::format("node-{}", id);
}

Status ProcessCluster::Launch(uint32_t id, const std::vector<std::string>& args,
                              const std::string& failpoints) {
  SHOAL_RETURN_IF_ERROR(Begin(id, args, failpoints));
  return AwaitListening(id);
}

Status ProcessCluster::Begin(uint32_t id, const std::vector<std::string>& args,
                             const std::string& failpoints) {
  if (dir_.empty()) return InternalError("no temporary directory");
  SHOAL_RETURN_IF_ERROR(Prefixed(certs_, "certificates"));
  const std::string out = fmt::format("{}/{}.out", dir_, NameOf(id));
  const std::string log = fmt::format("{}/{}.log", dir_, NameOf(id));
  {
    std::ofstream mark(log, std::ios::app);
    mark << "--- start" << (failpoints.empty() ? "" : " with SHOAL_FAILPOINTS=" + failpoints)
         << '\n';
  }
  const pid_t pid = Spawn(binary_, args, ChildEnvironment(failpoints), out, log);
  if (pid < 0) return InternalError("fork failed");
  children_[id] = Child{.pid = pid, .args = args};
  return OkStatus();
}

Status ProcessCluster::AwaitListening(uint32_t id) {
  const std::string out = fmt::format("{}/{}.out", dir_, NameOf(id));
  const pid_t pid = children_[id].pid;
  // The first stdout line names the bound address.
  for (int i = 0; i < 200; ++i) {
    const std::string text = ReadFile(out);
    if (const size_t at = text.find("\"listen\":\""); at != std::string::npos) {
      const size_t begin = at + 10;
      const size_t end = text.find('"', begin);
      if (end != std::string::npos) {
        const std::string bound = text.substr(begin, end - begin);
        if (id == kCoordinator) coordinator_address_ = bound;
        if (id == kStandbyCoordinator) standby_address_ = bound;
        // A node's listen address stays at index 6 (StartNode).
        if (id != kCoordinator && id != kStandbyCoordinator && keep_node_ports_) {
          children_[id].args[6] = bound;
        }
        return OkStatus();
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      children_[id].pid = -1;
      return UnavailableError(fmt::format("{} exited at start (status {})", NameOf(id), status));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill(id);
  return DeadlineExceededError(fmt::format("{} did not start", NameOf(id)));
}

void ProcessCluster::UseZooKeeper(std::string uri, int election_session_ms) {
  metadata_ = std::move(uri);
  election_session_ms_ = election_session_ms;
}

void ProcessCluster::SetReplication(uint32_t replicas, uint32_t min_in_sync) {
  replicas_ = replicas;
  min_in_sync_ = min_in_sync;
}

std::vector<std::string> ProcessCluster::CoordinatorArgs(const std::string& data, uint32_t nodes,
                                                         uint32_t buckets) const {
  // The listen address stays at index 4: restarts replace it with the bound one.
  std::vector<std::string> args = {"coordinator",
                                   "--data",
                                   data,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--initial-nodes",
                                   std::to_string(nodes),
                                   "--buckets",
                                   std::to_string(buckets),
                                   "--no-sync",
                                   "--json"};
  if (!metadata_.empty()) {
    args.insert(args.end(), {"--metadata", metadata_, "--election-session-ms",
                             std::to_string(election_session_ms_)});
  }
  if (replicas_ > 0) args.insert(args.end(), {"--replicas", std::to_string(replicas_)});
  if (remote_failpoints_) args.push_back("--enable-failpoints");
  const std::vector<std::string> security = SecurityArgs();
  args.insert(args.end(), security.begin(), security.end());
  return args;
}

Status ProcessCluster::StartCoordinator(uint32_t initial_nodes, uint32_t buckets,
                                        const std::string& failpoints) {
  SHOAL_RETURN_IF_ERROR(Launch(
      kCoordinator, CoordinatorArgs(dir_ + "/coordinator", initial_nodes, buckets), failpoints));
  // Restarts keep the port: the nodes and the clients know the coordinator by it.
  children_[kCoordinator].args[4] = coordinator_address_;
  if (replicas_ == 0 || min_in_sync_ == 0) return OkStatus();
  // The floor, stored in the map: restarts keep it.
  Status set = UnavailableError("no admin client");
  for (int attempt = 0; attempt < 40; ++attempt) {
    if (net::GrpcRuntime* admin = Admin(); admin != nullptr) {
      wire::AdminRequest request;
      request.mutable_set_replication()->set_replication_factor(replicas_);
      request.mutable_set_replication()->set_min_in_sync(min_in_sync_);
      set = admin->Admin(request, kAdminTimeout).status();
      if (set.ok()) return set;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return set;
}

Status ProcessCluster::StartStandbyCoordinator(uint32_t initial_nodes, uint32_t buckets) {
  if (metadata_.empty()) return FailedPreconditionError("a standby needs UseZooKeeper");
  SHOAL_RETURN_IF_ERROR(Launch(
      kStandbyCoordinator, CoordinatorArgs(dir_ + "/coordinator-2", initial_nodes, buckets), {}));
  children_[kStandbyCoordinator].args[4] = standby_address_;
  admin_.reset();  // the admin client learns both addresses
  return OkStatus();
}

std::string ProcessCluster::coordinators() const {
  return standby_address_.empty() ? coordinator_address_
                                  : coordinator_address_ + "," + standby_address_;
}

StatusOr<std::unique_ptr<net::GrpcRuntime>> ProcessCluster::ClientRuntime() const {
  return net::GrpcRuntime::Start({.listen = {},
                                  .advertise = {},
                                  .coordinator = coordinators(),
                                  .address_book_path = {},
                                  .max_message_bytes = net::kDefaultMaxMessageBytes,
                                  .server_mode = net::GrpcServerMode::kSync,
                                  .pipe = false,
                                  .security = client_security()});
}

std::string ProcessCluster::CoordinatorAddress(uint32_t id) const {
  return id == kStandbyCoordinator ? standby_address_ : coordinator_address_;
}

std::string ProcessCluster::NodeAddress(uint32_t id) const {
  const std::string out = ReadFile(fmt::format("{}/node-{}.out", dir_, id));
  const size_t at = out.find("\"listen\":\"");
  if (at == std::string::npos) return {};
  const size_t begin = at + 10;
  return out.substr(begin, out.find('"', begin) - begin);
}

Status ProcessCluster::StartNode(uint32_t id, const std::string& failpoints) {
  // The listen address stays at index 6 (AwaitListening).
  std::vector<std::string> args = {"node",
                                   "--id",
                                   std::to_string(id),
                                   "--data",
                                   fmt::format("{}/node-{}", dir_, id),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--coordinator",
                                   coordinators(),
                                   "--no-sync",
                                   "--json"};
  std::vector<std::string> security = SecurityArgs();
  if (auto it = node_certs_.find(id); it != node_certs_.end() && !insecure_) {
    security = {"--certs-dir", it->second, "--cert-reload-seconds", "1"};
  }
  args.insert(args.end(), security.begin(), security.end());
  if (remote_failpoints_) args.push_back("--enable-failpoints");
  if (auto it = node_args_.find(id); it != node_args_.end()) {
    args.insert(args.end(), it->second.begin(), it->second.end());
  }
  return Launch(id, args, failpoints);
}

Status ProcessCluster::Restart(uint32_t id) {
  auto it = children_.find(id);
  if (it == children_.end()) return NotFoundError(NameOf(id));
  if (it->second.pid > 0) Kill(id);
  const std::vector<std::string> args = it->second.args;
  Status status;
  // The coordinator's port may take a moment to be free again.
  for (int attempt = 0; attempt < 20; ++attempt) {
    status = Launch(id, args, {});
    if (status.ok()) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return status;
}

Status ProcessCluster::RestartTogether(const std::vector<uint32_t>& ids) {
  for (uint32_t id : ids) {
    if (!children_.contains(id)) return NotFoundError(NameOf(id));
    Kill(id);
  }
  for (uint32_t id : ids) SHOAL_RETURN_IF_ERROR(Begin(id, children_[id].args, {}));
  for (uint32_t id : ids) {
    // One that could not start (its port not free yet) is started again on its own.
    if (!AwaitListening(id).ok()) SHOAL_RETURN_IF_ERROR(Restart(id));
  }
  return OkStatus();
}

void ProcessCluster::Kill(uint32_t id) {
  auto it = children_.find(id);
  if (it == children_.end() || it->second.pid <= 0) return;
  ::kill(it->second.pid, SIGKILL);
  int status = 0;
  (void)::waitpid(it->second.pid, &status, 0);
  it->second.pid = -1;
}

void ProcessCluster::Pause(uint32_t id) {
  auto it = children_.find(id);
  if (it != children_.end() && it->second.pid > 0) ::kill(it->second.pid, SIGSTOP);
}

void ProcessCluster::Resume(uint32_t id) {
  auto it = children_.find(id);
  if (it != children_.end() && it->second.pid > 0) ::kill(it->second.pid, SIGCONT);
}

bool ProcessCluster::Running(uint32_t id) const {
  auto it = children_.find(id);
  return it != children_.end() && it->second.pid > 0;
}

std::vector<Exit> ProcessCluster::Reap() {
  std::vector<Exit> exits;
  for (auto& [id, child] : children_) {
    if (child.pid <= 0) continue;
    int status = 0;
    if (::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
    child.pid = -1;
    exits.push_back(Exit{
        .id = id, .killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, .status = status});
  }
  return exits;
}

net::GrpcRuntime* ProcessCluster::Admin() {
  if (admin_ == nullptr) {
    auto runtime = ClientRuntime();
    if (!runtime.ok()) return nullptr;
    admin_ = std::move(*runtime);
  }
  return admin_.get();
}

StatusOr<wire::AdminResponse> ProcessCluster::Progress() {
  net::GrpcRuntime* admin = Admin();
  if (admin == nullptr) return UnavailableError("no admin client");
  wire::AdminRequest request;
  request.mutable_progress();
  return admin->Admin(request, kAdminTimeout);
}

Status ProcessCluster::AwaitBalanced(std::chrono::seconds timeout,
                                     const std::function<void()>& each_poll) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer";
  while (std::chrono::steady_clock::now() < until) {
    if (each_poll) each_poll();
    auto progress = Progress();
    if (progress.ok() && progress->balanced()) return OkStatus();
    last = progress.ok() ? progress->ShortDebugString() : progress.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return DeadlineExceededError(
      fmt::format("not balanced after {} s; last: {}", timeout.count(), last));
}

Status ProcessCluster::AwaitReachable(uint32_t id, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  Status last = UnavailableError("not tried");
  while (std::chrono::steady_clock::now() < until) {
    // A fresh runtime asks the coordinator for its address book, as a new client would.
    auto runtime = ClientRuntime();
    if (runtime.ok()) {
      auto answer = (*runtime)->Call(transport::Address::Node(NodeId(id)),
                                     transport::GetMapRequest{}, 1'000'000);
      if (answer.ok()) return OkStatus();
      last = answer.status();
    } else {
      last = runtime.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return DeadlineExceededError(fmt::format("{} not reachable: {}", NameOf(id), last.ToString()));
}

Status ProcessCluster::AwaitLoadReported(std::chrono::seconds timeout,
                                         const std::function<void()>& each_poll) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string out;
  while (std::chrono::steady_clock::now() < until) {
    if (each_poll) each_poll();
    if (RunCli({"status", "--json"}, &out) == 0) {
      auto status = nlohmann::json::parse(out, nullptr, false);
      bool loaded = !status.is_discarded() && !status["nodes"].empty();
      for (const auto& node : status["nodes"]) {
        if (node["buckets"].get<uint64_t>() > 0 && node["bytes"].get<uint64_t>() == 0) {
          loaded = false;
        }
      }
      if (loaded) return OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return DeadlineExceededError(
      fmt::format("no load reported after {} s: {}", timeout.count(), out));
}

Status ProcessCluster::SetCoordinatorFailpoints(uint32_t id, const std::string& spec) {
  net::GrpcRuntime* admin = Admin();
  if (admin == nullptr) return UnavailableError("no admin client");
  wire::AdminRequest request;
  request.mutable_set_failpoints()->set_spec(spec);
  return admin->AdminAt(CoordinatorAddress(id), request, kAdminTimeout).status();
}

Status ProcessCluster::SetNodeFailpoints(uint32_t id, const std::string& spec) {
  net::GrpcRuntime* admin = Admin();
  if (admin == nullptr) return UnavailableError("no admin client");
  wire::AdminRequest request;
  request.mutable_set_failpoints()->set_spec(spec);
  return admin->AdminAt(NodeAddress(id), request, kAdminTimeout).status();
}

Status ProcessCluster::AddNode(uint32_t id) {
  return RunAdminCommand({"add-node", "--id", std::to_string(id), "--no-wait", "--json"});
}

Status ProcessCluster::RemoveNode(uint32_t id) {
  return RunAdminCommand({"remove-node", "--id", std::to_string(id), "--no-wait", "--json"});
}

Status ProcessCluster::RunAdminCommand(const std::vector<std::string>& args) {
  // The coordinator may be restarting: retry for a while. A retry of an add that took effect
  // answers ALREADY_EXISTS.
  int code = 0;
  std::string error;
  for (int attempt = 0; attempt < 80; ++attempt) {
    std::string out;
    const size_t log_size = ReadFile(dir_ + "/cli.log").size();
    code = RunCli(args, &out);
    if (code == 0) return OkStatus();
    const std::string log = ReadFile(dir_ + "/cli.log");
    if (attempt > 0 && log.find("ALREADY_EXISTS", log_size) != std::string::npos) {
      return OkStatus();
    }
    error = log.substr(std::min(log_size, log.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (between_attempts_) between_attempts_();
  }
  return InternalError(fmt::format("{} {}: exit {}: {}", args[0], args[2], code, error));
}

int ProcessCluster::RunCli(const std::vector<std::string>& args, std::string* out) {
  std::string err;
  return RunCliWith(args, CliSecurityArgs(), out, &err);
}

int ProcessCluster::RunCliWith(const std::vector<std::string>& args,
                               const std::vector<std::string>& security, std::string* out,
                               std::string* err) {
  std::vector<std::string> full = args;
  full.push_back("--cluster");
  full.push_back(uri());
  full.insert(full.end(), security.begin(), security.end());
  const std::string out_path = dir_ + "/cli.out";
  const std::string log_path = dir_ + "/cli.log";
  const size_t log_size = ReadFile(log_path).size();
  const pid_t pid = Spawn(binary_, full, ChildEnvironment({}), out_path, log_path);
  if (pid < 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  *out = ReadFile(out_path);
  const std::string log = ReadFile(log_path);
  *err = log.substr(std::min(log_size, log.size()));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Status ProcessCluster::WaitServing(int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  Status last = UnavailableError("not tried");
  while (std::chrono::steady_clock::now() < until) {
    auto progress = Progress();
    auto db = progress.ok() ? Database::Connect(uri(), connect_options()) : progress.status();
    if (db.ok()) {
      auto probe = (*db)->CreateCollection("_probe");
      last = probe.status();
      for (int i = 0; last.ok() && i < 64; ++i) {
        auto doc = probe->Get(fmt::format("probe-{}", i));
        if (!doc.ok() && doc.status().code() != StatusCode::kNotFound) last = doc.status();
      }
      if (last.ok()) return last;
    } else {
      last = db.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

StatusOr<transport::ClusterState> ProcessCluster::State() {
  net::GrpcRuntime* admin = Admin();
  if (admin == nullptr) return UnavailableError("no admin client");
  SHOAL_ASSIGN_OR_RETURN(
      transport::Response reply,
      admin->Call(transport::Address::Coordinator(), transport::GetMapRequest{}, kAdminTimeout));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetMapResponse>(std::move(reply)));
  if (body.state.map == nullptr) return UnavailableError("the coordinator has no map");
  return std::move(body.state);
}

std::string ProcessCluster::MapDisagreement() {
  net::GrpcRuntime* admin = Admin();
  if (admin == nullptr) return "no admin client";
  auto state = State();
  if (!state.ok()) return fmt::format("map: {}", state.status().ToString());
  const cluster::ShardMapPtr map = state->map;
  std::map<BucketId, NodeId> owner;
  for (const auto& bucket : map->buckets()) {
    if (bucket.transition.has_value()) {
      return fmt::format("{} still moving", bucket.id.DebugString());
    }
    owner[bucket.id] = client::OwnerOf(bucket);
  }
  std::string problems;
  for (const auto& node : map->nodes()) {
    auto load = admin->Call(transport::Address::Node(node.id), transport::BucketLoadRequest{},
                            kAdminTimeout);
    if (!load.ok()) {
      problems += fmt::format(" {} unreachable;", node.id.DebugString());
      continue;
    }
    auto body = transport::BodyAs<transport::BucketLoadResponse>(std::move(*load));
    if (!body.ok()) continue;
    for (const auto& b : body->buckets) {
      auto it = owner.find(b.bucket);
      if (it == owner.end() || it->second != node.id) {
        problems += fmt::format(" {} holds {} ({} documents);", node.id.DebugString(),
                                b.bucket.DebugString(), b.documents);
      }
    }
  }
  return problems;
}

std::string ProcessCluster::LogTails(int lines) const {
  std::string text = fmt::format("logs in {}\n", dir_);
  for (const auto& [id, child] : children_) {
    const std::string log = ReadFile(fmt::format("{}/{}.log", dir_, NameOf(id)));
    size_t at = log.size();
    for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) {
      at = log.rfind('\n', at - 1);
    }
    text +=
        fmt::format("--- {}\n{}\n", NameOf(id), at == std::string::npos ? log : log.substr(at + 1));
  }
  return text;
}

bool ProcessCluster::LogShows(uint32_t id, const std::string& text) const {
  const std::string log = ReadFile(fmt::format("{}/{}.log", dir_, NameOf(id)));
  return log.find(text) != std::string::npos;
}

std::string ProcessCluster::Log(uint32_t id, size_t from) const {
  const std::string log = ReadFile(fmt::format("{}/{}.log", dir_, NameOf(id)));
  return from < log.size() ? log.substr(from) : std::string();
}

bool ProcessCluster::LogShowsFailpoint(uint32_t id, const std::string& name) const {
  return LogShows(id, fmt::format("failpoint {}: hit", name));
}

}  // namespace shoal::cluster_test
