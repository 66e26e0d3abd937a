#pragma once

// Small pure helpers shared by the storage node's files: conversions between the map's bucket
// ranges and the store's point ranges, and membership in a replica list. Thread-safe.

#include <algorithm>
#include <vector>

#include "src/cluster/bucket_range.h"
#include "src/common/ids.h"
#include "src/storage/point_range.h"
#include "src/transport/point_ranges.h"

namespace shoal::node {

using transport::ToPointRange;

[[nodiscard]] inline bool Overlaps(const cluster::BucketRange& bucket,
                                   const storage::PointRange& range) {
  return ToPointRange(bucket).Overlaps(range);
}

// Whether `node` is in `nodes` (a replica, source or destination list).
[[nodiscard]] inline bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace shoal::node
