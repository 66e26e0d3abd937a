#pragma once

// JSON intake: the check every document body passes before it is stored.
//
// A body must be a well-formed JSON object (RFC 8259, UTF-8 validated), at most
// DocumentLimits::max_body_bytes long, with arrays and objects nested at most
// DocumentLimits::max_depth deep (the top-level object is depth 1; every array or object, empty
// or not, adds one). The library is simdjson, chosen by the measurement in
// docs/results/storage.md; no exceptions cross this boundary.
//
// Thread-safe: each thread uses its own parser.

#include <string_view>

#include "src/common/status.h"
#include "src/storage/document.h"

namespace shoal::storage {

// OK, or kInvalidDocument (malformed, not an object, too deep) or kTooLarge.
[[nodiscard]] Status ValidateJsonBody(std::string_view body, const DocumentLimits& limits);

// OK, or kInvalidDocument (empty) or kTooLarge.
[[nodiscard]] Status ValidatePrimaryKey(std::string_view primary_key, const DocumentLimits& limits);

}  // namespace shoal::storage
