#include "src/process/processes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "src/common/directory_identity.h"
#include "src/common/log.h"
#include "src/common/steady_clock.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/metadata/zookeeper_metadata_store.h"
#include "src/net/wire_codec.h"
#include "src/node/storage_health.h"
#include "src/process/admin.h"

namespace shoal::process {
namespace {

Status CreateDirectory(const std::string& dir) {
  if (dir.empty()) return InvalidArgumentError("a data directory is required");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("create {}: {}", dir, ec.message()));
  return OkStatus();
}

// The expiry check of a process's own certificate and CA (security/cert_expiry.h); none without
// TLS.
std::unique_ptr<security::CertificateExpiryMonitor> WatchExpiry(
    const net::TransportSecurity& security) {
  if (!security.tls.has_value()) return nullptr;
  security::CertificateExpiryOptions options;
  options.files = *security.tls;
  return std::make_unique<security::CertificateExpiryMonitor>(std::move(options));
}

// The node id lives in the data directory, so that a restart needs no --id and a directory is
// never reused under another id.
StatusOr<uint32_t> ResolveNodeId(const std::string& data_dir, uint32_t requested) {
  const std::string path = data_dir + "/node-id";
  uint32_t stored = 0;
  if (std::ifstream in(path); in) in >> stored;
  if (requested != 0 && stored != 0 && requested != stored) {
    return InvalidArgumentError(
        fmt::format("{} belongs to node {}, not node {}", data_dir, stored, requested));
  }
  const uint32_t id = requested != 0 ? requested : stored;
  if (id == 0) return InvalidArgumentError(fmt::format("{} holds no node id: pass --id", data_dir));
  if (stored == 0) {
    // Synced: a directory is never reused under another id, even after a machine crash.
    const std::string text = fmt::format("{}\n", id);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool written =
        fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
        ::fsync(fd) == 0;
    const int error = errno;
    if (fd >= 0) ::close(fd);
    if (!written) {
      return IoError(fmt::format("cannot write {}: {}", path, std::strerror(error)));
    }
  }
  return id;
}

// The election's keys in the metadata store (next to the coordinator's cluster/ and moves/).
constexpr std::string_view kElectionPrefix = "coordinator/";
// How often a process checks that its disk can still be trusted (FailStop).
constexpr std::chrono::milliseconds kFailStopInterval{1000};

}  // namespace

