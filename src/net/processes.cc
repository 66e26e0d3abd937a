#include "src/net/processes.h"

#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "src/metadata/embedded_metadata_store.h"
#include "src/metadata/zookeeper_metadata_store.h"
#include "src/net/admin.h"

namespace shoal::net {
namespace {

Status CreateDirectory(const std::string& dir) {
  if (dir.empty()) return InvalidArgumentError("a data directory is required");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("create {}: {}", dir, ec.message()));
  return OkStatus();
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
    std::ofstream out(path, std::ios::trunc);
    out << id << '\n';
    if (!out) return IoError(fmt::format("write {}", path));
  }
  return id;
}

}  // namespace

StatusOr<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::Start(
    const CoordinatorProcessOptions& options) {
  SHOAL_RETURN_IF_ERROR(CreateDirectory(options.data_dir));
  std::unique_ptr<CoordinatorProcess> process(new CoordinatorProcess());
  SHOAL_ASSIGN_OR_RETURN(process->runtime_,
                         GrpcRuntime::Start({.listen = options.listen,
                                             .advertise = {},
                                             .coordinator = {},
                                             .address_book_path = options.data_dir + "/addresses",
                                             .max_message_bytes = options.max_message_bytes,
                                             .server_mode = options.server_mode}));
  if (options.metadata == "embedded") {
    metadata::EmbeddedMetadataOptions meta;
    meta.path = options.data_dir + "/metadata";
    meta.sync = options.sync;
    GrpcRuntime* runtime = process->runtime_.get();
    meta.now_micros = [runtime] { return runtime->Now(); };
    SHOAL_ASSIGN_OR_RETURN(process->metadata_, metadata::EmbeddedMetadataStore::Open(meta));
  } else {
    SHOAL_ASSIGN_OR_RETURN(const metadata::ZooKeeperMetadataOptions zk,
                           metadata::ZooKeeperMetadataOptions::FromUri(options.metadata));
    SHOAL_ASSIGN_OR_RETURN(process->metadata_, metadata::ZooKeeperMetadataStore::Open(zk));
  }
  SHOAL_ASSIGN_OR_RETURN(
      process->coordinator_,
      coordinator::Coordinator::Open(*process->runtime_, *process->metadata_, options.coordinator));
  std::vector<NodeId> nodes;
  for (uint32_t i = 1; i <= options.initial_nodes; ++i) nodes.push_back(NodeId(i));
  SHOAL_RETURN_IF_ERROR(process->coordinator_->Initialize(nodes, options.buckets));
  process->coordinator_->Start();
  coordinator::Coordinator* c = process->coordinator_.get();
  process->runtime_->SetAdminHandler(
      [c](const wire::AdminRequest& request, wire::AdminResponse* out) {
        HandleAdmin(*c, request, out);
      });
  return process;
}

CoordinatorProcess::~CoordinatorProcess() { Stop(); }

void CoordinatorProcess::Stop() {
  if (stopped_) return;
  stopped_ = true;
  runtime_->Stop(transport::Address::Coordinator());
  // The runtime joins the coordinator's tasks before the store they use closes.
  runtime_->Shutdown();
  coordinator_.reset();
  metadata_.reset();
}

StatusOr<std::unique_ptr<NodeProcess>> NodeProcess::Start(const NodeProcessOptions& options) {
  SHOAL_RETURN_IF_ERROR(CreateDirectory(options.data_dir));
  SHOAL_ASSIGN_OR_RETURN(uint32_t id, ResolveNodeId(options.data_dir, options.id));
  if (options.coordinator.empty())
    return InvalidArgumentError("the coordinator's address is required");
  std::unique_ptr<NodeProcess> process(new NodeProcess());
  SHOAL_ASSIGN_OR_RETURN(process->runtime_,
                         GrpcRuntime::Start({.listen = options.listen,
                                             .advertise = options.advertise,
                                             .coordinator = options.coordinator,
                                             .address_book_path = {},
                                             .max_message_bytes = options.max_message_bytes,
                                             .server_mode = options.server_mode}));
  node::NodeOptions node;
  node.id = NodeId(id);
  node.data_dir = options.data_dir;
  node.store.sync =
      options.sync ? storage::SyncPolicy::kEveryWrite : storage::SyncPolicy::kPeriodic;
  SHOAL_ASSIGN_OR_RETURN(process->node_, node::StorageNode::Open(*process->runtime_, node));
  process->node_->Start();
  return process;
}

NodeProcess::~NodeProcess() { (void)Stop(); }

Status NodeProcess::Stop() {
  if (stopped_) return OkStatus();
  stopped_ = true;
  Status status = node_->Close();
  runtime_->Shutdown();
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

}  // namespace shoal::net
