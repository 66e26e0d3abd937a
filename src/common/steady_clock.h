#pragma once

// The process's monotonic clock in nanoseconds (std::chrono::steady_clock), for timestamps kept
// in atomics and compared across threads: stall and retry clocks of the storage layer and the
// processes' health checks.

#include <chrono>
#include <cstdint>

namespace shoal {

[[nodiscard]] inline int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace shoal
