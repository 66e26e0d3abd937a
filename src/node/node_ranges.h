#pragma once

// Conversions between the map's bucket ranges and the store's point ranges, shared by the
// storage node's files. Pure functions; thread-safe.

#include "src/cluster/bucket_range.h"
#include "src/storage/point_range.h"

namespace shoal::node {

[[nodiscard]] inline storage::PointRange ToPointRange(const cluster::BucketRange& range) {
  if (range.end_is_max()) return storage::PointRange::From(range.begin());
  return *storage::PointRange::Make(range.begin(), range.end());
}

[[nodiscard]] inline bool Overlaps(const cluster::BucketRange& bucket,
                                   const storage::PointRange& range) {
  return ToPointRange(bucket).Overlaps(range);
}

}  // namespace shoal::node
