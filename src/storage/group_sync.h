#pragma once

// GroupSync: group commit of WAL syncs. Every caller of Sync returns once a sync that STARTED
// after its call has finished, so every write that returned before the call is durable. Callers
// that arrive while a sync runs share the next one: one fsync for all of them instead of one
// each (the engine's own SyncWAL makes each concurrent caller wait for the running sync and then
// run its own, and wakes them all on one mutex).
//
// The caller that finds no sync running runs it on its own thread; a caller that finds one
// running waits, and the first waiter to see it finish runs the next. A simulated task never
// waits here: tasks run one at a time and a sync never yields, so no task finds one running.
//
// Thread-safety: Sync is thread-safe; running_since_nanos may be read from any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"

namespace shoal::storage {

class GroupSync {
 public:
  explicit GroupSync(std::function<Status()> sync) : sync_(std::move(sync)) {}
  GroupSync(const GroupSync&) = delete;
  GroupSync& operator=(const GroupSync&) = delete;

  // Makes durable everything written before the call: the status of the latest sync that
  // finished, which started after the call.
  [[nodiscard]] Status Sync() ABSL_LOCKS_EXCLUDED(mu_);
  // Syncs run so far.
  [[nodiscard]] uint64_t syncs() const ABSL_LOCKS_EXCLUDED(mu_);
  // When the sync running now started (steady clock, ns), or 0 while none runs: how long the
  // disk has kept a sync waiting (a stalled disk, node::StorageHealth).
  [[nodiscard]] int64_t running_since_nanos() const {
    return running_since_ns_.load(std::memory_order_acquire);
  }

 private:
  const std::function<Status()> sync_;
  mutable absl::Mutex mu_;
  absl::CondVar finished_cv_;
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;   // syncs begun; they run one at a time
  uint64_t finished_ ABSL_GUARDED_BY(mu_) = 0;  // syncs done
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  Status last_ ABSL_GUARDED_BY(mu_);  // of sync number finished_
  std::atomic<int64_t> running_since_ns_{0};
};

}  // namespace shoal::storage
