#pragma once

// DiskSpaceGuard: refuses a write that would leave less than a reserve of free disk space, before
// the engine sees it (docs/design/storage.md, "A full disk").
//
// Why: RocksDB 7.8 keeps the error of a write the disk refused (ENOSPC) and refuses every later
// write with it, also once space is back, until the store resumes it (bucket_store_recovery.cc),
// which needs the disk to have room again and takes up to about 5 s. A write refused here with
// kNoSpace changes nothing and leaves the engine healthy, so writes resume by themselves as soon
// as space is freed. The reserve also leaves room for what the engine writes on its own
// (flushing memtables, compacting), which no guard can refuse.
//
// Invariants:
//   - Admit(n) returns OK only if the last reading of free space, minus every byte admitted
//     since, minus n, is at least the reserve (bytes written by other processes between two
//     readings are covered by the reserve);
//   - a reading is at most `recheck_interval` old when Admit trusts it, and is taken again once
//     the bytes admitted since could have used half of the margin above the reserve; so a full
//     disk is noticed within one interval, and within one write once the margin is small;
//   - a refused Admit admits nothing; a reading that fails admits (the engine reports a real
//     ENOSPC itself: failing open keeps a store usable on a file system that cannot tell).
//
// Thread-safe. Admit takes no lock unless it needs a fresh reading.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "src/common/status.h"

namespace shoal::storage {

class DiskSpaceGuard {
 public:
  // Free bytes on the disk the guarded files live on (statvfs through the engine's Env).
  using FreeSpaceReader = std::function<StatusOr<uint64_t>()>;

  struct Options {
    uint64_t reserve_bytes = 0;  // 0 turns the guard off
    std::chrono::milliseconds recheck_interval{100};
  };

  // `where` names the guarded directory in error messages.
  DiskSpaceGuard(FreeSpaceReader read_free, std::string where, Options options);

  // OK if writing `bytes` more leaves at least the reserve free; a kNoSpace error otherwise.
  [[nodiscard]] Status Admit(uint64_t bytes);

  // Takes a fresh reading now (resetting what was admitted since the last one) and returns the
  // free bytes, or the reader's error. For load reports; writes call Admit.
  [[nodiscard]] StatusOr<uint64_t> ReadFreeBytes();
  [[nodiscard]] uint64_t reserve_bytes() const { return options_.reserve_bytes; }
  // Free bytes at the last reading (0 before the first).
  [[nodiscard]] uint64_t last_free_bytes() const { return free_.load(std::memory_order_relaxed); }
  // Writes refused so far.
  [[nodiscard]] uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  [[nodiscard]] Status AdmitAfterReading(uint64_t bytes);
  // Reads free space and stores the reading; read_mu_ held.
  [[nodiscard]] StatusOr<uint64_t> ReadLocked();

  const FreeSpaceReader read_free_;
  const std::string where_;
  const Options options_;
  std::mutex read_mu_;  // one reading at a time
  std::atomic<uint64_t> free_{0};
  std::atomic<int64_t> read_at_ns_{0};  // steady clock; 0 = never read
  std::atomic<bool> reading_failed_{false};
  std::atomic<uint64_t> admitted_{0};  // bytes admitted since the last reading
  std::atomic<uint64_t> refused_{0};
};

}  // namespace shoal::storage
