#pragma once

// Helpers shared by the coordinator's files. Not part of the coordinator's interface.

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "src/cluster/bucket_range.h"
#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/point_range.h"
#include "src/transport/classify.h"
#include "src/transport/point_ranges.h"

namespace shoal::coordinator::internal {

// The move log record of `move` in the MetadataStore.
[[nodiscard]] inline std::string MoveLogKey(MoveId move) {
  return fmt::format("moves/{:020}", move.value());
}

using transport::ToPointRange;

// The bucket's placement while `move` is in flight on it, else nullptr.
[[nodiscard]] inline const cluster::BucketPlacement* MovingBucket(const cluster::ShardMap& map,
                                                                  BucketId bucket, MoveId move) {
  const cluster::BucketPlacement* placement = map.Find(bucket);
  if (placement == nullptr || !placement->transition.has_value() ||
      placement->transition->move != move) {
    return nullptr;
  }
  return placement;
}

// Transport failures worth another attempt of an idempotent move step (Classify).
[[nodiscard]] inline bool Retryable(const Status& status) {
  return transport::Classify(status, transport::StatusOrigin::kCall, /*idempotent=*/true) ==
         transport::RetryAction::kResend;
}

// The edit that splits `bucket` at `at` (default: its midpoint); kNotFound without it.
[[nodiscard]] inline std::function<Status(const cluster::ShardMap&, cluster::ShardMapEdit*)>
SplitBucketEdit(BucketId bucket, std::optional<uint64_t> at) {
  return [bucket, at](const cluster::ShardMap& map, cluster::ShardMapEdit* edit) {
    const auto* placement = map.Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    edit->SplitBucket(bucket, at.value_or(placement->range.Midpoint()), map.NextBucketId());
    return OkStatus();
  };
}

// The edit that merges `left` with its right neighbour `right`.
[[nodiscard]] inline std::function<Status(const cluster::ShardMap&, cluster::ShardMapEdit*)>
MergeBucketsEdit(BucketId left, BucketId right) {
  return [left, right](const cluster::ShardMap&, cluster::ShardMapEdit* edit) {
    edit->MergeBuckets(left, right);
    return OkStatus();
  };
}

}  // namespace shoal::coordinator::internal
