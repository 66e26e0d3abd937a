#include "src/clientside/remote_test_cluster.h"

#include <fmt/format.h>

#include "src/clientside/remote_shard_backend.h"

namespace shoal::clientside::testing {

StatusOr<std::unique_ptr<RemoteTestCluster>> RemoteTestCluster::Start(const std::string& dir,
                                                                      uint32_t nodes,
                                                                      std::string name) {
  std::unique_ptr<RemoteTestCluster> cluster(new RemoteTestCluster(std::move(name)));
  process::CoordinatorProcessOptions options;
  options.data_dir = dir + "/coordinator";
  options.listen = "127.0.0.1:0";  // a free port: parallel runs never collide
  options.initial_nodes = nodes;
  options.buckets = 8;
  options.sync = false;
  options.coordinator.auto_balance = false;
  SHOAL_ASSIGN_OR_RETURN(cluster->coordinator_, process::CoordinatorProcess::Start(options));
  for (uint32_t id = 1; id <= nodes; ++id) {
    process::NodeProcessOptions node;
    node.id = id;
    node.data_dir = fmt::format("{}/node-{}", dir, id);
    node.listen = "127.0.0.1:0";
    node.coordinator = cluster->coordinator_->address();
    SHOAL_ASSIGN_OR_RETURN(cluster->nodes_[id], process::NodeProcess::Start(node));
  }
  SHOAL_ASSIGN_OR_RETURN(
      cluster->db_,
      Database::Connect("shoal://" + cluster->coordinator_->address(), {.insecure = true}));
  return cluster;
}

RemoteTestCluster::~RemoteTestCluster() {
  db_.reset();  // the client first, then the servers it talks to
  for (auto& [id, node] : nodes_) {
    Status stopped = node->Stop();
    if (!stopped.ok())
      fmt::print(stderr, "node {} stop: {}\n", id, std::string(MessageOf(stopped)));
  }
  nodes_.clear();
  if (coordinator_ != nullptr) coordinator_->Stop();
}

StatusOr<std::shared_ptr<ShardBackend>> RemoteTestCluster::NewShard() {
  SHOAL_ASSIGN_OR_RETURN(auto shard,
                         RemoteShardBackend::Create(*db_, fmt::format("{}{}", name_, next_shard_)));
  ++next_shard_;
  return std::shared_ptr<ShardBackend>(std::move(shard));
}

}  // namespace shoal::clientside::testing
