#include "include/shoal/status.h"

#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace shoal {

std::string StatusCodeToString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "";
}

std::ostream& operator<<(std::ostream& out, StatusCode code) {
  return out << StatusCodeToString(code);
}

Status::Status(StatusCode code, std::string_view message) {
  if (code == StatusCode::kOk) return;
  rep_ = std::make_unique<Rep>(Rep{.code = code, .message = std::string(message), .payloads = {}});
}

Status::Status(const Status& other)
    : rep_(other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_)) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    rep_ = other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_);
  }
  return *this;
}

std::string Status::ToString() const {
  if (rep_ == nullptr) return "OK";
  std::string out = StatusCodeToString(rep_->code);
  if (out.empty()) out = std::to_string(static_cast<int>(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

void Status::SetPayload(std::string_view type_url, std::string_view payload) {
  if (rep_ == nullptr) return;
  for (auto& [url, value] : rep_->payloads) {
    if (url == type_url) {
      value = std::string(payload);
      return;
    }
  }
  rep_->payloads.emplace_back(std::string(type_url), std::string(payload));
}

std::optional<std::string> Status::GetPayload(std::string_view type_url) const {
  if (rep_ == nullptr) return std::nullopt;
  for (const auto& [url, value] : rep_->payloads) {
    if (url == type_url) return value;
  }
  return std::nullopt;
}

bool operator==(const Status& a, const Status& b) {
  if (a.rep_ == nullptr || b.rep_ == nullptr) return a.rep_ == b.rep_;
  return a.rep_->code == b.rep_->code && a.rep_->message == b.rep_->message &&
         a.rep_->payloads == b.rep_->payloads;
}

std::ostream& operator<<(std::ostream& out, const Status& status) {
  return out << status.ToString();
}

namespace status_internal {

void DieOnValueOfError(const Status& status) {
  std::fprintf(stderr, "value() of a StatusOr that holds an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

Status OkGivenToStatusOr() {
  return Status(StatusCode::kInternal, "an OK status was given to a StatusOr instead of a value");
}

}  // namespace status_internal

}  // namespace shoal
