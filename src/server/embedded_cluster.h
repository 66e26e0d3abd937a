#pragma once

// EmbeddedCluster: a coordinator, its MetadataStore and N storage nodes wired together on one
// Runtime, each in its own directory under `data_dir`. Used by `shoal demo` (ThreadRuntime) and
// by the deterministic simulation (SimRuntime), which also crashes and restarts its processes.
//
// Thread-safety: methods are thread-safe. With SimRuntime they must be called from a task;
// StopAll must be called before the runtime shuts down its tasks.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "src/metadata/metadata_store.h"
#include "src/node/storage_node.h"
#include "src/transport/runtime.h"

namespace shoal::server {

struct EmbeddedClusterOptions {
  std::string data_dir;
  uint32_t initial_nodes = 3;  // node ids 1..initial_nodes
  uint32_t buckets = 16;
  // K: copies of every bucket (docs/design/replication.md), at most initial_nodes.
  uint32_t replication_factor = 1;
  bool sync = false;  // fsync every write (metadata and documents)
  coordinator::CoordinatorOptions coordinator;
  node::NodeOptions node;  // template: id and data_dir are set per node
  // Tests: what the coordinator writes through, given the opened store (unset: the store itself),
  // e.g. a store that fails on demand.
  std::function<std::unique_ptr<metadata::MetadataStore>(std::unique_ptr<metadata::MetadataStore>)>
      wrap_metadata;
};

class EmbeddedCluster {
 public:
  EmbeddedCluster(transport::Runtime& runtime, const EmbeddedClusterOptions& options);
  ~EmbeddedCluster();

  // Opens the metadata store, the coordinator (creating the first map) and the initial nodes.
  [[nodiscard]] Status Start();
  // Starts (or restarts) the process of `node` on its directory.
  [[nodiscard]] Status StartNode(NodeId node);
  // Crashes `node`: it stops serving at once; its store closes once its handlers returned.
  [[nodiscard]] Status CrashNode(NodeId node);
  [[nodiscard]] Status StartCoordinator();
  void CrashCoordinator();
  // A new node process, then AddNode at the coordinator (the balancer bootstraps it).
  [[nodiscard]] Status AddNode(NodeId node);
  // Closes every process.
  [[nodiscard]] Status StopAll();

  [[nodiscard]] std::shared_ptr<coordinator::Coordinator> coordinator() const;
  [[nodiscard]] std::shared_ptr<node::StorageNode> node(NodeId id) const;
  [[nodiscard]] std::vector<NodeId> started_nodes() const;

 private:
  transport::Runtime& runtime_;
  const EmbeddedClusterOptions options_;
  std::unique_ptr<metadata::MetadataStore> metadata_;
  mutable std::mutex mu_;
  std::shared_ptr<coordinator::Coordinator> coordinator_;
  std::map<NodeId, std::shared_ptr<node::StorageNode>> nodes_;
};

}  // namespace shoal::server
