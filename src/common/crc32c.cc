#include "src/common/crc32c.h"

#include <array>

namespace shoal {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

// Slicing-by-8 tables: kTables[0] is the byte-at-a-time table, kTables[k][b] the CRC of byte b
// followed by k zero bytes, so that eight input bytes fold in with eight lookups.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) != 0 ? (crc >> 1) ^ kPolynomial : crc >> 1;
    tables[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) {
      const uint32_t previous = tables[k - 1][b];
      tables[k][b] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint32_t Byte(const char* p, size_t i) { return static_cast<unsigned char>(p[i]); }

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  uint32_t c = ~crc;
  const char* p = data.data();
  size_t n = data.size();
  while (n >= 8) {
    const uint32_t low = c ^ (Byte(p, 0) | Byte(p, 1) << 8 | Byte(p, 2) << 16 | Byte(p, 3) << 24);
    c = kTables[7][low & 0xFFu] ^ kTables[6][(low >> 8) & 0xFFu] ^ kTables[5][(low >> 16) & 0xFFu] ^
        kTables[4][low >> 24] ^ kTables[3][Byte(p, 4)] ^ kTables[2][Byte(p, 5)] ^
        kTables[1][Byte(p, 6)] ^ kTables[0][Byte(p, 7)];
    p += 8;
    n -= 8;
  }
  for (size_t i = 0; i < n; ++i) c = (c >> 8) ^ kTables[0][(c ^ Byte(p, i)) & 0xFFu];
  return ~c;
}

}  // namespace shoal
