#pragma once

// ClusterIdentity: which cluster a node's data directory belongs to (docs/design/network.md,
// "Cluster identity"). The coordinator makes a cluster id once, when the cluster's metadata is
// created (coordinator::MapCommitter, transport::ClusterState::cluster_id); a node adopts the
// first one it is sent and keeps it in DATA/cluster-id. From then on it installs no state of
// another cluster and the coordinator of another cluster refuses its heartbeats: a node pointed
// at the wrong coordinator, or a cluster whose coordinator metadata was lost and made anew,
// never serves old documents under the new cluster's collections (whose ids start again at 1).
//
// Invariant: once adopted, the id never changes for the life of the directory.
//
// Thread-compatible: the node calls it under its mutex.

#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/transport/messages.h"

namespace shoal::node {

class ClusterIdentity {
 public:
  // Reads DATA/cluster-id; none yet (0) if the file is absent. A file that does not parse is
  // an error: the node refuses to start rather than adopt another cluster.
  [[nodiscard]] static StatusOr<ClusterIdentity> Open(const std::string& data_dir);

  // 0 until adopted.
  [[nodiscard]] uint64_t id() const { return id_; }

  // OK if the node may take state of cluster `cluster` (0: a coordinator that names none): the
  // one it belongs to, or the first it is sent, which it adopts and writes durably (a failed
  // write is returned and nothing is adopted). kFailedPrecondition naming both clusters
  // otherwise.
  [[nodiscard]] Status Admit(uint64_t cluster);

 private:
  ClusterIdentity(std::string path, uint64_t id) : path_(std::move(path)), id_(id) {}

  std::string path_;
  uint64_t id_ = 0;
};

}  // namespace shoal::node
