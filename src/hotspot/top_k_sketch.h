#pragma once

// TopKSketch: the most written keys of a stream and their write rates, in bounded memory
// (docs/design/hotspot.md, "Hot-key sketch on nodes").

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/common/status.h"

namespace shoal::hotspot {

// One key of TopKSketch::Top: its estimated write rate and how much of it may be over-estimate.
// The true (decayed) rate lies in [writes_per_second - error_per_second, writes_per_second].
struct HotKey {
  std::string key{};
  double writes_per_second = 0;
  double error_per_second = 0;
};

struct TopKSketchOptions {
  // Counters kept: memory and the per-miss cost grow with it; a key whose share of the decayed
  // stream exceeds 1/capacity is always kept.
  size_t capacity = 64;
  // A write counts half as much this long after it happened.
  uint64_t half_life_micros = 10'000'000;
  // Top omits keys whose estimated rate fell below this, so that a key that cooled drops out
  // even when nothing else is written.
  double min_writes_per_second = 0.01;
};

// Space-Saving (Metwally, Agrawal, El Abbadi: "Efficient Computation of Frequent and Top-k
// Elements in Data Streams", ICDT 2005) over exponentially decayed counts. At most `capacity`
// counters; a write to a counted key adds to its counter, a write to another key takes over the
// smallest counter (or a free one) and records the count it inherited as its error. So every
// counter over-estimates its key by at most its error, errors never exceed the smallest counter,
// and every key with more than 1/capacity of the total is counted.
//
// Decay uses forward decay (Cormode, Shkapenyuk, Srivastava, Xu, ICDE 2009): a write at time t
// weighs 2^((t - landmark) / half_life), so that the ordering of counters never changes between
// writes and Add touches one counter; the landmark moves forward (every counter rescaled) once
// weights grow large. A decayed count C of a key written at a steady r per second tends to
// r * half_life / ln 2, so Top reports C * ln 2 / half_life as the rate: a burst shows at once,
// a steady rate after a few half-lives, and a key that stops decays by half every half-life.
//
// Deterministic: time is passed in, in microseconds of any monotonic clock (a time before the
// landmark counts as the landmark). Thread-compatible: the caller locks.
class TopKSketch {
 public:
  explicit TopKSketch(const TopKSketchOptions& options = {});

  // Counts one write to `key` at `now_micros`.
  void Add(std::string_view key, uint64_t now_micros);
  // The at most k keys of the highest estimated rates at `now_micros`, highest first (ties by
  // key), without those below options.min_writes_per_second.
  [[nodiscard]] std::vector<HotKey> Top(size_t k, uint64_t now_micros) const;

  [[nodiscard]] size_t size() const { return counters_.size(); }
  [[nodiscard]] size_t capacity() const { return options_.capacity; }

  // Counters sum to the stream's total weight, every error is at most its count, at most
  // `capacity` counters, and the key index matches the counters.
  [[nodiscard]] Status CheckInvariants() const;

 private:
  struct Counter {
    std::string key;
    double count = 0;  // weights since the landmark, over-estimate by at most `error`
    double error = 0;
  };

  // Moves the landmark to `now` when weights at `now` would exceed 2^kMaxExponent.
  void MaybeRescale(uint64_t now_micros);
  // 2^(half-lives from the landmark to `now_micros`), at least 1.
  [[nodiscard]] double WeightAt(uint64_t now_micros) const;
  [[nodiscard]] size_t SmallestCounter() const;

  TopKSketchOptions options_;
  uint64_t landmark_micros_ = 0;
  double total_ = 0;  // every weight added since the landmark
  std::vector<Counter> counters_;
  absl::flat_hash_map<std::string, size_t> index_;  // key -> position in counters_
};

}  // namespace shoal::hotspot
