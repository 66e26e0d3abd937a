#pragma once

// RseqIndex: where in this store's write-ahead log a bucket's writes after a replication
// position begin (docs/design/replication.md §6, "Log retention = hinted handoff"). A returning
// copy at rseq x skips the snapshot only if the primary can name an engine sequence S such that
// ReadChangesSince(range, S) returns every write of the bucket after x; this index is that proof.
//
// A point (r, S) is recorded under the bucket's sequencer just before the write of rseq r + 1
// (by a primary that orders it or a backup that applies it): every write of rseq <= r has
// returned, so its engine sequence is at most S, and every write of rseq > r comes later, so
// its sequence is above S. For a copy at x, the point with the largest r <= x gives the
// start; replaying the writes between r and x again is harmless (apply-if-newer).
//
// The index vouches only for copies at x >= floor, where floor is one above the first point
// recorded since the index began (the store opened, or Clear): such a copy holds at least one
// write this store also saw through the stream, so it was a copy of the bucket while this store
// was, over the bucket's current range. A copy that left before (and so, for instance, before a
// merge widened the range it must hold) is rebuilt. The storage node clears the index when the
// bucket's range changes or the node stops being one of its replicas (its WAL then may lack
// writes of the range), and SetReplicaState starts it afresh at the state it stores.
//
// Bounded: at most kMaxPoints points; when full, every other point of the older half goes, so
// recent positions keep a fine resolution and old ones a coarse one. In memory only: empty
// after a restart, so a restarted primary vouches for nothing (its copies are rebuilt).
//
// Thread-compatible (the bucket's sequencer guards it).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace shoal::storage {

class RseqIndex {
 public:
  static constexpr size_t kMaxPoints = 512;

  // Before the write of rseq + 1: every later write of the bucket gets an engine sequence above
  // `sequence`. rseq and sequence never decrease between calls (the sequencer orders them).
  void Record(uint64_t rseq, uint64_t sequence);
  // The engine sequence after which the log holds every write of the bucket after rseq `rseq`,
  // if the index vouches for a copy at `rseq`; nullopt otherwise.
  [[nodiscard]] std::optional<uint64_t> SequenceAfter(uint64_t rseq) const;
  // Forgets every point: nothing is vouched for until the next Record.
  void Clear();
  [[nodiscard]] bool empty() const { return points_.empty(); }
  [[nodiscard]] size_t size() const { return points_.size(); }

 private:
  struct Point {
    uint64_t rseq = 0;
    uint64_t sequence = 0;
  };
  std::vector<Point> points_;  // rseq strictly increasing
  uint64_t floor_ = 0;         // copies at rseq >= floor_; set by the first Record
};

}  // namespace shoal::storage
