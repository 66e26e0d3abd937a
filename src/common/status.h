#pragma once

// Shoal's error type: a thin facade over absl::Status / absl::StatusOr.
//
// absl::Status is already [[nodiscard]]; every fallible function in Shoal returns Status or
// StatusOr<T>, never throws on the data path. Errors gather context on the way up with
// Prefixed().

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"

namespace shoal {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

using StatusCode = absl::StatusCode;

inline Status OkStatus() { return absl::OkStatus(); }

// Debian's Abseil has its own string_view type; these take std::string_view so that callers
// never convert by hand. Format messages with fmt::format.
[[nodiscard]] inline Status MakeStatus(StatusCode code, std::string_view message) {
  return Status(code, absl::string_view(message.data(), message.size()));
}
[[nodiscard]] inline Status InvalidArgumentError(std::string_view m) {
  return MakeStatus(StatusCode::kInvalidArgument, m);
}
[[nodiscard]] inline Status NotFoundError(std::string_view m) {
  return MakeStatus(StatusCode::kNotFound, m);
}
[[nodiscard]] inline Status AlreadyExistsError(std::string_view m) {
  return MakeStatus(StatusCode::kAlreadyExists, m);
}
[[nodiscard]] inline Status FailedPreconditionError(std::string_view m) {
  return MakeStatus(StatusCode::kFailedPrecondition, m);
}
[[nodiscard]] inline Status InternalError(std::string_view m) {
  return MakeStatus(StatusCode::kInternal, m);
}
[[nodiscard]] inline Status UnimplementedError(std::string_view m) {
  return MakeStatus(StatusCode::kUnimplemented, m);
}
[[nodiscard]] inline Status UnavailableError(std::string_view m) {
  return MakeStatus(StatusCode::kUnavailable, m);
}
[[nodiscard]] inline Status DeadlineExceededError(std::string_view m) {
  return MakeStatus(StatusCode::kDeadlineExceeded, m);
}
[[nodiscard]] inline Status CancelledError(std::string_view m) {
  return MakeStatus(StatusCode::kCancelled, m);
}
[[nodiscard]] inline Status AbortedError(std::string_view m) {
  return MakeStatus(StatusCode::kAborted, m);
}
[[nodiscard]] inline Status ResourceExhaustedError(std::string_view m) {
  return MakeStatus(StatusCode::kResourceExhausted, m);
}
[[nodiscard]] inline Status OutOfRangeError(std::string_view m) {
  return MakeStatus(StatusCode::kOutOfRange, m);
}
[[nodiscard]] inline Status IoError(std::string_view m) {
  return MakeStatus(StatusCode::kDataLoss, m);
}

// The message of `status` as a std::string_view.
[[nodiscard]] inline std::string_view MessageOf(const Status& status) {
  return std::string_view(status.message().data(), status.message().size());
}

// Returns `status` with `context + ": "` prepended to its message; OK stays OK. Payloads are kept.
[[nodiscard]] inline Status Prefixed(const Status& status, std::string_view context) {
  if (status.ok()) return status;
  std::string message(context);
  message += ": ";
  message += MessageOf(status);
  Status result = MakeStatus(status.code(), message);
  status.ForEachPayload([&result](absl::string_view url, const absl::Cord& payload) {
    result.SetPayload(url, payload);
  });
  return result;
}

}  // namespace shoal

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::shoal::Status shoal_status_ = (expr);        \
    if (!shoal_status_.ok()) return shoal_status_; \
  } while (false)

#define SHOAL_CONCAT_INNER_(a, b) a##b
#define SHOAL_CONCAT_(a, b) SHOAL_CONCAT_INNER_(a, b)

// `SHOAL_ASSIGN_OR_RETURN(auto x, Foo());` declares x from an OK StatusOr or returns its error.
#define SHOAL_ASSIGN_OR_RETURN(lhs, expr) \
  SHOAL_ASSIGN_OR_RETURN_IMPL_(SHOAL_CONCAT_(shoal_statusor_, __LINE__), lhs, expr)
#define SHOAL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
