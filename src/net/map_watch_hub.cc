#include "src/net/map_watch_hub.h"

#include <fmt/format.h>

namespace shoal::net {

void MapWatchHub::Publish(const transport::ClusterState& state) {
  if (state.map == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_.map != nullptr && state.map->epoch() < state_.map->epoch()) return;
    state_ = state;
  }
  changed_.notify_all();
}

void MapWatchHub::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = transport::ClusterState{.map = nullptr, .collections = {}};
  open_ = true;
}

void MapWatchHub::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  changed_.notify_all();
}

size_t MapWatchHub::watchers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_;
}

StatusOr<std::optional<transport::ClusterState>> MapWatchHub::Wait(MapEpoch known,
                                                                   std::chrono::milliseconds hold) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!open_) return UnavailableError("not the leader coordinator");
  if (watchers_ >= max_watchers_) {
    return ResourceExhaustedError(
        fmt::format("this coordinator holds {} map watches, its limit", max_watchers_));
  }
  ++watchers_;
  const bool newer = changed_.wait_for(
      lock, hold, [&] { return !open_ || (state_.map != nullptr && state_.map->epoch() > known); });
  --watchers_;
  if (!open_) return UnavailableError("the coordinator stopped leading");
  if (!newer) return std::optional<transport::ClusterState>();
  return std::optional<transport::ClusterState>(state_);
}

}  // namespace shoal::net
