#pragma once

// Shoal's error type is the public one (include/shoal/status.h); this header adds what only
// the implementation uses: the data-loss code's constructor, the message as a view, context
// and context prefixes.
//
// Every fallible function in Shoal returns Status or StatusOr<T>, never throws on the data path.
// Errors gather context on the way up with Prefixed().

#include <string>
#include <string_view>

#include "include/shoal/status.h"

namespace shoal {

[[nodiscard]] inline Status MakeStatus(StatusCode code, std::string_view message) {
  return Status(code, message);
}
// A storage read or write that failed (DATA_LOSS).
[[nodiscard]] inline Status IoError(std::string_view m) {
  return MakeStatus(StatusCode::kDataLoss, m);
}

// The message of `status` as a std::string_view.
[[nodiscard]] inline std::string_view MessageOf(const Status& status) { return status.message(); }

// Returns `status` with `context + ": "` prepended to its message; OK stays OK. Payloads are kept.
[[nodiscard]] inline Status Prefixed(const Status& status, std::string_view context) {
  if (status.ok()) return status;
  std::string message(context);
  message += ": ";
  message += MessageOf(status);
  Status result = MakeStatus(status.code(), message);
  status.ForEachPayload([&result](std::string_view url, std::string_view payload) {
    result.SetPayload(url, payload);
  });
  return result;
}

}  // namespace shoal
