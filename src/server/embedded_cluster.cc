#include "src/server/embedded_cluster.h"

#include <fmt/format.h>

#include <filesystem>

#include "src/metadata/embedded_metadata_store.h"

namespace shoal::server {

EmbeddedCluster::EmbeddedCluster(transport::Runtime& runtime, const EmbeddedClusterOptions& options)
    : runtime_(runtime), options_(options) {}

EmbeddedCluster::~EmbeddedCluster() = default;

Status EmbeddedCluster::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) return IoError(fmt::format("create {}: {}", options_.data_dir, ec.message()));
  metadata::EmbeddedMetadataOptions meta;
  meta.path = options_.data_dir + "/metadata";
  meta.sync = options_.sync;
  transport::Runtime* runtime = &runtime_;
  meta.now_micros = [runtime] { return runtime->Now(); };
  SHOAL_ASSIGN_OR_RETURN(metadata_, metadata::EmbeddedMetadataStore::Open(meta));
  if (options_.wrap_metadata) metadata_ = options_.wrap_metadata(std::move(metadata_));
  SHOAL_RETURN_IF_ERROR(StartCoordinator());
  std::vector<NodeId> nodes;
  for (uint32_t i = 1; i <= options_.initial_nodes; ++i) nodes.push_back(NodeId(i));
  SHOAL_RETURN_IF_ERROR(
      coordinator()->Initialize(nodes, options_.buckets, options_.replication_factor));
  for (NodeId node : nodes) SHOAL_RETURN_IF_ERROR(StartNode(node));
  return OkStatus();
}

Status EmbeddedCluster::StartCoordinator() {
  SHOAL_ASSIGN_OR_RETURN(
      auto coordinator, coordinator::Coordinator::Open(runtime_, *metadata_, options_.coordinator));
  coordinator->Start();
  std::lock_guard<std::mutex> lock(mu_);
  coordinator_ = std::move(coordinator);
  return OkStatus();
}

void EmbeddedCluster::CrashCoordinator() { runtime_.Stop(transport::Address::Coordinator()); }

Status EmbeddedCluster::StartNode(NodeId id) {
  std::shared_ptr<node::StorageNode> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(id);
    if (it != nodes_.end()) old = it->second;
  }
  if (old != nullptr) SHOAL_RETURN_IF_ERROR(old->Close());
  node::NodeOptions options = options_.node;
  options.id = id;
  options.data_dir = fmt::format("{}/node-{}", options_.data_dir, id.value());
  options.store.sync =
      options_.sync ? storage::SyncPolicy::kEveryWrite : storage::SyncPolicy::kPeriodic;
  SHOAL_ASSIGN_OR_RETURN(auto node, node::StorageNode::Open(runtime_, options));
  node->Start();
  std::lock_guard<std::mutex> lock(mu_);
  nodes_[id] = std::move(node);
  return OkStatus();
}

Status EmbeddedCluster::CrashNode(NodeId id) {
  std::shared_ptr<node::StorageNode> node = this->node(id);
  if (node == nullptr) return NotFoundError(id.DebugString());
  return node->Close();
}

Status EmbeddedCluster::AddNode(NodeId id) {
  SHOAL_RETURN_IF_ERROR(StartNode(id));
  return coordinator()->AddNode(id);
}

Status EmbeddedCluster::StopAll() {
  runtime_.Stop(transport::Address::Coordinator());
  std::map<NodeId, std::shared_ptr<node::StorageNode>> nodes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes = nodes_;
  }
  Status first;
  for (auto& [id, node] : nodes) {
    Status s = node->Close();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

std::shared_ptr<coordinator::Coordinator> EmbeddedCluster::coordinator() const {
  std::lock_guard<std::mutex> lock(mu_);
  return coordinator_;
}

std::shared_ptr<node::StorageNode> EmbeddedCluster::node(NodeId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

std::vector<NodeId> EmbeddedCluster::started_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeId> out;
  for (const auto& [id, node] : nodes_) out.push_back(id);
  return out;
}

}  // namespace shoal::server
