#pragma once

// The document model of the storage layer (paper 000 §5, ARCHITECTURE.md §1).
//
// A document lives in a collection, has a primary key (opaque bytes), a JSON body (a JSON object,
// validated on the way in), a version stamped by the store on every mutation, and a tombstone
// flag. A deleted document stays stored as a tombstone (empty body, its own version) so that moves
// and replication can order a delete against older copies; tombstones are only read when asked
// for. Value type; thread-compatible.

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/common/ids.h"

namespace shoal::storage {

// Limits checked on every document that enters the store. Defaults follow the issue.
struct DocumentLimits {
  size_t max_primary_key_bytes = size_t{8} << 10;
  size_t max_body_bytes = size_t{1} << 20;
  // Nesting of JSON arrays and objects, empty or not; the top-level object is depth 1.
  size_t max_depth = 64;
};

struct Document {
  CollectionId collection{};
  std::string primary_key{};
  std::string body{};    // JSON object text; empty for a tombstone
  uint64_t version = 0;  // 0 = never stored
  bool tombstone = false;

  friend bool operator==(const Document&, const Document&) = default;

  // One line for logs and test failures; the body is shortened.
  [[nodiscard]] std::string DebugString() const;
};

}  // namespace shoal::storage
