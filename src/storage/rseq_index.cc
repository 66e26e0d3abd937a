#include "src/storage/rseq_index.h"

#include <algorithm>

namespace shoal::storage {

void RseqIndex::Record(uint64_t rseq, uint64_t sequence) {
  if (points_.empty()) {
    floor_ = rseq + 1;
  } else if (points_.back().rseq >= rseq) {
    // The same rseq again (a write that wrote nothing and took no rseq, then the next attempt):
    // the earlier point is the lower bound already.
    return;
  }
  points_.push_back(Point{.rseq = rseq, .sequence = sequence});
  if (points_.size() < kMaxPoints) return;
  // Thin the older half: keep its even positions, so the first point (the floor's) stays.
  const size_t half = points_.size() / 2;
  size_t out = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    if (i < half && i % 2 == 1) continue;
    points_[out++] = points_[i];
  }
  points_.resize(out);
}

std::optional<uint64_t> RseqIndex::SequenceAfter(uint64_t rseq) const {
  if (points_.empty() || rseq < floor_) return std::nullopt;
  // The last point at or below rseq (the first point is below the floor, so one exists).
  auto it = std::upper_bound(points_.begin(), points_.end(), rseq,
                             [](uint64_t r, const Point& p) { return r < p.rseq; });
  if (it == points_.begin()) return std::nullopt;
  return std::prev(it)->sequence;
}

void RseqIndex::Clear() {
  points_.clear();
  floor_ = 0;
}

}  // namespace shoal::storage
