#include "src/storage/json.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// simdjson counts the depth of the innermost container from 1 and fails when it reaches
// max_depth, so a limit of n nested containers needs a parser depth of n + 1.
constexpr size_t kParserDepthSlack = 1;

simdjson::dom::parser& ThreadParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

}  // namespace

Status ValidateJsonBody(std::string_view body, const DocumentLimits& limits) {
  if (body.size() > limits.max_body_bytes) {
    return StorageError(ErrorReason::kTooLarge, fmt::format("body of {} bytes exceeds {} bytes",
                                                            body.size(), limits.max_body_bytes));
  }
  simdjson::dom::parser& parser = ThreadParser();
  const size_t depth = limits.max_depth + kParserDepthSlack;
  if (parser.max_depth() != depth || parser.capacity() < body.size()) {
    const size_t capacity = std::max(body.size(), parser.capacity());
    if (auto error = parser.allocate(std::max<size_t>(capacity, 64), depth); error) {
      return StorageError(ErrorReason::kTooLarge,
                          fmt::format("json parser: {}", simdjson::error_message(error)));
    }
  }
  simdjson::dom::element root;
  if (auto error = parser.parse(body.data(), body.size()).get(root); error) {
    if (error == simdjson::DEPTH_ERROR) {
      return StorageError(ErrorReason::kInvalidDocument,
                          fmt::format("body nests deeper than {}", limits.max_depth));
    }
    return StorageError(ErrorReason::kInvalidDocument,
                        fmt::format("body is not valid JSON: {}", simdjson::error_message(error)));
  }
  if (root.type() != simdjson::dom::element_type::OBJECT) {
    return StorageError(ErrorReason::kInvalidDocument, "body is not a JSON object");
  }
  return OkStatus();
}

Status ValidatePrimaryKey(std::string_view primary_key, const DocumentLimits& limits) {
  if (primary_key.empty()) return StorageError(ErrorReason::kInvalidDocument, "empty primary key");
  if (primary_key.size() > limits.max_primary_key_bytes) {
    return StorageError(ErrorReason::kTooLarge,
                        fmt::format("primary key of {} bytes exceeds {} bytes", primary_key.size(),
                                    limits.max_primary_key_bytes));
  }
  return OkStatus();
}

}  // namespace shoal::storage
