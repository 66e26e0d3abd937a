#pragma once

// Limits on password guessing (docs/security.md, "Password guessing"; docs/limits.md).
//
// AuthThrottle counts failed password attempts in a sliding window, per client address and per
// user name (any name, known or not, so that being throttled says nothing of a user's existence).
// When a key reaches its limit within the window it is blocked for the backoff: Check* answers
// kUnauthenticated naming the limit and when to retry, the block is logged once (log::Warning
// "auth.throttled", never a password), and attempts refused meanwhile neither count nor extend
// it. What a block refuses is the Authenticator's decision (authenticator.h). Each table holds at
// most max_tracked keys: past it, stale keys go first, then the unblocked key idle longest, then
// the block that ends first.
//
// VerificationSlots bounds the Argon2id verifications running at once in a process, so that a
// flood of guesses cannot hold every serving thread or the memory of that many hashes: a
// verification past the bound waits up to its wait, then is refused with kResourceExhausted
// naming the bound.
//
// Thread-safety: both classes are thread-safe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"

namespace shoal::security {

using ThrottleClock = std::chrono::steady_clock;

inline constexpr uint32_t kDefaultMaxFailuresPerAddress = 10;
inline constexpr uint32_t kDefaultMaxFailuresPerUser = 20;
inline constexpr std::chrono::seconds kDefaultFailureWindow{60};
inline constexpr std::chrono::seconds kDefaultThrottleBackoff{60};
inline constexpr size_t kDefaultMaxThrottleKeys = 4096;
// At most this many verifications at once, fewer on a machine with fewer cores.
inline constexpr uint32_t kMaxConcurrentVerifications = 8;
inline constexpr std::chrono::milliseconds kDefaultVerificationWait{1000};

struct AuthThrottleOptions {
  uint32_t max_failures_per_address = kDefaultMaxFailuresPerAddress;  // within window, >= 1
  uint32_t max_failures_per_user = kDefaultMaxFailuresPerUser;        // within window, >= 1
  std::chrono::seconds window = kDefaultFailureWindow;
  std::chrono::seconds backoff = kDefaultThrottleBackoff;
  size_t max_tracked = kDefaultMaxThrottleKeys;  // keys per table, >= 1
  std::function<ThrottleClock::time_point()> now = ThrottleClock::now;
};

class AuthThrottle {
 public:
  explicit AuthThrottle(AuthThrottleOptions options);

  // OK, or kUnauthenticated naming the limit and the seconds left, if `address` is blocked.
  [[nodiscard]] Status CheckAddress(std::string_view address);
  // The same for the user name `user`.
  [[nodiscard]] Status CheckUser(std::string_view user);

  // One failed attempt from `address`; starts its backoff at the limit.
  void RecordAddressFailure(std::string_view address);
  // One failed attempt for the user name `user`; starts its backoff at the limit.
  void RecordUserFailure(std::string_view user);

  [[nodiscard]] size_t TEST_tracked_addresses() const;
  [[nodiscard]] size_t TEST_tracked_users() const;

 private:
  struct Entry {
    std::deque<ThrottleClock::time_point> failures{};  // within the window, oldest first
    ThrottleClock::time_point last_failure{};
    ThrottleClock::time_point blocked_until{};
  };
  using Table = std::unordered_map<std::string, Entry>;
  enum class Kind : uint8_t { kAddress, kUser };

  [[nodiscard]] Status Check(Kind kind, std::string_view key);
  void Record(Kind kind, std::string_view key);
  // The entry of `key`, made room for if new.
  Entry& Find(Table& table, std::string_view key, ThrottleClock::time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] Table& TableOf(Kind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] uint32_t LimitOf(Kind kind) const;

  const AuthThrottleOptions options_;
  mutable absl::Mutex mu_;
  Table addresses_ ABSL_GUARDED_BY(mu_);
  Table users_ ABSL_GUARDED_BY(mu_);
};

class VerificationSlots {
 public:
  // `slots` >= 1.
  VerificationSlots(uint32_t slots, std::chrono::milliseconds wait);

  // Takes a slot, waiting up to the wait for one; kResourceExhausted naming the bound.
  [[nodiscard]] Status Acquire();
  void Release();

  [[nodiscard]] uint32_t slots() const { return slots_; }

 private:
  [[nodiscard]] bool HasFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_use_ < slots_; }

  const uint32_t slots_;
  const std::chrono::milliseconds wait_;
  absl::Mutex mu_;
  uint32_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

// kMaxConcurrentVerifications, or the machine's cores if fewer (at least 1).
[[nodiscard]] uint32_t DefaultConcurrentVerifications();

}  // namespace shoal::security
