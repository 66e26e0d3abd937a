#pragma once

// MapWatchHub: the leader coordinator's side of Shoal.WatchMap (docs/design/network.md "Map
// watch"). The Coordinator hands it every committed state (Coordinator::SetStateObserver); each
// watch request waits in Wait until the hub holds a map newer than the caller's, its hold runs
// out, or the leadership ends (Close).
//
// Invariants: the epoch of the held map only goes up (an older state handed in late is ignored),
// so a watcher is never answered with a map older than one it was given; at most max_watchers
// requests wait at once, one more is refused with kResourceExhausted at once.
//
// Thread-safety: every method is thread-safe. Wait blocks its (gRPC) thread; Publish never blocks.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/shoal.pb.h"
#include "src/common/status.h"
#include "src/transport/messages.h"

namespace shoal::process {

// Watch requests one coordinator holds at once by default (each holds a server thread).
inline constexpr size_t kDefaultMaxMapWatchers = 256;
// How often a waiting watch checks whether its caller went away.
inline constexpr std::chrono::milliseconds kCancelPoll{100};

class MapWatchHub {
 public:
  explicit MapWatchHub(size_t max_watchers) : max_watchers_(max_watchers) {}

  // Keeps `state` if its map is at least as new as the one held (the same epoch replaces it: a
  // new collection) and wakes the watchers it is newer for.
  void Publish(const transport::ClusterState& state);
  // A new leadership begins: forgets the old state; Wait answers again.
  void Open();
  // The leadership ended: every waiting and later Wait answers kUnavailable until Open.
  void Close();
  // The held state once its map is newer than `known` (at once if it is already), nullopt when
  // `hold` passed first or `cancelled` (polled every kCancelPoll: gRPC has no wake-up for it)
  // says the caller went away, which frees its place at once rather than at the end of its hold.
  [[nodiscard]] StatusOr<std::optional<transport::ClusterState>> Wait(
      MapEpoch known, std::chrono::milliseconds hold, const std::function<bool()>& cancelled);
  [[nodiscard]] size_t watchers() const;

 private:
  const size_t max_watchers_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // state_ or open_ changed
  transport::ClusterState state_ ABSL_GUARDED_BY(mu_);
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  size_t watchers_ ABSL_GUARDED_BY(mu_) = 0;
};

// Answers one Shoal.WatchMap request from `hub`: the state (and with `structured`, the map as
// messages) once newer than the request's epoch, nothing when the hold ran out, or the error in
// out->status (a hold above net::kMaxWatchHoldMillis is kInvalidArgument).
void AnswerMapWatch(MapWatchHub& hub, const wire::WatchMapRequest& request,
                    const std::function<bool()>& cancelled, wire::WatchMapResponse* out);

}  // namespace shoal::process
