#pragma once

// The point of a document on Shoal's 64-bit hash space (ARCHITECTURE.md §1):
//   point = xxh3_64(collection id, primary key)
// computed as XXH3_64bits_withSeed(pk bytes, seed = collection id). XXH3's output is specified
// byte for byte, so a point is the same on every process, machine and endianness.

#include <cstdint>
#include <string_view>

#include "src/common/ids.h"

namespace shoal {

struct PointTag {
  static constexpr const char* kPrefix = "p";
};
// A position on the hash space [0, 2^64).
using Point = StrongId<PointTag, uint64_t>;

[[nodiscard]] Point PointOf(CollectionId collection, std::string_view primary_key);

// xxh3_64 of `bytes` with `seed`; the one hash function used for placement (tokens, weights).
[[nodiscard]] uint64_t Hash64(std::string_view bytes, uint64_t seed);

// xxh3_64 of a 64-bit integer, encoded little-endian first so the result is platform-independent.
[[nodiscard]] uint64_t HashU64(uint64_t value, uint64_t seed);

// Order-preserving 8-byte big-endian encoding of `value` (for raw keys and stored keys).
void EncodeBigEndian64(uint64_t value, char out[8]);
[[nodiscard]] uint64_t DecodeBigEndian64(const char in[8]);

}  // namespace shoal
