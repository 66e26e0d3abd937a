#include "src/storage/group_sync.h"

#include "src/common/steady_clock.h"

namespace shoal::storage {

Status GroupSync::Sync() {
  mu_.Lock();
  // The first sync to start after this call: one running now may have missed its writes.
  const uint64_t needed = started_ + 1;
  while (finished_ < needed) {
    if (running_) {
      finished_cv_.Wait(&mu_);
      continue;
    }
    // None runs: this caller runs the one it needs (no sync started since `needed` was taken,
    // as they start one at a time and only here).
    started_ = needed;
    running_ = true;
    running_since_ns_.store(SteadyNanos(), std::memory_order_release);
    mu_.Unlock();
    Status status = sync_();
    running_since_ns_.store(0, std::memory_order_release);
    mu_.Lock();
    running_ = false;
    finished_ = needed;
    last_ = status;
    finished_cv_.SignalAll();
    mu_.Unlock();
    return status;
  }
  Status status = last_;
  mu_.Unlock();
  return status;
}

uint64_t GroupSync::syncs() const {
  absl::MutexLock lock(&mu_);
  return finished_;
}

}  // namespace shoal::storage
