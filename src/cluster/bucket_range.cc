#include "src/cluster/bucket_range.h"

#include <fmt/format.h>

namespace shoal::cluster {

StatusOr<BucketRange> BucketRange::Make(uint64_t begin, uint64_t end) {
  if (begin >= end) {
    return InvalidArgumentError(
        fmt::format("bucket range: begin {:#x} not below end {:#x}", begin, end));
  }
  return BucketRange(begin, end, false);
}

StatusOr<std::pair<BucketRange, BucketRange>> BucketRange::SplitAt(uint64_t at) const {
  if (at <= begin_ || (!end_is_max_ && at >= end_)) {
    return InvalidArgumentError(
        fmt::format("bucket range: split point {:#x} not inside {}", at, DebugString()));
  }
  return std::make_pair(BucketRange(begin_, at, false), BucketRange(at, end_, end_is_max_));
}

StatusOr<BucketRange> BucketRange::MergeWith(const BucketRange& next) const {
  if (!IsFollowedBy(next)) {
    return InvalidArgumentError(
        fmt::format("bucket range: {} is not followed by {}", DebugString(), next.DebugString()));
  }
  return BucketRange(begin_, next.end_, next.end_is_max_);
}

std::string BucketRange::DebugString() const {
  if (end_is_max_) return fmt::format("[{:#018x}, 2^64)", begin_);
  return fmt::format("[{:#018x}, {:#018x})", begin_, end_);
}

}  // namespace shoal::cluster
