#include "src/storage/disk_space_guard.h"

#include <fmt/format.h>

#include <utility>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DiskSpaceGuard::DiskSpaceGuard(FreeSpaceReader read_free, std::string where, Options options)
    : read_free_(std::move(read_free)), where_(std::move(where)), options_(options) {}

Status DiskSpaceGuard::Admit(uint64_t bytes) {
  if (options_.reserve_bytes == 0) return OkStatus();
  const int64_t read_at = read_at_ns_.load(std::memory_order_acquire);
  const int64_t interval =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.recheck_interval).count();
  if (read_at != 0 && NowNanos() - read_at < interval) {
    if (reading_failed_.load(std::memory_order_relaxed)) return OkStatus();
    const uint64_t free = free_.load(std::memory_order_relaxed);
    if (free >= options_.reserve_bytes) {
      const uint64_t margin = free - options_.reserve_bytes;
      const uint64_t admitted = admitted_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
      if (admitted <= margin / 2) return OkStatus();
      // Half the margin may be gone: decide on a fresh reading.
      admitted_.fetch_sub(bytes, std::memory_order_relaxed);
    }
  }
  return AdmitAfterReading(bytes);
}

StatusOr<uint64_t> DiskSpaceGuard::ReadFreeBytes() {
  std::lock_guard<std::mutex> lock(read_mu_);
  return ReadLocked();
}

StatusOr<uint64_t> DiskSpaceGuard::ReadLocked() {
  StatusOr<uint64_t> free = read_free_();
  // Writes admitted on the old reading while this one is stored may be forgotten: the reserve
  // covers them, as it covers other processes' writes.
  admitted_.store(0, std::memory_order_relaxed);
  reading_failed_.store(!free.ok(), std::memory_order_relaxed);
  if (free.ok()) free_.store(*free, std::memory_order_relaxed);
  read_at_ns_.store(NowNanos(), std::memory_order_release);
  return free;
}

Status DiskSpaceGuard::AdmitAfterReading(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(read_mu_);
  const StatusOr<uint64_t> free = ReadLocked();
  if (!free.ok()) return OkStatus();  // fail open: the engine reports a real ENOSPC itself
  if (*free < options_.reserve_bytes || *free - options_.reserve_bytes < bytes) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return StorageError(ErrorReason::kNoSpace,
                        fmt::format("disk full under {}: {} bytes free, and writes stop while "
                                    "fewer than {} would be left (min_free_disk_bytes)",
                                    where_, *free, options_.reserve_bytes));
  }
  admitted_.fetch_add(bytes, std::memory_order_relaxed);
  return OkStatus();
}

}  // namespace shoal::storage
