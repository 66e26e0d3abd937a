#pragma once

// Pieces of ShardedFields shared by its source files (sharded_field.cc, sharded_field_read.cc);
// not part of its interface. Stateless; thread-safe.

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::hotspot::internal {

inline constexpr char kSeparator = '\0';

// pk \0 field \0 suffix, in one allocation (a cell key is built on every update).
[[nodiscard]] inline std::string JoinKey(std::string_view pk, std::string_view field,
                                         std::string_view suffix) {
  std::string key;
  key.reserve(pk.size() + field.size() + suffix.size() + 2);
  key += pk;
  key += kSeparator;
  key += field;
  key += kSeparator;
  key += suffix;
  return key;
}

// The prefix of every key (root and cells) of one field of one document.
[[nodiscard]] inline std::string Prefix(std::string_view pk, std::string_view field) {
  return JoinKey(pk, field, {});
}

// The error of a protocol loop that hit its bound.
[[nodiscard]] inline Status Exhausted(std::string_view what, std::string_view pk) {
  return UnavailableError(fmt::format("sharded field of {:?}: {} did not settle", pk, what));
}

}  // namespace shoal::hotspot::internal
