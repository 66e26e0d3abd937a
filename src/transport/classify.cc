#include "src/transport/classify.h"

#include <fmt/format.h>

#include <string>

#include "src/storage/errors.h"
#include "src/transport/messages.h"

namespace shoal::transport {

RetryAction Classify(const Status& status, StatusOrigin origin, bool idempotent) {
  if (status.ok()) return RetryAction::kDone;
  switch (origin) {
    case StatusOrigin::kCall:
      switch (status.code()) {
        case StatusCode::kUnavailable:
          return RetryAction::kResend;
        case StatusCode::kDeadlineExceeded:
          // A write may have been applied: resending could apply it again after other writes.
          return idempotent ? RetryAction::kResend : RetryAction::kUnknownOutcome;
        default:
          return RetryAction::kGiveUp;
      }
    case StatusOrigin::kAnswer: {
      const auto cluster_error = ClusterErrorOf(status);
      if (cluster_error == ClusterError::kWrongShard) return RetryAction::kLearnRoute;
      if (cluster_error == ClusterError::kNotServing ||
          cluster_error == ClusterError::kNotEnoughReplicas ||
          storage::Is(status, storage::ErrorReason::kUnavailable)) {
        return RetryAction::kBackOff;
      }
      return RetryAction::kGiveUp;
    }
  }
  return RetryAction::kGiveUp;
}

bool BacksOff(RetryAction action) {
  switch (action) {
    case RetryAction::kResend:
    case RetryAction::kBackOff:
      return true;
    case RetryAction::kDone:
    case RetryAction::kLearnRoute:
    case RetryAction::kUnknownOutcome:
    case RetryAction::kGiveUp:
      return false;
  }
  return false;
}

Status OutcomeUnknown(const Status& lost) {
  return MakeStatus(StatusCode::kUnknown,
                    fmt::format("outcome unknown: {}", std::string(lost.message())));
}

std::string_view ToString(RetryAction action) {
  switch (action) {
    case RetryAction::kDone:
      return "done";
    case RetryAction::kLearnRoute:
      return "learn-route";
    case RetryAction::kResend:
      return "resend";
    case RetryAction::kBackOff:
      return "back-off";
    case RetryAction::kUnknownOutcome:
      return "unknown-outcome";
    case RetryAction::kGiveUp:
      return "give-up";
  }
  return "?";
}

}  // namespace shoal::transport
