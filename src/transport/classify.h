#pragma once

// The one retry classification of a call's outcome (client.h states the retry contract). Every
// path that retries a request (single calls, async calls, batches, query pages and streams, and
// a node forwarding to a move's source) asks Classify what to do with a status; none decides
// on its own.
//
//   the status                                         idempotent    not idempotent
//   OK                                                 kDone         kDone
//   the call's own kCancelled (the process stops)      kGiveUp       kGiveUp
//   the call's own kUnavailable (certainly not sent)   kResend       kResend
//   the call's own kDeadlineExceeded (maybe handled)   kResend       kUnknownOutcome
//   the call's own other codes (cannot succeed)        kGiveUp       kGiveUp
//   the node's WRONG_SHARD                             kLearnRoute   kLearnRoute
//   the node's NOT_SERVING, or its storage unavailable kBackOff      kBackOff
//   the node's NOT_ENOUGH_REPLICAS (below the floor)   kBackOff      kBackOff
//   the node's other errors (the request's answer)     kGiveUp       kGiveUp
//
// Pure functions; thread-safe.

#include <cstdint>
#include <string_view>

#include "src/common/status.h"

namespace shoal::transport {

// Where a status comes from: the call itself (the request or its answer was lost), or the
// node's answer (Response::status).
enum class StatusOrigin : uint8_t { kCall = 0, kAnswer = 1 };

enum class RetryAction : uint8_t {
  kDone = 0,            // success: use the answer
  kLearnRoute = 1,      // adopt the answer's route, resend at once
  kResend = 2,          // certainly not handled (or a read): refresh the map, back off, resend
  kBackOff = 3,         // refused for now: back off, resend
  kUnknownOutcome = 4,  // may have been applied: never resend; report OutcomeUnknown
  kGiveUp = 5,          // final: report the status as it is
};

[[nodiscard]] RetryAction Classify(const Status& status, StatusOrigin origin, bool idempotent);

// True for kResend and kBackOff: the request is resent after a back-off.
[[nodiscard]] bool BacksOff(RetryAction action);

// kUnknown, saying that a request whose call ended with `lost` may have been applied.
[[nodiscard]] Status OutcomeUnknown(const Status& lost);

[[nodiscard]] std::string_view ToString(RetryAction action);

}  // namespace shoal::transport
