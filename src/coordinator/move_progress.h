#pragma once

// ProgressCounters: the MoveProgress of this coordinator incarnation, updated by the move
// executor's tasks and read by operators (shoal status, progress bars).
//
// Thread-safety: thread-safe; every update is one critical section.

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/coordinator/coordinator_options.h"

namespace shoal::coordinator {

class ProgressCounters {
 public:
  // The most abort reasons kept (the latest).
  static constexpr size_t kMaxAbortReasons = 16;

  // BEGIN stored: one more move in flight, with `planned_bytes` planned.
  void Started(uint64_t planned_bytes);
  // A copy-then-switch move exported `actual_bytes` where `planned_bytes` were planned.
  void CorrectPlanned(uint64_t planned_bytes, uint64_t actual_bytes);
  void Copied(uint64_t bytes);
  // COMMIT stored, with the bytes the move carried.
  void Committed(uint64_t bytes_moved);
  // Of a committed copy-then-switch move: the bytes its catch-up applied, and whether it resumed
  // a copy the destination held (no snapshot).
  void CaughtUp(uint64_t bytes, bool resumed);
  // A fence window ended by the commit (or the switch) that made `destination` an owner.
  void FenceWindowEnded(const FenceWindow& window, NodeId destination, transport::Micros now);
  // The move's task no longer runs it (finished, failed or handed to recovery).
  void Ended();
  void Finished();
  void Aborted(std::string reason);

  [[nodiscard]] MoveProgress Snapshot() const;

 private:
  mutable absl::Mutex mu_;
  MoveProgress progress_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
