#include "src/partition/key_pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "src/common/random.h"

namespace shoal::partition {
namespace {

constexpr double kZipfTheta = 0.99;

// Cumulative distribution of the Zipf ranks 1..kZipfRanks.
std::vector<double> ZipfCdf() {
  std::vector<double> cdf(kZipfRanks);
  double sum = 0;
  for (uint32_t r = 1; r <= kZipfRanks; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r), kZipfTheta);
    cdf[r - 1] = sum;
  }
  for (double& c : cdf) c /= sum;
  return cdf;
}

}  // namespace

StatusOr<KeyPattern> ParseKeyPattern(std::string_view name) {
  if (name == "sequential") return KeyPattern::kSequential;
  if (name == "uniform") return KeyPattern::kUniform;
  if (name == "zipfian") return KeyPattern::kZipfian;
  return InvalidArgumentError(
      fmt::format("unknown key pattern '{}' (expected sequential, uniform or zipfian)", name));
}

std::string_view KeyPatternName(KeyPattern pattern) {
  switch (pattern) {
    case KeyPattern::kSequential:
      return "sequential";
    case KeyPattern::kUniform:
      return "uniform";
    case KeyPattern::kZipfian:
      return "zipfian";
  }
  return "unknown";
}

StatusOr<KeyHash> ParseKeyHash(std::string_view name) {
  if (name == "xxh3") return KeyHash::kXxh3;
  if (name == "identity") return KeyHash::kIdentity;
  return InvalidArgumentError(
      fmt::format("unknown key hash '{}' (expected xxh3 or identity)", name));
}

std::string_view KeyHashName(KeyHash hash) {
  switch (hash) {
    case KeyHash::kXxh3:
      return "xxh3";
    case KeyHash::kIdentity:
      return "identity";
  }
  return "unknown";
}

StatusOr<KeySet> KeySet::Generate(const KeySetOptions& options) {
  if (options.count == 0 || options.count > kMaxKeys) {
    return InvalidArgumentError(fmt::format("key count must be in [1, {}]", kMaxKeys));
  }
  if (options.record_bytes == 0 || options.record_bytes > (1u << 20)) {
    return InvalidArgumentError("record bytes must be in [1, 1048576]");
  }
  KeySet set;
  const size_t n = options.count;
  set.raw_.resize(8 * n);
  set.points_.resize(n);
  set.bytes_.resize(n);

  Random rng(options.seed);
  absl::flat_hash_set<uint64_t> seen;
  const bool random_keys = options.pattern != KeyPattern::kSequential;
  if (random_keys) seen.reserve(n);
  const std::vector<double> cdf =
      options.pattern == KeyPattern::kZipfian ? ZipfCdf() : std::vector<double>{};

  for (size_t i = 0; i < n; ++i) {
    uint64_t key = i;
    if (random_keys) {
      do {
        key = rng.Next64();
      } while (!seen.insert(key).second);
    }
    char* raw = set.raw_.data() + 8 * i;
    EncodeBigEndian64(key, raw);
    switch (options.hash) {
      case KeyHash::kXxh3:
        set.points_[i] = PointOf(options.collection, std::string_view(raw, 8));
        break;
      case KeyHash::kIdentity:
        set.points_[i] = Point(key);
        break;
    }
    uint32_t bytes = options.record_bytes;
    if (options.pattern == KeyPattern::kZipfian) {
      const double u = rng.NextDouble();
      const auto rank =
          static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin()) + 1;
      bytes = options.record_bytes * std::min(rank, kZipfRanks);
    }
    set.bytes_[i] = bytes;
    set.total_bytes_ += bytes;
  }
  return set;
}

}  // namespace shoal::partition
