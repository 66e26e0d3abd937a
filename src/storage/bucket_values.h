#pragma once

// The values of the storage layer that travel in messages (src/transport/messages.h): a
// collection's registry entry and what BucketStore::ExportRange wrote. Kept apart from
// bucket_store.h so that what carries them does not include or link the engine (RocksDB).

#include <cstdint>
#include <string>
#include <vector>

#include "src/common/ids.h"
#include "src/storage/point_range.h"

namespace shoal::storage {

struct CollectionSpec {
  CollectionId id{};
  std::string name{};

  friend bool operator==(const CollectionSpec&, const CollectionSpec&) = default;
};

// What BucketStore::ExportRange wrote. Catch-up continues from `sequence` (ReadChangesSince).
struct ExportedRange {
  PointRange range{};
  std::vector<std::string> files{};  // absolute paths, key-ordered, non-overlapping
  uint64_t sequence = 0;
  uint64_t entries = 0;  // documents and tombstones
  uint64_t bytes = 0;    // key + value bytes
  uint64_t max_version = 0;
  // The live part, counted as ComputeStats counts it at the same snapshot, so that a
  // destination knows the size of what it ingested without scanning it again.
  uint64_t live_documents = 0;
  uint64_t live_bytes = 0;
};

}  // namespace shoal::storage
