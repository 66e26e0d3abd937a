#include "src/net/admin_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "src/net/wire_codec.h"
#include "src/transport/messages.h"

namespace shoal::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{1'000};
// The shortest deadline an attempt gets, even when the patience is nearly spent.
constexpr transport::Micros kMinAttemptTimeout = 1'000'000;

// No coordinator answered: kUnavailable (certainly not handled) or kDeadlineExceeded (may have
// been handled).
bool Unanswered(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded;
}

// A node's place in the coordinator's map.
enum class Membership : uint8_t { kAbsent, kActive, kLeaving };

// The node an add-node or remove-node names (0 for any other request).
uint32_t NodeOf(const wire::AdminRequest& request) {
  if (request.has_add_node()) return request.add_node().node();
  if (request.has_remove_node()) return request.remove_node().node();
  return 0;
}

StatusOr<Membership> MembershipOf(GrpcRuntime& runtime, uint32_t node, transport::Micros timeout) {
  SHOAL_ASSIGN_OR_RETURN(
      transport::Response reply,
      runtime.Call(transport::Address::Coordinator(), transport::GetMapRequest{}, timeout));
  if (!reply.status.ok()) return reply.status;
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetMapResponse>(std::move(reply)));
  if (body.state.map == nullptr) return UnavailableError("the coordinator has no map yet");
  const cluster::NodeInfo* info = body.state.map->FindNode(NodeId(node));
  if (info == nullptr) return Membership::kAbsent;
  switch (info->state) {
    case cluster::NodeState::kActive:
      return Membership::kActive;
    case cluster::NodeState::kLeaving:
      return Membership::kLeaving;
  }
  return InternalError("unknown node state");
}

// Whether the change of a kCheckMap request shows in the map, given the node's place before the
// first attempt (nullopt: unknown, taken as the place from which the change is possible).
bool TookEffect(const wire::AdminRequest& request, std::optional<Membership> before,
                Membership now) {
  if (request.has_add_node()) {
    return before.value_or(Membership::kAbsent) == Membership::kAbsent &&
           now != Membership::kAbsent;
  }
  if (request.has_remove_node()) {
    return before.value_or(Membership::kActive) == Membership::kActive &&
           now != Membership::kActive;
  }
  return false;
}

// Whether the error a repeat of a kCheckMap request was answered with means that an earlier
// attempt took effect (rather than being the outcome the first attempt would have had too).
bool EarlierTookEffect(const wire::AdminRequest& request, std::optional<Membership> before,
                       const Status& answer) {
  if (request.has_add_node()) {
    return answer.code() == StatusCode::kAlreadyExists &&
           before.value_or(Membership::kAbsent) == Membership::kAbsent;
  }
  if (request.has_remove_node()) {
    return answer.code() == StatusCode::kNotFound &&
           before.value_or(Membership::kActive) != Membership::kAbsent;
  }
  return false;
}

}  // namespace

AdminRepeat RepeatOf(const wire::AdminRequest& request) {
  switch (request.body_case()) {
    case wire::AdminRequest::kProgress:
    case wire::AdminRequest::kPlan:
    case wire::AdminRequest::kRebalance:
    case wire::AdminRequest::kSetThresholds:
    case wire::AdminRequest::kSetFailpoints:
    case wire::AdminRequest::kSetReplication:
    case wire::AdminRequest::kForcePrimary:
    case wire::AdminRequest::kListUsers:
    case wire::AdminRequest::kSetPassword:
    case wire::AdminRequest::kGrantRole:
    case wire::AdminRequest::kGetUserTable:
      return AdminRepeat::kRepeat;
    case wire::AdminRequest::kAddNode:
    case wire::AdminRequest::kRemoveNode:
      return AdminRepeat::kCheckMap;
    // A repeat would answer ALREADY_EXISTS or NOT_FOUND for a change that took effect.
    case wire::AdminRequest::kAddUser:
    case wire::AdminRequest::kRemoveUser:
    case wire::AdminRequest::BODY_NOT_SET:
      return AdminRepeat::kNever;
  }
  return AdminRepeat::kNever;
}

StatusOr<AdminOutcome> AdminWithRepeat(GrpcRuntime& runtime, const wire::AdminRequest& request,
                                       const AdminRepeatOptions& options) {
  const AdminRepeat repeat = RepeatOf(request);
  const auto give_up = Clock::now() + options.patience;
  const auto attempt_timeout = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(give_up - Clock::now()).count();
    return std::clamp<transport::Micros>(left, kMinAttemptTimeout,
                                         std::max(options.call_timeout, kMinAttemptTimeout));
  };
  // Where the node stood before the change, so that a lost answer can be told from the map.
  std::optional<Membership> before;
  if (repeat == AdminRepeat::kCheckMap) {
    auto membership = MembershipOf(runtime, NodeOf(request), attempt_timeout());
    if (membership.ok()) before = *membership;
  }

  auto answer = runtime.AdminAnswer(request, attempt_timeout());
  bool lost = false;  // an attempt got no answer and may have been handled
  std::chrono::milliseconds backoff = kFirstBackoff;
  int attempts = 1;
  while (true) {
    if (answer.ok()) {
      Status status = FromWire(answer->status());
      const bool repeated = attempts > 1;
      if (status.ok()) {
        return AdminOutcome{
            .response = *std::move(answer),
            .recovered = repeated ? "the first attempt's answer was lost; sent again" : ""};
      }
      if (repeated && lost && EarlierTookEffect(request, before, status)) {
        answer->mutable_status()->Clear();
        return AdminOutcome{
            .response = *std::move(answer),
            .recovered = fmt::format("the first attempt's answer was lost; confirmed by the "
                                     "coordinator: {}",
                                     MessageOf(status))};
      }
      return status;
    }
    const Status& error = answer.status();
    if (!Unanswered(error)) return error;
    lost = lost || error.code() == StatusCode::kDeadlineExceeded;
    // Certainly not handled, and nothing else was sent that might have been: the outcome is
    // known (nothing changed), and the operator decides whether to try again.
    if (!lost || repeat == AdminRepeat::kNever) return error;
    if (Clock::now() + backoff >= give_up) {
      return Prefixed(error, fmt::format("no answer after {} attempts in {} s", attempts,
                                         options.patience.count() / 1000.0));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
    if (lost && repeat == AdminRepeat::kCheckMap) {
      auto now = MembershipOf(runtime, NodeOf(request), attempt_timeout());
      if (!now.ok()) {
        // No map: no leader yet. Ask again after the next backoff.
        if (!Unanswered(now.status())) return now.status();
        answer = now.status();
        continue;
      }
      if (TookEffect(request, before, *now)) {
        // The map is the outcome; a progress request fills the usual answer.
        wire::AdminRequest progress;
        progress.mutable_progress();
        auto filled = runtime.AdminAnswer(progress, attempt_timeout());
        if (filled.ok() && FromWire(filled->status()).ok()) {
          return AdminOutcome{
              .response = *std::move(filled),
              .recovered = "the first attempt's answer was lost; confirmed by the map"};
        }
        // The outcome is known; only the answer to show is missing. Ask again.
        answer = UnavailableError(
            fmt::format("progress: {}", filled.ok() ? FromWire(filled->status()).ToString()
                                                    : filled.status().ToString()));
        continue;
      }
    }
    ++attempts;
    answer = runtime.AdminAnswer(request, attempt_timeout());
  }
}

}  // namespace shoal::net
