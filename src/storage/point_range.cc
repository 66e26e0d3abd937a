#include "src/storage/point_range.h"

#include <fmt/format.h>

#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {

StatusOr<PointRange> PointRange::Make(uint64_t begin, uint64_t end) {
  if (end < begin) {
    return StorageError(ErrorReason::kInvalidArgument,
                        fmt::format("range end {:#x} below begin {:#x}", end, begin));
  }
  return PointRange(begin, end, false);
}

bool PointRange::Covers(const PointRange& other) const {
  if (other.empty()) return true;
  if (other.begin_ < begin_) return false;
  if (end_is_max_) return true;
  return !other.end_is_max_ && other.end_ <= end_;
}

bool PointRange::Overlaps(const PointRange& other) const {
  if (empty() || other.empty()) return false;
  const bool this_before_other = !end_is_max_ && end_ <= other.begin_;
  const bool other_before_this = !other.end_is_max_ && other.end_ <= begin_;
  return !this_before_other && !other_before_this;
}

StatusOr<std::pair<PointRange, PointRange>> PointRange::SplitAt(uint64_t at) const {
  if (at <= begin_ || (!end_is_max_ && at >= end_)) {
    return StorageError(ErrorReason::kInvalidArgument,
                        fmt::format("split point {:#x} not inside {}", at, DebugString()));
  }
  return std::make_pair(PointRange(begin_, at, false), PointRange(at, end_, end_is_max_));
}

std::string PointRange::BeginKey() const {
  std::string key(8, '\0');
  EncodeBigEndian64(begin_, key.data());
  return key;
}

std::string PointRange::EndKey() const {
  if (end_is_max_) return std::string(kMaxStoredKeyBound);
  std::string key(8, '\0');
  EncodeBigEndian64(end_, key.data());
  return key;
}

std::string PointRange::DebugString() const {
  if (end_is_max_) return fmt::format("[{:#018x}, 2^64)", begin_);
  return fmt::format("[{:#018x}, {:#018x})", begin_, end_);
}

}  // namespace shoal::storage
