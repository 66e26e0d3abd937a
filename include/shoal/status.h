#pragma once

// Shoal's error type: Status (a code and a message) and StatusOr<T> (a value or the Status that
// says why there is none). Every fallible function in Shoal, public or internal, returns one of
// them; nothing on the data path throws.
//
// The codes are gRPC's canonical codes, with the same numbers, so that a status crosses the wire
// unchanged. An OK Status holds nothing and costs one null pointer; an error owns its message
// (and any payloads) and is copied deeply, which only error paths pay.
//
// Thread-safety: a Status or StatusOr is a value; distinct objects may be used from distinct
// threads, one object from one thread at a time (const methods concurrently).

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace shoal {

// gRPC's canonical status codes (google.rpc.Code), with their numbers.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// The code's name as gRPC spells it ("INVALID_ARGUMENT"); "" for a number that names no code.
[[nodiscard]] std::string StatusCodeToString(StatusCode code);
std::ostream& operator<<(std::ostream& out, StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK.
  Status() noexcept = default;
  // `code` with `message`; kOk makes an OK Status and drops the message.
  Status(StatusCode code, std::string_view message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept = default;
  Status& operator=(Status&& other) noexcept = default;
  ~Status() = default;

  [[nodiscard]] bool ok() const { return rep_ == nullptr; }
  [[nodiscard]] StatusCode code() const { return rep_ == nullptr ? StatusCode::kOk : rep_->code; }
  // Empty for OK.
  [[nodiscard]] std::string_view message() const {
    return rep_ == nullptr ? std::string_view() : std::string_view(rep_->message);
  }
  // "OK", or "CODE: message".
  [[nodiscard]] std::string ToString() const;

  // Machine-readable details under a type URL, carried with the error (not with OK: setting a
  // payload on OK does nothing). A second Set under the same URL replaces the first.
  void SetPayload(std::string_view type_url, std::string_view payload);
  [[nodiscard]] std::optional<std::string> GetPayload(std::string_view type_url) const;
  // Calls fn(type_url, payload) for each payload, in the order they were first set.
  template <typename Fn>
  void ForEachPayload(Fn&& fn) const {
    if (rep_ == nullptr) return;
    for (const auto& [url, payload] : rep_->payloads) {
      fn(std::string_view(url), std::string_view(payload));
    }
  }

  // Marks a Status as deliberately unused.
  void IgnoreError() const {}

  // Same code, message and payloads.
  friend bool operator==(const Status& a, const Status& b);

 private:
  struct Rep {
    StatusCode code = StatusCode::kUnknown;
    std::string message;
    std::vector<std::pair<std::string, std::string>> payloads;
  };
  std::unique_ptr<Rep> rep_;  // null when OK
};

std::ostream& operator<<(std::ostream& out, const Status& status);

[[nodiscard]] inline Status OkStatus() { return Status(); }

[[nodiscard]] inline Status InvalidArgumentError(std::string_view m) {
  return Status(StatusCode::kInvalidArgument, m);
}
[[nodiscard]] inline Status NotFoundError(std::string_view m) {
  return Status(StatusCode::kNotFound, m);
}
[[nodiscard]] inline Status AlreadyExistsError(std::string_view m) {
  return Status(StatusCode::kAlreadyExists, m);
}
[[nodiscard]] inline Status FailedPreconditionError(std::string_view m) {
  return Status(StatusCode::kFailedPrecondition, m);
}
[[nodiscard]] inline Status InternalError(std::string_view m) {
  return Status(StatusCode::kInternal, m);
}
[[nodiscard]] inline Status UnimplementedError(std::string_view m) {
  return Status(StatusCode::kUnimplemented, m);
}
[[nodiscard]] inline Status UnavailableError(std::string_view m) {
  return Status(StatusCode::kUnavailable, m);
}
[[nodiscard]] inline Status DeadlineExceededError(std::string_view m) {
  return Status(StatusCode::kDeadlineExceeded, m);
}
[[nodiscard]] inline Status CancelledError(std::string_view m) {
  return Status(StatusCode::kCancelled, m);
}
[[nodiscard]] inline Status AbortedError(std::string_view m) {
  return Status(StatusCode::kAborted, m);
}
[[nodiscard]] inline Status ResourceExhaustedError(std::string_view m) {
  return Status(StatusCode::kResourceExhausted, m);
}
[[nodiscard]] inline Status OutOfRangeError(std::string_view m) {
  return Status(StatusCode::kOutOfRange, m);
}
[[nodiscard]] inline Status PermissionDeniedError(std::string_view m) {
  return Status(StatusCode::kPermissionDenied, m);
}
[[nodiscard]] inline Status UnauthenticatedError(std::string_view m) {
  return Status(StatusCode::kUnauthenticated, m);
}

template <typename T>
class StatusOr;

namespace status_internal {

template <typename U>
struct IsStatusOr : std::false_type {};
template <typename U>
struct IsStatusOr<StatusOr<U>> : std::true_type {};

// Ends the process: value() of a StatusOr that holds an error (a programming error, as indexing
// past a vector's end).
[[noreturn]] void DieOnValueOfError(const Status& status);
// The Status a StatusOr holds when it is given an OK Status instead of a value.
[[nodiscard]] Status OkGivenToStatusOr();

}  // namespace status_internal

// A T, or the error that says why there is none. ok() is true exactly when it holds a value.
template <typename T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_reference_v<T>, "StatusOr<T&> is not supported");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "StatusOr<Status> is ambiguous");

  template <typename U>
  static constexpr bool kFromValue =
      std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, Status> &&
      !status_internal::IsStatusOr<std::remove_cvref_t<U>>::value &&
      !std::is_same_v<std::remove_cvref_t<U>, std::in_place_t>;

 public:
  // An error (kUnknown), as a StatusOr that was never given a value.
  StatusOr() : status_(StatusCode::kUnknown, "") {}
  // The error `status`; an OK status (a programming error) becomes kInternal.
  StatusOr(const Status& status) : status_(status) { CheckNotOk(); }  // NOLINT(runtime/explicit)
  StatusOr(Status&& status) : status_(std::move(status)) { CheckNotOk(); }  // NOLINT
  // A value, from anything T can be made of.
  template <typename U = T, std::enable_if_t<kFromValue<U>, int> = 0>
  explicit(!std::is_convertible_v<U&&, T>) StatusOr(U&& value)  // NOLINT
      : value_(std::in_place, std::forward<U>(value)) {}
  template <typename... Args>
  explicit StatusOr(std::in_place_t, Args&&... args)
      : value_(std::in_place, std::forward<Args>(args)...) {}
  // From a StatusOr of another type whose value converts.
  template <typename U, std::enable_if_t<
                            !std::is_same_v<U, T> && std::is_constructible_v<T, const U&>, int> = 0>
  explicit(!std::is_convertible_v<const U&, T>) StatusOr(const StatusOr<U>& other)  // NOLINT
      : status_(other.status()) {
    if (other.ok()) value_.emplace(*other);
  }
  template <typename U,
            std::enable_if_t<!std::is_same_v<U, T> && std::is_constructible_v<T, U&&>, int> = 0>
  explicit(!std::is_convertible_v<U&&, T>) StatusOr(StatusOr<U>&& other)  // NOLINT
      : status_(other.status()) {
    if (other.ok()) value_.emplace(std::move(*other));
  }

  StatusOr(const StatusOr&) = default;
  StatusOr(StatusOr&&) noexcept(std::is_nothrow_move_constructible_v<T>) = default;
  StatusOr& operator=(const StatusOr&) = default;
  StatusOr& operator=(StatusOr&&) noexcept(std::is_nothrow_move_assignable_v<T>) = default;
  ~StatusOr() = default;

  template <typename U = T,
            std::enable_if_t<kFromValue<U> && std::is_assignable_v<T&, U&&>, int> = 0>
  StatusOr& operator=(U&& value) {
    status_ = Status();
    if (value_.has_value()) {
      *value_ = std::forward<U>(value);
    } else {
      value_.emplace(std::forward<U>(value));
    }
    return *this;
  }
  StatusOr& operator=(Status status) {
    status_ = std::move(status);
    CheckNotOk();
    value_.reset();
    return *this;
  }

  // Replaces the content with a T made of `args`.
  template <typename... Args>
  T& emplace(Args&&... args) {
    status_ = Status();
    return value_.emplace(std::forward<Args>(args)...);
  }

  [[nodiscard]] bool ok() const { return value_.has_value(); }
  // OK when a value is held.
  [[nodiscard]] const Status& status() const& { return status_; }
  [[nodiscard]] Status status() && { return std::move(status_); }

  // The value; the process ends if there is none.
  [[nodiscard]] T& value() & {
    CheckHasValue();
    return *value_;
  }
  [[nodiscard]] const T& value() const& {
    CheckHasValue();
    return *value_;
  }
  [[nodiscard]] T&& value() && {
    CheckHasValue();
    return std::move(*value_);
  }
  [[nodiscard]] T& operator*() & { return value(); }
  [[nodiscard]] const T& operator*() const& { return value(); }
  [[nodiscard]] T&& operator*() && { return std::move(*this).value(); }
  [[nodiscard]] T* operator->() { return &value(); }
  [[nodiscard]] const T* operator->() const { return &value(); }

  // The value, or `fallback` when there is none.
  template <typename U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  [[nodiscard]] T value_or(U&& fallback) && {
    return ok() ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback));
  }

  void IgnoreError() const {}

 private:
  void CheckNotOk() {
    if (status_.ok()) status_ = status_internal::OkGivenToStatusOr();
  }
  void CheckHasValue() const {
    if (!value_.has_value()) status_internal::DieOnValueOfError(status_);
  }

  Status status_;  // OK exactly when value_ holds a value
  std::optional<T> value_;
};

// Equal when both hold equal values, or both the same error.
template <typename T>
[[nodiscard]] bool operator==(const StatusOr<T>& a, const StatusOr<T>& b) {
  if (a.ok() != b.ok()) return false;
  return a.ok() ? *a == *b : a.status() == b.status();
}

// The value, or the error; for test failure messages.
template <typename T>
requires requires(std::ostream& out, const T& value) { out << value; }
std::ostream& operator<<(std::ostream& out, const StatusOr<T>& value) {
  if (!value.ok()) return out << value.status();
  return out << *value;
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
