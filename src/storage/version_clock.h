#pragma once

// VersionClock: the store-wide version counter. Versions are strictly increasing across the life
// of the store, restarts included; they may have gaps.
//
// The clock reserves versions in blocks: before handing out a version above the durable
// reservation it persists a new reservation (through `persist`, a write to the same WAL as the
// data). A write that uses a version is issued after the reservation that covers it returned, so
// WAL order puts the reservation first: if the write survives a crash, so does the reservation,
// and after recovery the clock restarts above it. Observe() lifts the clock above versions that
// come from elsewhere (ingest, catch-up, replication) the same way.
//
// Thread-safe: Allocate() is one atomic add on the fast path.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

#include "src/common/status.h"

namespace shoal::storage {

class VersionClock {
 public:
  // Persists "versions up to and including `reserved` may be in use".
  using Persist = std::function<Status(uint64_t reserved)>;

  // `recovered` is the last persisted reservation (0 for a new store); `block` > 0.
  VersionClock(uint64_t recovered, uint64_t block, Persist persist);

  // The first of `n` >= 1 consecutive fresh versions.
  [[nodiscard]] StatusOr<uint64_t> Allocate(uint64_t n = 1);

  // After this returns OK, every later Allocate() returns versions above `version`, also after a
  // crash and recovery.
  [[nodiscard]] Status Observe(uint64_t version);

  // The highest version allocated or observed so far (0 if none).
  [[nodiscard]] uint64_t Last() const { return next_.load(std::memory_order_acquire) - 1; }

 private:
  [[nodiscard]] Status ReserveThrough(uint64_t version);

  const uint64_t block_;
  const Persist persist_;
  std::atomic<uint64_t> next_;      // next version to hand out
  std::atomic<uint64_t> reserved_;  // durable reservation
  std::mutex reserve_mu_;           // serializes persist_ calls
};

}  // namespace shoal::storage
