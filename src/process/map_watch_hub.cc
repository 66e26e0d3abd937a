#include "src/process/map_watch_hub.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/net/grpc_runtime.h"
#include "src/net/wire_codec.h"

namespace shoal::process {

void MapWatchHub::Publish(const transport::ClusterState& state) {
  if (state.map == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    if (state_.map != nullptr && state.map->epoch() < state_.map->epoch()) return;
    state_ = state;
  }
  changed_.SignalAll();
}

void MapWatchHub::Open() {
  absl::MutexLock lock(&mu_);
  state_ = transport::ClusterState{.map = nullptr, .collections = {}};
  open_ = true;
}

void MapWatchHub::Close() {
  {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }
  changed_.SignalAll();
}

size_t MapWatchHub::watchers() const {
  absl::MutexLock lock(&mu_);
  return watchers_;
}

StatusOr<std::optional<transport::ClusterState>> MapWatchHub::Wait(
    MapEpoch known, std::chrono::milliseconds hold, const std::function<bool()>& cancelled) {
  absl::MutexLock lock(&mu_);
  if (!open_) return UnavailableError("not the leader coordinator");
  if (watchers_ >= max_watchers_) {
    return ResourceExhaustedError(
        fmt::format("this coordinator holds {} map watches, its limit", max_watchers_));
  }
  ++watchers_;
  const auto deadline = std::chrono::steady_clock::now() + hold;
  const auto answerable = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !open_ || (state_.map != nullptr && state_.map->epoch() > known);
  };
  bool newer = answerable();
  while (!newer && std::chrono::steady_clock::now() < deadline && !cancelled()) {
    const std::chrono::nanoseconds wait = std::min<std::chrono::nanoseconds>(
        deadline - std::chrono::steady_clock::now(), kCancelPoll);
    const absl::Time until = absl::Now() + absl::FromChrono(wait);
    while (!answerable() && !changed_.WaitWithDeadline(&mu_, until)) {
    }
    newer = answerable();
  }
  --watchers_;
  if (!open_) return UnavailableError("the coordinator stopped leading");
  if (!newer) return std::optional<transport::ClusterState>();
  return std::optional<transport::ClusterState>(state_);
}

void AnswerMapWatch(MapWatchHub& hub, const wire::WatchMapRequest& request,
                    const std::function<bool()>& cancelled, wire::WatchMapResponse* out) {
  if (request.hold_millis() > net::kMaxWatchHoldMillis) {
    net::ToWire(InvalidArgumentError(fmt::format("a map watch holds at most {} ms, not {}",
                                                 net::kMaxWatchHoldMillis, request.hold_millis())),
                out->mutable_status());
    return;
  }
  auto state = hub.Wait(MapEpoch(request.known_epoch()),
                        std::chrono::milliseconds(request.hold_millis()), cancelled);
  if (!state.ok()) {
    net::ToWire(state.status(), out->mutable_status());
    return;
  }
  if (!state->has_value()) return;
  net::ToWire(**state, out->mutable_state());
  if (request.structured() && (*state)->map != nullptr) {
    net::ToWire(*(*state)->map, out->mutable_map());
  }
}

}  // namespace shoal::process