StatusOr<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::Start(
    const CoordinatorProcessOptions& options) {
  SHOAL_RETURN_IF_ERROR(CreateDirectory(options.data_dir));
  std::unique_ptr<CoordinatorProcess> process(new CoordinatorProcess());
  process->options_ = options;
  process->watch_hub_ = std::make_unique<MapWatchHub>(options.max_map_watchers);
  SHOAL_ASSIGN_OR_RETURN(
      process->runtime_,
      net::GrpcRuntime::Start({.listen = options.listen,
                               .advertise = {},
                               .coordinator = {},
                               .address_book_path = options.data_dir + "/addresses",
                               .max_message_bytes = options.max_message_bytes,
                               .server_mode = options.server_mode,
                               .pipe = false,
                               .security = options.security,
                               .remote_failpoints = options.enable_failpoints}));
  process->expiry_ = WatchExpiry(options.security);
  CoordinatorProcess* self = process.get();
  process->runtime_->SetAdminHandler(
      [self](const wire::AdminRequest& request, wire::AdminResponse* out) {
        self->AnswerAdmin(request, out);
      });
  process->runtime_->SetMapWatchHandler(
      [self](const wire::WatchMapRequest& request, const std::function<bool()>& cancelled,
             wire::WatchMapResponse* out) { self->AnswerWatch(request, cancelled, out); });
  if (options.metadata == "embedded") {
    metadata::EmbeddedMetadataOptions meta;
    meta.path = options.data_dir + "/metadata";
    meta.sync = options.sync;
    net::GrpcRuntime* runtime = process->runtime_.get();
    meta.now_micros = [runtime] { return runtime->Now(); };
    SHOAL_ASSIGN_OR_RETURN(process->metadata_, metadata::EmbeddedMetadataStore::Open(meta));
    SHOAL_ASSIGN_OR_RETURN(DirectoryIdentity directory, DirectoryIdentity::Of(meta.path));
    // Not a fail-stop: the nodes depend on this process, and the map it holds is the only copy
    // left. It says so once, loudly: a restart would start a new cluster.
    process->fail_stop_ = std::make_unique<FailStop>(
        "coordinator.storage_failed", "",
        std::vector<FailStop::Probe>{[directory]() -> std::optional<Status> {
          if (Status status = directory.Check(); !status.ok()) return status;
          return std::nullopt;
        }},
        kFailStopInterval, [](const Status& failure) {
          log::Error("coordinator.metadata_removed",
                     {{"error", failure.ToString()},
                      {"then",
                       "the coordinator keeps serving from its open store, but its next start "
                       "finds no metadata and begins a new cluster, which the nodes refuse: "
                       "keep it running, and use --metadata zk://... for metadata that "
                       "survives a lost directory"}});
        });
    SHOAL_RETURN_IF_ERROR(process->Lead());
    return process;
  }
  SHOAL_ASSIGN_OR_RETURN(const metadata::ZooKeeperMetadataOptions zk,
                         metadata::ZooKeeperMetadataOptions::FromUri(options.metadata));
  SHOAL_ASSIGN_OR_RETURN(process->metadata_, metadata::ZooKeeperMetadataStore::Open(zk));
  process->election_ = std::make_unique<metadata::LeaderElection>(
      *process->metadata_, std::string(kElectionPrefix), process->address(),
      options.election_session_timeout);
  metadata::LeaderElection* election = process->election_.get();
  process->runtime_->SetStandby(true, "");
  // The first try is synchronous, so that a lone coordinator leads as soon as Start returns.
  SHOAL_ASSIGN_OR_RETURN(const bool acquired, election->TryAcquire());
  if (acquired) {
    const Status led = process->Lead();
    if (!led.ok()) {
      election->Resign();
      return led;
    }
  }
  process->election_thread_ = std::thread([self] { self->ElectionLoop(); });
  return process;
}

CoordinatorProcess::~CoordinatorProcess() { Stop(); }

std::shared_ptr<coordinator::Coordinator> CoordinatorProcess::current() const {
  absl::MutexLock lock(&mu_);
  return coordinator_;
}

std::optional<uint64_t> CoordinatorProcess::leader_epoch() const {
  if (election_ == nullptr || !leader()) return std::nullopt;
  return election_->epoch();
}

bool CoordinatorProcess::WaitLeader(std::chrono::milliseconds timeout) {
  const absl::Time until = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&mu_);
  while (coordinator_ == nullptr && !cv_.WaitWithDeadline(&mu_, until)) {
  }
  return coordinator_ != nullptr;
}

Status CoordinatorProcess::Lead() {
  metadata::MetadataStore* store = metadata_.get();
  if (election_ != nullptr) {
    fenced_.push_back(std::make_unique<metadata::FencedMetadataStore>(
        *metadata_, [fence = election_->Fence()] { return fence; }));
    store = fenced_.back().get();
  }
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<coordinator::Coordinator> coordinator,
                         coordinator::Coordinator::Open(*runtime_, *store, options_.coordinator));
  SHOAL_ASSIGN_OR_RETURN(const UserTablePtr users, LoadUserTable(*store));
  (void)runtime_->authenticator().Install(users);  // false: a standby had read it already
  if (election_ != nullptr) {
    // A takeover: the nodes announce themselves to standbys too (their heartbeats try every
    // coordinator), so their addresses are usually known already; give the rest a moment so
    // that recovery does not find a node "unreachable" that merely has not called yet.
    const auto until = std::chrono::steady_clock::now() + options_.learn_addresses_timeout;
    while (std::chrono::steady_clock::now() < until) {
      const cluster::ShardMapPtr map = coordinator->map();
      if (map == nullptr) break;
      const auto book = runtime_->AddressBook();
      bool all = true;
      for (const auto& node : map->nodes()) {
        all = all && book.contains(transport::Address::Node(node.id));
      }
      if (all) break;
      std::this_thread::sleep_for(options_.election_poll);
    }
  }
  std::vector<NodeId> nodes;
  for (uint32_t i = 1; i <= options_.initial_nodes; ++i) nodes.push_back(NodeId(i));
  SHOAL_RETURN_IF_ERROR(coordinator->Initialize(nodes, options_.buckets,
                                                options_.replication_factor, options_.min_in_sync));
  watch_hub_->Open();
  coordinator->SetStateObserver(
      [hub = watch_hub_.get()](const transport::ClusterState& state) { hub->Publish(state); });
  coordinator->Start();
  {
    absl::MutexLock lock(&mu_);
    coordinator_ = std::move(coordinator);
    users_store_ = store;
  }
  cv_.SignalAll();
  runtime_->SetStandby(false, "");
  return OkStatus();
}

