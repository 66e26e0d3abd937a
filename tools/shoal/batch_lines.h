#pragma once

// The input of `shoal batch`: one JSON object per line,
//   {"op": "put|insert|update|delete", "key": "...", "value": {...}}
// ("value" is required by put/insert/update and refused with delete; blank lines are skipped),
// read in batches within the limits of Collection::Batch.

#include <cstddef>
#include <istream>
#include <optional>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/common/status.h"

namespace shoal::tools {

// One parsed line: the write and its 1-based line number.
struct BatchLine {
  size_t line = 0;
  BatchWrite write;
};

// Reads `in` one batch at a time, within the limits of Collection::Batch: at most `max_writes`
// writes and kMaxBatchBytes bytes of keys plus JSON each. A batch ends early when `in` has no
// more bytes ready (its buffer's in_avail(): for a file stream over a pipe, what the pipe holds),
// so a slow writer's lines go out as they come. Holds one batch (and the line that did not fit
// it) in memory, however long the input. Thread-compatible.
class BatchReader {
 public:
  BatchReader(std::istream& in, size_t max_writes) : in_(in), max_writes_(max_writes) {}

  // The next batch; empty at the end of the input. kInvalidArgument naming the line for a
  // malformed one ("line 3: ...") or if max_writes is 0 or over kMaxBatchWrites;
  // kResourceExhausted naming the line if one write alone exceeds kMaxBatchBytes. After an
  // error, the reader stays failed.
  [[nodiscard]] StatusOr<std::vector<BatchLine>> Next();

 private:
  std::istream& in_;
  const size_t max_writes_;
  size_t line_ = 0;                   // the last line read
  std::optional<BatchLine> carried_;  // read, and over the last batch's bytes
  Status failed_ = OkStatus();
};

}  // namespace shoal::tools
