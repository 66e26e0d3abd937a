#pragma once

// Helpers shared by the coordinator's files. Not part of the coordinator's interface.

#include <fmt/format.h>

#include <string>

#include "src/cluster/bucket_range.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/point_range.h"

namespace shoal::coordinator::internal {

// The move log record of `move` in the MetadataStore.
[[nodiscard]] inline std::string MoveLogKey(MoveId move) {
  return fmt::format("moves/{:020}", move.value());
}

[[nodiscard]] inline storage::PointRange ToPointRange(const cluster::BucketRange& range) {
  if (range.end_is_max()) return storage::PointRange::From(range.begin());
  return *storage::PointRange::Make(range.begin(), range.end());
}

// Transport failures worth another attempt of an idempotent move step.
[[nodiscard]] inline bool Retryable(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded;
}

}  // namespace shoal::coordinator::internal
