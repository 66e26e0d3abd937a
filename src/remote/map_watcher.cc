#include "src/remote/map_watcher.h"

#include <algorithm>

#include "src/common/log.h"

namespace shoal::remote {

MapWatcher::MapWatcher(net::GrpcRuntime& runtime, client::Client& client,
                       const MapWatcherOptions& options)
    : runtime_(runtime), client_(client), options_(options), thread_([this] { Run(); }) {}

MapWatcher::~MapWatcher() { Stop(); }

void MapWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_cv_.SignalAll();
  canceller_.Cancel();
  if (thread_.joinable()) thread_.join();
}

uint64_t MapWatcher::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void MapWatcher::Run() {
  std::chrono::milliseconds backoff = options_.min_backoff;
  while (true) {
    const cluster::ShardMapPtr known = client_.map();
    auto state = runtime_.WatchMap(known == nullptr ? MapEpoch(0) : known->epoch(), options_.hold,
                                   &canceller_);
    if (state.ok()) {
      backoff = options_.min_backoff;
      if (state->has_value()) (void)client_.Adopt((*state)->map);
      continue;
    }
    absl::MutexLock lock(&mu_);
    // Only Stop ends the watch: any other failure (kCancelled included) is retried.
    if (stopping_) return;
    ++failures_;
    if (log::Enabled(log::Level::kDebug)) {
      log::Debug("client.map_watch_failed", {{"error", state.status().ToString()}});
    }
    const absl::Time until = absl::Now() + absl::FromChrono(backoff);
    while (!stopping_ && !stop_cv_.WaitWithDeadline(&mu_, until)) {
    }
    if (stopping_) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace shoal::remote
