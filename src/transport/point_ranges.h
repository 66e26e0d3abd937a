#pragma once

// The one conversion from a bucket's range in the ShardMap (cluster::BucketRange) to the range
// of stored points a store reads and writes (storage::PointRange). It lives in the lowest layer
// that sees both types.

#include <cstdint>

#include "src/cluster/bucket_range.h"
#include "src/storage/point_range.h"

namespace shoal::transport {

// The points of `range`.
[[nodiscard]] inline storage::PointRange ToPointRange(const cluster::BucketRange& range) {
  if (range.end_is_max()) return storage::PointRange::From(range.begin());
  // A BucketRange is never empty (begin < end), so Make cannot fail.
  return *storage::PointRange::Make(range.begin(), range.end());
}

// The points of `range` from `from` on; `from` must be in `range`.
[[nodiscard]] inline storage::PointRange RestOf(const cluster::BucketRange& range, uint64_t from) {
  if (range.end_is_max()) return storage::PointRange::From(from);
  return *storage::PointRange::Make(from, range.end());
}

}  // namespace shoal::transport
