#pragma once

// Random: a seeded, deterministic pseudo-random generator (xoshiro256**, seeded by SplitMix64).
// Unlike std:: distributions, every method here gives the same sequence on every platform and
// standard library, so a seed replays exactly. Not thread-safe: one instance per thread.

#include <cstdint>

namespace shoal {

class Random {
 public:
  explicit Random(uint64_t seed);

  [[nodiscard]] uint64_t seed() const { return seed_; }

  // Uniform over [0, 2^64).
  uint64_t Next64();
  // Uniform over [0, n); n > 0. Lemire's nearly-divisionless method, unbiased.
  uint64_t Uniform(uint64_t n);
  // Uniform over [lo, hi]; lo <= hi.
  uint64_t Range(uint64_t lo, uint64_t hi);
  // Uniform over [0, 1).
  double NextDouble();
  // True with probability 1/n; n > 0.
  bool OneIn(uint64_t n);

 private:
  uint64_t seed_;
  uint64_t s_[4] = {};
};

}  // namespace shoal
