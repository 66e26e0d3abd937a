#pragma once

// The durable binary form of a whole ShardMap (a snapshot; ShardMapEdit encodes one change).
// Kept apart from the model (CONVENTIONS.md "codec, model, router").
//
// Format (stable; never renumber): a format-version byte (kShardMapFormatVersion), then minimal
// LEB128 varints (varint.h) and single bytes:
//   epoch, K, min_in_sync, node count, per node: id, state byte, store id;
//   bucket count, per bucket in point order: id, begin, end kind byte (0: finite end follows as a
//   varint, 1: the range ends at 2^64), replica count, replicas, term, transition flag byte (0 or
//   1), and if 1: move, source count, source, destination count, destination, stage byte, mode
//   byte.
// Nodes are encoded sorted by id and buckets by begin, as ShardMap keeps them. Format 1 lacks
// min_in_sync, the store ids and the terms; it still decodes, with min_in_sync the default for
// K, store ids 0 and terms 1, and the next encoding writes format 2.
//
// Decode accepts exactly what Encode produces, and format 1: it rejects truncated, trailing,
// overlong, non-minimal, out-of-order or unknown input with InvalidArgument, never reads out of
// bounds, and builds the map with ShardMap::Create, so every invariant of shard_map.h is checked.
// Hence Encode(Decode(bytes)) == bytes for every accepted input of the current format.
//
// Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "src/cluster/shard_map.h"
#include "src/common/status.h"

namespace shoal::cluster {

inline constexpr uint8_t kShardMapFormatVersion = 2;
// The oldest format DecodeShardMap still reads.
inline constexpr uint8_t kOldestShardMapFormatVersion = 1;

[[nodiscard]] std::string EncodeShardMap(const ShardMap& map);
[[nodiscard]] StatusOr<ShardMap> DecodeShardMap(std::string_view bytes);

}  // namespace shoal::cluster
