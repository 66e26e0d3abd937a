#pragma once

// BucketRange: one bucket of the hash space, the half-open range [begin, end) of 64-bit points
// (ARCHITECTURE.md §1). The hash space is [0, 2^64); 2^64 does not fit in 64 bits, so the end is
// stored as a flag `end_is_max` (end = 2^64) plus a 64-bit value used only when the flag is clear.
// A range is never empty: begin < end. Buckets are contiguous ranges, as the high-order-bit
// convention of the extendible scheme (src/partition/extendible_scheme.h) gives: a dyadic bucket
// with prefix x and depth d is [x << (64-d), (x+1) << (64-d)), and the one with the highest prefix
// ends at 2^64.
//
// Value type; thread-compatible.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "src/common/point.h"
#include "src/common/status.h"

namespace shoal::cluster {

class BucketRange {
 public:
  // [begin, end) with a finite end; InvalidArgument unless begin < end.
  [[nodiscard]] static StatusOr<BucketRange> Make(uint64_t begin, uint64_t end);
  // [begin, 2^64): always valid.
  [[nodiscard]] static BucketRange ToMax(uint64_t begin) { return BucketRange(begin, 0, true); }
  // [0, 2^64): the whole hash space.
  [[nodiscard]] static BucketRange Full() { return ToMax(0); }

  // The default range is the whole hash space.
  BucketRange() = default;

  [[nodiscard]] uint64_t begin() const { return begin_; }
  // True when the range ends at 2^64 (the end of the hash space).
  [[nodiscard]] bool end_is_max() const { return end_is_max_; }
  // The end point; only meaningful when !end_is_max() (it is 0 otherwise).
  [[nodiscard]] uint64_t end() const { return end_; }
  // The last point inside the range (inclusive); always representable.
  [[nodiscard]] uint64_t last() const { return end_is_max_ ? UINT64_MAX : end_ - 1; }
  // Number of points minus one (the full space has 2^64 points, which does not fit).
  [[nodiscard]] uint64_t width_minus_one() const { return last() - begin_; }

  [[nodiscard]] bool Contains(Point point) const {
    return point.value() >= begin_ && (end_is_max_ || point.value() < end_);
  }
  // True when `next` starts exactly where this range ends.
  [[nodiscard]] bool IsFollowedBy(const BucketRange& next) const {
    return !end_is_max_ && end_ == next.begin_;
  }
  // The two halves [begin, at) and [at, end); InvalidArgument unless begin < at < end.
  [[nodiscard]] StatusOr<std::pair<BucketRange, BucketRange>> SplitAt(uint64_t at) const;
  // The middle point of the range, a valid split point for ranges of two or more points
  // (for a dyadic bucket it is the split point of one more prefix bit).
  [[nodiscard]] uint64_t Midpoint() const { return begin_ + width_minus_one() / 2 + 1; }
  // The union of this range and `next`; InvalidArgument unless IsFollowedBy(next).
  [[nodiscard]] StatusOr<BucketRange> MergeWith(const BucketRange& next) const;

  // "[0x0000000000000000, 0x8000000000000000)" or "[0x8000000000000000, 2^64)".
  [[nodiscard]] std::string DebugString() const;

  friend bool operator==(const BucketRange&, const BucketRange&) = default;

 private:
  BucketRange(uint64_t begin, uint64_t end, bool end_is_max)
      : begin_(begin), end_(end_is_max ? 0 : end), end_is_max_(end_is_max) {}

  uint64_t begin_ = 0;
  uint64_t end_ = 0;        // 0 when end_is_max_
  bool end_is_max_ = true;  // end = 2^64
};

}  // namespace shoal::cluster
