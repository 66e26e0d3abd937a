// GrpcRuntime's calls to the coordinator: map watches and admin requests, each failing over
// across the configured coordinators; and the CallCanceller that ends a watch early.

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "proto/shoal.grpc.pb.h"
#include "src/net/grpc_runtime.h"
#include "src/net/grpc_runtime_internal.h"
#include "src/net/wire_codec.h"

namespace shoal::net {

using transport::Address;
using transport::Micros;

void CallCanceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool CallCanceller::Attach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  context_ = context;
  return true;
}

bool CallCanceller::Detach() {
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
  return cancelled_;
}

StatusOr<std::optional<transport::ClusterState>> GrpcRuntime::WatchMap(
    MapEpoch known, std::chrono::milliseconds hold, CallCanceller* canceller) {
  if (hold.count() < 0 || hold.count() > kMaxWatchHoldMillis) {
    return InvalidArgumentError(
        fmt::format("a map watch holds 0 to {} ms, not {}", kMaxWatchHoldMillis, hold.count()));
  }
  wire::WatchMapRequest request;
  request.set_known_epoch(known.value());
  request.set_hold_millis(static_cast<uint32_t>(hold.count()));
  // The coordinator answers by the end of the hold; allow as much again for the network.
  const Micros timeout =
      2 * std::chrono::duration_cast<std::chrono::microseconds>(hold).count() + kResolveTimeout;
  grpc::Status status;
  wire::WatchMapResponse response;
  Status result;
  for (size_t attempt = 0; attempt < std::max<size_t>(1, coordinators_.size()); ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(std::string coordinator, Resolve(Address::Coordinator()));
    auto peer = PeerFor(coordinator);
    grpc::ClientContext context;
    PrepareCall(*credentials_, &context, DeadlineAfter(timeout));
    if (canceller != nullptr && !canceller->Attach(&context)) {
      return CancelledError("map watch cancelled");
    }
    response.Clear();
    status =
        CheckServer(*credentials_, context, peer->stub->WatchMap(&context, request, &response));
    ReconnectSoon(coordinator, status);
    const bool cancelled = canceller != nullptr && canceller->Detach();
    if (cancelled) return CancelledError("map watch cancelled");
    // CANCELLED that the canceller did not cause came from the server (it shut down holding the
    // call): like UNAVAILABLE, the coordinator there no longer answers watches. Returning it as
    // kCancelled would end the caller's watch for good.
    if (status.ok()) {
      result = FromWire(response.status());
    } else if (status.error_code() == grpc::StatusCode::CANCELLED) {
      result = UnavailableError(fmt::format("map watch at {}: cancelled by the server: {}",
                                            coordinator, status.error_message()));
    } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      // A watch only reads: whether or not the coordinator saw it, it may be sent again.
      result =
          UnavailableError(fmt::format("map watch at {}: {}", coordinator, status.error_message()));
    } else {
      result = FromGrpc(status, fmt::format("map watch at {}", coordinator));
    }
    // No answer in time (a dead or paused former leader) or no leader there (a standby, or a
    // leader between leaderships): the next poll goes to the next coordinator. Only a certain
    // refusal is worth another try at once.
    if (!status.ok() || result.code() == StatusCode::kUnavailable) NextCoordinator(coordinator);
    if (result.code() != StatusCode::kUnavailable) break;
  }
  if (!result.ok()) return result;
  if (!response.has_state()) return std::optional<transport::ClusterState>();
  SHOAL_ASSIGN_OR_RETURN(transport::ClusterState state, FromWire(response.state()));
  return std::optional<transport::ClusterState>(std::move(state));
}

void GrpcRuntime::NextCoordinator(const std::string& failed) {
  if (coordinators_.size() < 2) return;
  absl::MutexLock lock(&mu_);
  auto it = book_.find(Address::Coordinator());
  // Another thread moved on already.
  if (it == book_.end() || it->second != failed) return;
  coordinator_index_ = (coordinator_index_ + 1) % coordinators_.size();
  it->second = coordinators_[coordinator_index_];
}

StatusOr<wire::AdminResponse> GrpcRuntime::Admin(const wire::AdminRequest& request,
                                                 Micros timeout) {
  SHOAL_ASSIGN_OR_RETURN(wire::AdminResponse response, AdminAnswer(request, timeout));
  Status result = FromWire(response.status());
  if (!result.ok()) return result;
  return response;
}

StatusOr<wire::AdminResponse> GrpcRuntime::AdminAnswer(const wire::AdminRequest& request,
                                                       Micros timeout) {
  grpc::Status status;
  wire::AdminResponse response;
  // Each configured coordinator once, starting with the one in use.
  for (size_t attempt = 0; attempt < std::max<size_t>(1, coordinators_.size()); ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(std::string coordinator, Resolve(Address::Coordinator()));
    auto peer = PeerFor(coordinator);
    grpc::ClientContext context;
    PrepareCall(*credentials_, &context, DeadlineAfter(timeout));
    response.Clear();
    status = CheckServer(*credentials_, context, peer->stub->Admin(&context, request, &response));
    if (status.ok()) break;
    ReconnectSoon(coordinator, status);
    // A coordinator that did not answer in time may be a paused former leader: the next
    // request goes to the next one. Only an unreachable or standby coordinator is worth another
    // try now: anything else may have been handled.
    NextCoordinator(coordinator);
    if (!CertainlyNotHandled(status)) break;
  }
  if (!status.ok()) return FromGrpc(status, "admin request to the coordinator");
  return response;
}

StatusOr<wire::AdminResponse> GrpcRuntime::AdminAt(const std::string& host_port,
                                                   const wire::AdminRequest& request,
                                                   Micros timeout) {
  auto peer = PeerFor(host_port);
  grpc::ClientContext context;
  PrepareCall(*credentials_, &context, DeadlineAfter(timeout));
  wire::AdminResponse response;
  const grpc::Status status =
      CheckServer(*credentials_, context, peer->stub->Admin(&context, request, &response));
  if (!status.ok()) {
    ReconnectSoon(host_port, status);
    return FromGrpc(status, fmt::format("admin request to {}", host_port));
  }
  Status result = FromWire(response.status());
  if (!result.ok()) return result;
  return response;
}

}  // namespace shoal::net
