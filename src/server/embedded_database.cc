// Database::OpenEmbedded: include/shoal/shoal.h's API over a cluster in this process, on a
// ThreadRuntime (the embedded DatabaseBackend of src/api/database_impl.h).

#include <algorithm>
#include <memory>
#include <mutex>

#include "include/shoal/shoal.h"
#include "src/api/database_impl.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/thread_runtime.h"

namespace shoal::server {
namespace {

// A coordinator and its storage nodes on one ThreadRuntime, and a client of them.
//
// Thread-safety: AddNode and RemoveNode may be called concurrently; `mu_` guards next_node_.
class EmbeddedBackend final : public DatabaseBackend {
 public:
  EmbeddedBackend() = default;

  // Starts the cluster of `options` and the client; the next added node gets `next_node`.
  [[nodiscard]] Status Start(const EmbeddedOptions& options) {
    EmbeddedClusterOptions cluster;
    cluster.data_dir = options.data_dir;
    cluster.initial_nodes = options.nodes;
    cluster.buckets = options.buckets;
    cluster.sync = options.sync;
    cluster_ = std::make_unique<EmbeddedCluster>(runtime_, cluster);
    SHOAL_RETURN_IF_ERROR(cluster_->Start());
    // A reopened cluster may have more nodes than `nodes`: start every member of its map.
    auto map = cluster_->coordinator()->map();
    uint32_t highest = options.nodes;
    for (const auto& node : map->nodes()) {
      highest = std::max(highest, node.id.value());
      if (cluster_->node(node.id) == nullptr) {
        SHOAL_RETURN_IF_ERROR(cluster_->StartNode(node.id));
      }
    }
    next_node_ = highest + 1;
    client_ = std::make_unique<client::Client>(
        runtime_, client::ClientOptions{.retry_for = client::kApplicationRetryFor});
    return client_->Refresh();
  }

  transport::Runtime& runtime() override { return runtime_; }
  client::Client& client() override { return *client_; }

  StatusOr<uint32_t> AddNode() override {
    uint32_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = next_node_++;
    }
    SHOAL_RETURN_IF_ERROR(cluster_->AddNode(NodeId(id)));
    return id;
  }

  Status RemoveNode(uint32_t node) override {
    return cluster_->coordinator()->RemoveNode(NodeId(node));
  }

  Status Shutdown() override {
    Status status = cluster_->StopAll();
    runtime_.Shutdown();
    return status;
  }

 private:
  transport::ThreadRuntime runtime_;
  std::unique_ptr<EmbeddedCluster> cluster_;
  std::unique_ptr<client::Client> client_;
  std::mutex mu_;
  uint32_t next_node_ = 0;
};

}  // namespace
}  // namespace shoal::server

namespace shoal {

StatusOr<std::unique_ptr<Database>> Database::OpenEmbedded(const EmbeddedOptions& options) {
  if (options.data_dir.empty()) return InvalidArgumentError("data_dir is required");
  if (options.nodes == 0 || options.buckets == 0) {
    return InvalidArgumentError("a cluster needs at least one node and one bucket");
  }
  auto backend = std::make_unique<server::EmbeddedBackend>();
  SHOAL_RETURN_IF_ERROR(backend->Start(options));
  return Database::Impl::Wrap(std::move(backend));
}

}  // namespace shoal
