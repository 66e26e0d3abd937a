#pragma once

// Wakeup: a one-shot signal that one task waits for with Runtime::Await, set by another task or
// a transport thread (a reply's callback) once what the waiter needs has happened. Set never
// blocks (one short lock), so it may be called under other locks; the waiter re-checks its own
// condition after every return, so a wakeup set early or twice is harmless.
//
// Thread-safety: every method is thread-safe.

#include <algorithm>
#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shoal::transport {

class Wakeup {
 public:
  void Set() {
    absl::MutexLock lock(&mu_);
    set_ = true;
  }
  [[nodiscard]] bool IsSet() const {
    absl::MutexLock lock(&mu_);
    return set_;
  }
  // Blocks the calling thread until set or `micros` passed; true if set. Only real runtimes
  // call it (Runtime::Await): a simulated task never blocks its thread.
  [[nodiscard]] bool WaitFor(int64_t micros) const {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&set_),
                                absl::Microseconds(std::max<int64_t>(micros, 0)));
  }

 private:
  mutable absl::Mutex mu_;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shoal::transport
