#include "src/coordinator/move_progress.h"

#include <utility>

namespace shoal::coordinator {

void ProgressCounters::Started(uint64_t planned_bytes) {
  absl::MutexLock lock(&mu_);
  ++progress_.started;
  ++progress_.in_flight;
  progress_.bytes_planned += planned_bytes;
}

void ProgressCounters::CorrectPlanned(uint64_t planned_bytes, uint64_t actual_bytes) {
  absl::MutexLock lock(&mu_);
  // planned_bytes was added at BEGIN, so the subtraction cannot wrap.
  progress_.bytes_planned = progress_.bytes_planned - planned_bytes + actual_bytes;
}

void ProgressCounters::Copied(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  progress_.bytes_copied += bytes;
}

void ProgressCounters::Committed(uint64_t bytes_moved) {
  absl::MutexLock lock(&mu_);
  ++progress_.committed;
  progress_.bytes_moved += bytes_moved;
}

void ProgressCounters::CaughtUp(uint64_t bytes, bool resumed) {
  absl::MutexLock lock(&mu_);
  progress_.bytes_caught_up += bytes;
  if (resumed) ++progress_.copies_resumed;
}

void ProgressCounters::FenceWindowEnded(const FenceWindow& window, NodeId destination,
                                        transport::Micros now) {
  absl::MutexLock lock(&mu_);
  progress_.fence_windows.push_back(window);
  progress_.first_commit_to.emplace(destination, now);
}

void ProgressCounters::Ended() {
  absl::MutexLock lock(&mu_);
  --progress_.in_flight;
}

void ProgressCounters::Finished() {
  absl::MutexLock lock(&mu_);
  ++progress_.finished;
}

void ProgressCounters::Aborted(std::string reason) {
  absl::MutexLock lock(&mu_);
  ++progress_.aborted;
  progress_.abort_reasons.push_back(std::move(reason));
  if (progress_.abort_reasons.size() > kMaxAbortReasons) {
    progress_.abort_reasons.erase(progress_.abort_reasons.begin());
  }
}

MoveProgress ProgressCounters::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return progress_;
}

}  // namespace shoal::coordinator
