#include "src/storage/json.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// How simdjson's depth limit counts: with a parser depth of n it refuses (DEPTH_ERROR) a
// non-empty array or object n deep or deeper (the top-level object is 1 deep), and it never counts
// an empty one. So a body it accepts at a parser depth of max_depth nests at most max_depth deep
// (empty containers included); one it refuses at that depth but accepts at max_depth + 1 may
// still hold an empty container max_depth + 1 deep, which only a walk of the document finds.

simdjson::dom::parser& ThreadParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

// Parses `body` with the thread's parser at parser depth `depth` into *root; the parse's error
// into *error. Non-OK only when the parser cannot be allocated.
Status Parse(std::string_view body, size_t depth, simdjson::dom::element* root,
             simdjson::error_code* error) {
  simdjson::dom::parser& parser = ThreadParser();
  if (parser.max_depth() != depth || parser.capacity() < body.size()) {
    const size_t capacity = std::max(body.size(), parser.capacity());
    if (auto failed = parser.allocate(std::max<size_t>(capacity, 64), depth); failed) {
      return StorageError(ErrorReason::kTooLarge,
                          fmt::format("json parser: {}", simdjson::error_message(failed)));
    }
  }
  *error = parser.parse(body.data(), body.size()).get(*root);
  return OkStatus();
}

// True iff `element` nests at most `levels` arrays and objects, each one a level whether empty or
// not. The parser's depth limit bounds the recursion.
bool NestsAtMost(simdjson::dom::element element, size_t levels) {
  switch (element.type()) {
    case simdjson::dom::element_type::ARRAY: {
      if (levels == 0) return false;
      // A copy: the array must outlive the loop, the result it comes from does not.
      const simdjson::dom::array array = element.get_array().value_unsafe();
      for (const simdjson::dom::element child : array) {
        if (!NestsAtMost(child, levels - 1)) return false;
      }
      return true;
    }
    case simdjson::dom::element_type::OBJECT: {
      if (levels == 0) return false;
      const simdjson::dom::object object = element.get_object().value_unsafe();
      for (const simdjson::dom::key_value_pair field : object) {
        if (!NestsAtMost(field.value, levels - 1)) return false;
      }
      return true;
    }
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
    case simdjson::dom::element_type::STRING:
    case simdjson::dom::element_type::BOOL:
    case simdjson::dom::element_type::NULL_VALUE:
      return true;
  }
  return true;
}

Status TooDeep(const DocumentLimits& limits) {
  return StorageError(
      ErrorReason::kInvalidDocument,
      fmt::format("document body nests deeper than the limit of {} (docs/limits.md)",
                  limits.max_depth));
}

}  // namespace

Status ValidateJsonBody(std::string_view body, const DocumentLimits& limits) {
  if (body.size() > limits.max_body_bytes) {
    return StorageError(ErrorReason::kTooLarge,
                        fmt::format("document body is {} bytes; the limit is {} (docs/limits.md)",
                                    body.size(), limits.max_body_bytes));
  }
  if (limits.max_depth == 0) return TooDeep(limits);  // even {} is 1 deep
  simdjson::dom::element root;
  simdjson::error_code error = simdjson::SUCCESS;
  SHOAL_RETURN_IF_ERROR(Parse(body, limits.max_depth, &root, &error));
  // Refused for depth: within the limit only if nothing but scalars lies under the non-empty
  // containers max_depth deep.
  const bool walk = error == simdjson::DEPTH_ERROR;
  if (walk) SHOAL_RETURN_IF_ERROR(Parse(body, limits.max_depth + 1, &root, &error));
  if (error == simdjson::DEPTH_ERROR) return TooDeep(limits);
  if (error != simdjson::SUCCESS) {
    return StorageError(ErrorReason::kInvalidDocument,
                        fmt::format("body is not valid JSON: {}", simdjson::error_message(error)));
  }
  if (root.type() != simdjson::dom::element_type::OBJECT) {
    return StorageError(ErrorReason::kInvalidDocument, "body is not a JSON object");
  }
  if (walk && !NestsAtMost(root, limits.max_depth)) return TooDeep(limits);
  return OkStatus();
}

Status ValidatePrimaryKey(std::string_view primary_key, const DocumentLimits& limits) {
  if (primary_key.empty()) {
    return StorageError(ErrorReason::kInvalidDocument,
                        "key is empty; a key has at least 1 byte (docs/limits.md)");
  }
  if (primary_key.size() > limits.max_primary_key_bytes) {
    return StorageError(ErrorReason::kTooLarge,
                        fmt::format("key is {} bytes; the limit is {} (docs/limits.md)",
                                    primary_key.size(), limits.max_primary_key_bytes));
  }
  return OkStatus();
}

}  // namespace shoal::storage
