#pragma once

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of the chunks and files of
// a bucket move's node-to-node transfer (docs/design/cluster.md, "File transfer").
//
// Pure functions; thread-safe.

#include <cstdint>
#include <string_view>

namespace shoal {

// The CRC-32C of `data` continued from `crc` (the value returned for the preceding bytes; 0 to
// start). Extend(Extend(0, a), b) == Extend(0, a + b).
[[nodiscard]] uint32_t Crc32cExtend(uint32_t crc, std::string_view data);

[[nodiscard]] inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

}  // namespace shoal
