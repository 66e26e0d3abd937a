#pragma once

// The input of `shoal batch`: one JSON object per line,
//   {"op": "put|insert|update|delete", "key": "...", "value": {...}}
// ("value" is required by put/insert/update and refused with delete; blank lines are skipped),
// and its cut into batches within the limits of Collection::Batch.
//
// Pure functions; thread-compatible.

#include <cstddef>
#include <istream>
#include <span>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/status.h"

namespace shoal::tools {

// One parsed line: the write and its 1-based line number.
struct BatchLine {
  size_t line = 0;
  BatchWrite write;
};

// Every line of `in`, or kInvalidArgument naming the first malformed line ("line 3: ...").
[[nodiscard]] StatusOr<std::vector<BatchLine>> ParseBatchLines(std::istream& in);

// Consecutive runs of `lines` of at most `max_writes` writes and kMaxBatchBytes bytes of keys
// plus JSON each. kInvalidArgument if max_writes is 0 or over kMaxBatchWrites;
// kResourceExhausted naming the line if one write alone exceeds kMaxBatchBytes.
[[nodiscard]] StatusOr<std::vector<std::span<const BatchLine>>> SplitBatches(
    std::span<const BatchLine> lines, size_t max_writes);

}  // namespace shoal::tools