void CoordinatorProcess::LoseLead() {
  // Stop acting first: the Coordinator's tasks end at their next step, and what they still try
  // to write is refused by the fence once the new leader bumped the epoch.
  runtime_->SetStandby(true, "");
  watch_hub_->Close();
  runtime_->Stop(transport::Address::Coordinator());
  {
    absl::MutexLock lock(&mu_);
    coordinator_.reset();
    users_store_ = nullptr;
  }
  election_->Resign();
}

void CoordinatorProcess::ElectionLoop() {
  const auto leading = [&] {
    log::Info("coordinator.lead", {{"leader_epoch", election_->epoch().value_or(0)}});
  };
  if (leader()) leading();
  while (true) {
    {
      const absl::Time until = absl::Now() + absl::FromChrono(options_.election_poll);
      absl::MutexLock lock(&mu_);
      while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
      }
      if (stopping_) return;
    }
    if (leader()) {
      // The client library renews the session; this only learns whether it ended.
      if (election_->KeepAlive().ok()) continue;
      const uint64_t epoch = election_->epoch().value_or(0);
      LoseLead();
      log::Warning("coordinator.standby", {{"lost_epoch", epoch}});
      continue;
    }
    auto acquired = election_->TryAcquire();
    if (acquired.ok() && *acquired) {
      const Status led = Lead();
      if (led.ok()) {
        leading();
        continue;
      }
      // Could not start (the store is unreachable, or a newer leader fenced this one already):
      // step down and try again later.
      log::Warning("coordinator.lead_failed", {{"error", led.ToString()}});
      election_->Resign();
      continue;
    }
    // A standby checks clients too (failpoints): it follows the users the leader writes.
    if (auto users = ReadUserTable(*metadata_); users.ok() && *users != nullptr) {
      (void)runtime_->authenticator().Install(*users);
    }
    auto leader = metadata::LeaderElection::Leader(*metadata_, kElectionPrefix);
    if (leader.ok() && leader->has_value()) runtime_->SetStandby(true, (*leader)->second);
  }
}

void CoordinatorProcess::AnswerAdmin(const wire::AdminRequest& request, wire::AdminResponse* out) {
  std::shared_ptr<coordinator::Coordinator> coordinator = current();
  if (coordinator == nullptr) {
    net::ToWire(UnavailableError("not the leader coordinator"), out->mutable_status());
    return;
  }
  if (IsUserAdmin(request)) {
    metadata::MetadataStore* store;
    {
      absl::MutexLock lock(&mu_);
      store = users_store_;
    }
    if (store == nullptr) {
      net::ToWire(UnavailableError("not the leader coordinator"), out->mutable_status());
      return;
    }
    AnswerUserAdmin(*store, runtime_->authenticator(), request, out);
  } else {
    HandleAdmin(*coordinator, request, out);
  }
  // A change is committed (or refused) and not answered yet: a crash here loses the answer of a
  // change that took effect (tests/cluster/admin_repeat_test.cc).
  if (!request.has_progress() && !request.has_plan() && !request.has_get_user_table()) {
    (void)runtime_->Failpoint("coordinator.before_admin_reply");
  }
  out->set_leader(address());
  out->set_leader_epoch(leader_epoch().value_or(0));
}

void CoordinatorProcess::AnswerWatch(const wire::WatchMapRequest& request,
                                     const std::function<bool()>& cancelled,
                                     wire::WatchMapResponse* out) {
  AnswerMapWatch(*watch_hub_, request, cancelled, out);
}

