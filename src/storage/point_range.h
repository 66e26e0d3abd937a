#pragma once

// PointRange: a half-open range [begin, end) of the 64-bit hash space, the extent of a bucket.
// end = 2^64 is represented explicitly by end_is_max(), so the whole space is one range and no
// 128-bit arithmetic is needed. Value type; thread-compatible.
//
// In the documents column family every stored key starts with its point, big-endian, so the
// documents of a range are exactly the stored keys in [BeginKey(), EndKey()).

#include <compare>
#include <cstdint>
#include <string>

#include "src/common/point.h"
#include "src/common/status.h"

namespace shoal::storage {

class PointRange {
 public:
  // The empty range [0, 0).
  constexpr PointRange() = default;

  // [0, 2^64): every point.
  [[nodiscard]] static constexpr PointRange All() { return PointRange(0, 0, true); }
  // [begin, 2^64).
  [[nodiscard]] static constexpr PointRange From(uint64_t begin) {
    return PointRange(begin, 0, true);
  }
  // [begin, end); InvalidArgument if end < begin.
  [[nodiscard]] static StatusOr<PointRange> Make(uint64_t begin, uint64_t end);

  [[nodiscard]] constexpr uint64_t begin() const { return begin_; }
  // Meaningful only when !end_is_max().
  [[nodiscard]] constexpr uint64_t end() const { return end_; }
  [[nodiscard]] constexpr bool end_is_max() const { return end_is_max_; }

  [[nodiscard]] constexpr bool empty() const { return !end_is_max_ && begin_ >= end_; }
  [[nodiscard]] constexpr bool Contains(uint64_t point) const {
    return point >= begin_ && (end_is_max_ || point < end_);
  }
  [[nodiscard]] bool Contains(Point point) const { return Contains(point.value()); }
  // True iff every point of `other` is in this range (the empty range is in every range).
  [[nodiscard]] bool Covers(const PointRange& other) const;
  [[nodiscard]] bool Overlaps(const PointRange& other) const;

  // The two halves of this range at `at`: [begin, at) and [at, end). InvalidArgument unless
  // begin < at < end, so both halves are non-empty.
  [[nodiscard]] StatusOr<std::pair<PointRange, PointRange>> SplitAt(uint64_t at) const;

  // Bounds of the range in stored-key space: BeginKey() <= key < EndKey() for the documents in it.
  [[nodiscard]] std::string BeginKey() const;
  [[nodiscard]] std::string EndKey() const;

  [[nodiscard]] std::string DebugString() const;

  friend constexpr bool operator==(const PointRange&, const PointRange&) = default;

 private:
  constexpr PointRange(uint64_t begin, uint64_t end, bool end_is_max)
      : begin_(begin), end_(end), end_is_max_(end_is_max) {}

  uint64_t begin_ = 0;
  uint64_t end_ = 0;  // 0 when end_is_max_
  bool end_is_max_ = false;
};

}  // namespace shoal::storage
