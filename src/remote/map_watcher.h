#pragma once

// MapWatcher: the network client's map watch (docs/design/network.md "Map watch"). One thread
// long-polls the coordinator (GrpcRuntime::WatchMap) with the epoch of the client's cached map
// and hands every newer map to Client::Adopt, which keeps only a newer one: the cached epoch
// never goes down. A failed poll (no coordinator reachable, a standby, the coordinator's watcher
// limit) is retried after a backoff that doubles from min_backoff to max_backoff and resets after
// an answer. WRONG_SHARD still refreshes the map: the watch only makes it rarer.
//
// Invariant: only Stop ends the watch. Every other error, kCancelled included (a server that
// shuts down cancels the polls it holds), is retried; each poll tries every configured
// coordinator once (GrpcRuntime::WatchMap), so after a failover the watcher reaches the new
// leader within one poll of its election and adopts the next map it commits.
//
// Thread-safety: Stop (and the destructor) may be called from any thread but the watcher's; Stop
// cancels the poll in flight and joins the thread. The runtime and the client must outlive it.

#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/client/client.h"
#include "src/net/grpc_runtime.h"

namespace shoal::remote {

struct MapWatcherOptions {
  std::chrono::milliseconds hold{10'000};  // per poll, at most kMaxWatchHoldMillis
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{2'000};
};

class MapWatcher {
 public:
  MapWatcher(net::GrpcRuntime& runtime, client::Client& client, const MapWatcherOptions& options);
  ~MapWatcher();
  MapWatcher(const MapWatcher&) = delete;
  MapWatcher& operator=(const MapWatcher&) = delete;

  // Idempotent.
  void Stop();
  // Polls that failed so far (for tests and diagnostics).
  [[nodiscard]] uint64_t failures() const;

 private:
  void Run();

  net::GrpcRuntime& runtime_;
  client::Client& client_;
  const MapWatcherOptions options_;
  net::CallCanceller canceller_;
  mutable absl::Mutex mu_;
  absl::CondVar stop_cv_;  // stopping_ was set
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the fields above exist
};

}  // namespace shoal::remote