void CoordinatorProcess::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  watch_hub_->Close();  // the waiting watches end now, not at the server's shutdown grace
  cv_.SignalAll();
  fail_stop_.reset();
  if (election_thread_.joinable()) election_thread_.join();
  // A Start that failed before its runtime served has none.
  if (runtime_ != nullptr) {
    runtime_->Stop(transport::Address::Coordinator());
    // The runtime joins the coordinator's tasks before the store they use closes.
    runtime_->Shutdown();
  }
  {
    absl::MutexLock lock(&mu_);
    coordinator_.reset();
  }
  // Resigning ends the session: a standby takes over without waiting for the timeout.
  if (election_ != nullptr) election_->Resign();
  fenced_.clear();
  election_.reset();
  metadata_.reset();
  expiry_.reset();
}

StatusOr<std::unique_ptr<NodeProcess>> NodeProcess::Start(const NodeProcessOptions& options) {
  SHOAL_RETURN_IF_ERROR(CreateDirectory(options.data_dir));
  SHOAL_ASSIGN_OR_RETURN(uint32_t id, ResolveNodeId(options.data_dir, options.id));
  if (options.coordinator.empty()) {
    return InvalidArgumentError("the coordinator's address is required");
  }
  std::unique_ptr<NodeProcess> process(new NodeProcess());
  SHOAL_ASSIGN_OR_RETURN(process->runtime_,
                         net::GrpcRuntime::Start({.listen = options.listen,
                                                  .advertise = options.advertise,
                                                  .coordinator = options.coordinator,
                                                  .address_book_path = {},
                                                  .max_message_bytes = options.max_message_bytes,
                                                  .server_mode = options.server_mode,
                                                  .pipe = false,
                                                  .call_limits = options.call_limits,
                                                  .security = options.security,
                                                  .remote_failpoints = options.enable_failpoints}));
  process->expiry_ = WatchExpiry(options.security);
  net::StreamLimits streams = process->runtime_->stream_limits();
  streams.max_streams = options.max_streams;
  SHOAL_RETURN_IF_ERROR(process->runtime_->SetStreamLimits(streams));
  node::NodeOptions node;
  node.id = NodeId(id);
  node.data_dir = options.data_dir;
  node.store.sync =
      options.sync ? storage::SyncPolicy::kEveryWrite : storage::SyncPolicy::kPeriodic;
  node.background_nice = options.background_nice;
  node.store.min_free_disk_bytes = options.min_free_disk_bytes;
  SHOAL_ASSIGN_OR_RETURN(process->node_, node::StorageNode::Open(*process->runtime_, node));
  const storage::BucketStore* store = process->node_->store();
  const std::chrono::milliseconds max_sync_stall = options.max_sync_stall;
  process->fail_stop_ = std::make_unique<FailStop>(
      "node.storage_failed",
      "the node stops: its buckets fail over to their other copies (K > 1) and it is rebuilt "
      "or recovered when it starts again",
      std::vector<FailStop::Probe>{
          [store, max_sync_stall] {
            return node::StorageFailure(
                *store, SteadyNanos(),
                node::StorageHealthOptions{.max_sync_duration = max_sync_stall});
          },
          [store] { return node::StorageDirectoryFailure(*store); }},
      kFailStopInterval);
  process->node_->Start();
  if (options.security.tls.has_value()) {
    process->users_ = std::make_unique<UserTableFollower>(*process->runtime_);
    process->users_->Start();
  }
  return process;
}

NodeProcess::~NodeProcess() { (void)Stop(); }

Status NodeProcess::Stop() {
  if (stopped_) return OkStatus();
  stopped_ = true;
  if (users_ != nullptr) users_->Stop();
  expiry_.reset();
  fail_stop_.reset();  // before the store closes
  // A Start that failed part way has no node or no runtime yet.
  Status status = node_ != nullptr ? node_->Close() : OkStatus();
  if (runtime_ != nullptr) runtime_->Shutdown();
  return status;
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTermination() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  return signal;
}

}  // namespace shoal::process
