#include "src/common/point.h"

// Header-only mode: the hash is compiled into this file and inlined, not called through the
// shared library (the same algorithm and output, about twice as fast on short keys).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shoal {

Point PointOf(CollectionId collection, std::string_view primary_key) {
  return Point(XXH3_64bits_withSeed(primary_key.data(), primary_key.size(), collection.value()));
}

uint64_t Hash64(std::string_view bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

uint64_t HashU64(uint64_t value, uint64_t seed) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(value >> (8 * i));
  return XXH3_64bits_withSeed(le, sizeof(le), seed);
}

void EncodeBigEndian64(uint64_t value, char out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (56 - 8 * i));
}

uint64_t DecodeBigEndian64(const char in[8]) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

}  // namespace shoal
