#include "src/storage/version_clock.h"

namespace shoal::storage {

VersionClock::VersionClock(uint64_t recovered, uint64_t block, Persist persist)
    : block_(block), persist_(std::move(persist)), next_(recovered + 1), reserved_(recovered) {}

StatusOr<uint64_t> VersionClock::Allocate(uint64_t n) {
  const uint64_t first = next_.fetch_add(n, std::memory_order_acq_rel);
  const uint64_t last = first + n - 1;
  if (last > reserved_.load(std::memory_order_acquire)) SHOAL_RETURN_IF_ERROR(ReserveThrough(last));
  return first;
}

Status VersionClock::Observe(uint64_t version) {
  uint64_t next = next_.load(std::memory_order_acquire);
  while (next <= version &&
         !next_.compare_exchange_weak(next, version + 1, std::memory_order_acq_rel)) {
  }
  if (version > reserved_.load(std::memory_order_acquire)) return ReserveThrough(version);
  return OkStatus();
}

Status VersionClock::ReserveThrough(uint64_t version) {
  std::lock_guard<std::mutex> lock(reserve_mu_);
  const uint64_t reserved = reserved_.load(std::memory_order_acquire);
  if (version <= reserved) return OkStatus();
  const uint64_t target = version + block_;
  SHOAL_RETURN_IF_ERROR(persist_(target));
  reserved_.store(target, std::memory_order_release);
  return OkStatus();
}

}  // namespace shoal::storage
