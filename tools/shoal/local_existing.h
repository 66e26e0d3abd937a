#pragma once

// `shoal local` started on a data directory that already holds a cluster. The flags that shape a
// new cluster (--replicas, --min-in-sync) do not change an existing one: the stored map wins. So
// once the coordinator answers, shoal local reads its map, changes nothing, and
// - shows the cluster's own K and min_in_sync, and says so when the flags asked for others;
// - names every node it started that is not a member, with the command that adds it: adding a
//   node moves data, and a node removed by `shoal remove-node` (its drain may end while shoal
//   local waits for the cluster) must not come back by itself;
// - names every member it did not start (`--nodes 2` on a cluster of three leaves node 3 down:
//   its copies are missing until it returns or is removed).
// For a new cluster the map is the flags' own, and nothing is named.
//
// Thread-safety: pure functions, and one that talks through the runtime it is given.

#include <cstdint>
#include <string>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/net/grpc_runtime.h"

namespace shoal::tools {

// What shoal local asked for: the nodes it started (1..nodes) and the setting flags as given
// (0: not given).
struct LocalAsked {
  uint32_t nodes = 0;
  uint32_t replicas = 0;
  uint32_t min_in_sync = 0;
};

struct LocalClusterView {
  uint32_t replicas = 1;            // the cluster's K
  uint32_t min_in_sync = 1;         // and its floor
  std::vector<NodeId> not_members;  // started by shoal local, not members
  std::vector<NodeId> not_started;  // members shoal local did not start
  // Set when the flags asked for another K or floor than the cluster keeps: the line to print.
  std::string setting_note;
};

[[nodiscard]] LocalClusterView ViewOfLocalCluster(const cluster::ShardMap& map,
                                                  const LocalAsked& asked);

// The view of the cluster served through `runtime`, and the lines to print about it, in order.
struct LocalDescription {
  LocalClusterView view;
  std::vector<std::string> lines;
};

[[nodiscard]] StatusOr<LocalDescription> DescribeLocalCluster(net::GrpcRuntime& runtime,
                                                              const LocalAsked& asked);

}  // namespace shoal::tools
