#include "src/hotspot/top_k_sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace shoal::hotspot {

namespace {

// Weights stay below 2^kMaxExponent: far from overflow, and counts keep their precision.
constexpr double kMaxExponent = 32;

}  // namespace

TopKSketch::TopKSketch(const TopKSketchOptions& options) : options_(options) {
  options_.capacity = std::max<size_t>(1, options_.capacity);
  options_.half_life_micros = std::max<uint64_t>(1, options_.half_life_micros);
  counters_.reserve(options_.capacity);
  index_.reserve(options_.capacity);
}

double TopKSketch::WeightAt(uint64_t now_micros) const {
  if (now_micros <= landmark_micros_) return 1;
  const double half_lives = static_cast<double>(now_micros - landmark_micros_) /
                            static_cast<double>(options_.half_life_micros);
  return std::exp2(half_lives);
}

void TopKSketch::MaybeRescale(uint64_t now_micros) {
  if (now_micros <= landmark_micros_) return;
  const double half_lives = static_cast<double>(now_micros - landmark_micros_) /
                            static_cast<double>(options_.half_life_micros);
  if (half_lives <= kMaxExponent) return;
  // exp2 of a large exponent is inf and its reciprocal 0: every count decayed away.
  const double factor = 1 / std::exp2(half_lives);
  for (Counter& counter : counters_) {
    counter.count *= factor;
    counter.error *= factor;
  }
  total_ *= factor;
  landmark_micros_ = now_micros;
}

size_t TopKSketch::SmallestCounter() const {
  size_t smallest = 0;
  for (size_t i = 1; i < counters_.size(); ++i) {
    if (counters_[i].count < counters_[smallest].count) smallest = i;
  }
  return smallest;
}

void TopKSketch::Add(std::string_view key, uint64_t now_micros) {
  MaybeRescale(now_micros);
  const double weight = WeightAt(now_micros);
  total_ += weight;
  // absl::string_view may be its own type: look up through it without a copy of the key.
  if (auto it = index_.find(absl::string_view(key.data(), key.size())); it != index_.end()) {
    counters_[it->second].count += weight;
    return;
  }
  if (counters_.size() < options_.capacity) {
    index_.emplace(std::string(key), counters_.size());
    counters_.push_back(Counter{.key = std::string(key), .count = weight, .error = 0});
    return;
  }
  // Space-Saving: the new key takes over the smallest counter; what it inherits is its error.
  const size_t victim = SmallestCounter();
  Counter& counter = counters_[victim];
  index_.erase(counter.key);
  counter.key = std::string(key);
  counter.error = counter.count;
  counter.count += weight;
  index_.emplace(counter.key, victim);
}

std::vector<HotKey> TopKSketch::Top(size_t k, uint64_t now_micros) const {
  const double half_life_seconds = static_cast<double>(options_.half_life_micros) / 1e6;
  // Decayed count at `now` -> writes per second (see the class comment).
  const double to_rate = std::numbers::ln2 / half_life_seconds / WeightAt(now_micros);
  std::vector<HotKey> out;
  out.reserve(counters_.size());
  for (const Counter& counter : counters_) {
    const double rate = counter.count * to_rate;
    if (rate < options_.min_writes_per_second) continue;
    out.push_back(HotKey{.key = counter.key,
                         .writes_per_second = rate,
                         .error_per_second = counter.error * to_rate});
  }
  std::sort(out.begin(), out.end(), [](const HotKey& a, const HotKey& b) {
    if (a.writes_per_second != b.writes_per_second)
      return a.writes_per_second > b.writes_per_second;
    return a.key < b.key;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

Status TopKSketch::CheckInvariants() const {
  if (counters_.size() > options_.capacity) {
    return InternalError(
        fmt::format("{} counters over a capacity of {}", counters_.size(), options_.capacity));
  }
  if (index_.size() != counters_.size()) {
    return InternalError(
        fmt::format("{} keys indexed for {} counters", index_.size(), counters_.size()));
  }
  double sum = 0;
  for (size_t i = 0; i < counters_.size(); ++i) {
    const Counter& counter = counters_[i];
    auto it = index_.find(counter.key);
    if (it == index_.end() || it->second != i) {
      return InternalError(fmt::format("counter {} is not indexed at its position", i));
    }
    if (counter.error < 0 || counter.error > counter.count) {
      return InternalError(fmt::format("counter {}: error {} outside [0, count {}]", i,
                                       counter.error, counter.count));
    }
    sum += counter.count;
  }
  // Every weight lands in exactly one counter; only rounding separates the two sums.
  if (std::abs(sum - total_) > 1e-9 * std::max(1.0, total_)) {
    return InternalError(fmt::format("counters sum to {}, the stream to {}", sum, total_));
  }
  return OkStatus();
}

}  // namespace shoal::hotspot
