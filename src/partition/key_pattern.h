#pragma once

// Key sets for placement experiments (pure, seeded, deterministic).
//
//   sequential: keys 0, 1, ..., N-1 (paper 002 §7.1), each `record_bytes` long.
//   uniform:    N distinct uniformly random 64-bit keys, each `record_bytes` long.
//   zipfian:    uniform random keys whose record sizes follow a Zipf law (θ = 0.99, as YCSB):
//               size = record_bytes * r, r in [1, kZipfRanks], P(r) ∝ r^-θ. Many small, few large.
//
// A key's raw form is its 8-byte big-endian encoding (order-preserving for range partitioning);
// its point is either xxh3 of the raw form (PointOf with the given collection) or, with
// KeyHash::kIdentity, the integer itself: the "identity-like" hash of libstdc++'s std::hash on
// integers that paper 002 figure 7 shows.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/common/point.h"
#include "src/common/status.h"
#include "src/partition/scheme.h"

namespace shoal::partition {

enum class KeyPattern { kSequential, kUniform, kZipfian };
enum class KeyHash { kXxh3, kIdentity };

[[nodiscard]] StatusOr<KeyPattern> ParseKeyPattern(std::string_view name);
[[nodiscard]] std::string_view KeyPatternName(KeyPattern pattern);
[[nodiscard]] StatusOr<KeyHash> ParseKeyHash(std::string_view name);
[[nodiscard]] std::string_view KeyHashName(KeyHash hash);

inline constexpr uint32_t kZipfRanks = 100;
inline constexpr uint64_t kMaxKeys = 100'000'000;

struct KeySetOptions {
  KeyPattern pattern = KeyPattern::kSequential;
  KeyHash hash = KeyHash::kXxh3;
  uint64_t count = 1'000'000;
  uint32_t record_bytes = 100;
  uint64_t seed = 42;
  CollectionId collection = CollectionId(1);
};

// Struct of arrays: key i has raw bytes raw[8i, 8i+8), point points[i] and size bytes[i].
class KeySet {
 public:
  [[nodiscard]] static StatusOr<KeySet> Generate(const KeySetOptions& options);

  [[nodiscard]] size_t size() const { return points_.size(); }
  [[nodiscard]] KeyRef key(size_t i) const {
    return KeyRef{.point = points_[i], .raw = std::string_view(raw_.data() + 8 * i, 8)};
  }
  [[nodiscard]] const std::vector<Point>& points() const { return points_; }
  [[nodiscard]] const std::vector<uint32_t>& bytes() const { return bytes_; }
  [[nodiscard]] uint64_t total_bytes() const { return total_bytes_; }

 private:
  std::string raw_;
  std::vector<Point> points_;
  std::vector<uint32_t> bytes_;
  uint64_t total_bytes_ = 0;
};

}  // namespace shoal::partition
