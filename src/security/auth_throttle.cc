#include "src/security/auth_throttle.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "src/common/log.h"

namespace shoal::security {
namespace {

int64_t SecondsUntil(ThrottleClock::time_point now, ThrottleClock::time_point then) {
  const auto left = std::chrono::ceil<std::chrono::seconds>(then - now);
  return std::max<int64_t>(1, left.count());
}

}  // namespace

AuthThrottle::AuthThrottle(AuthThrottleOptions options) : options_(std::move(options)) {}

Status AuthThrottle::CheckAddress(std::string_view address) {
  return Check(Kind::kAddress, address);
}

Status AuthThrottle::CheckUser(std::string_view user) { return Check(Kind::kUser, user); }

void AuthThrottle::RecordAddressFailure(std::string_view address) {
  Record(Kind::kAddress, address);
}

void AuthThrottle::RecordUserFailure(std::string_view user) { Record(Kind::kUser, user); }

AuthThrottle::Table& AuthThrottle::TableOf(Kind kind) {
  switch (kind) {
    case Kind::kAddress:
      return addresses_;
    case Kind::kUser:
      return users_;
  }
  return addresses_;
}

uint32_t AuthThrottle::LimitOf(Kind kind) const {
  switch (kind) {
    case Kind::kAddress:
      return options_.max_failures_per_address;
    case Kind::kUser:
      return options_.max_failures_per_user;
  }
  return options_.max_failures_per_address;
}

Status AuthThrottle::Check(Kind kind, std::string_view key) {
  const auto now = options_.now();
  absl::MutexLock lock(&mu_);
  const Table& table = TableOf(kind);
  const auto it = table.find(std::string(key));
  if (it == table.end() || it->second.blocked_until <= now) return OkStatus();
  const int64_t retry = SecondsUntil(now, it->second.blocked_until);
  switch (kind) {
    case Kind::kAddress:
      return UnauthenticatedError(fmt::format(
          "too many failed password attempts from client address {}: the limit is {} per {} s "
          "per address; its password attempts are refused for {} s, retry in {} s "
          "(docs/limits.md)",
          key, LimitOf(kind), options_.window.count(), options_.backoff.count(), retry));
    case Kind::kUser:
      return UnauthenticatedError(fmt::format(
          "too many failed password attempts for user '{}': the limit is {} per {} s per user; "
          "passwords not yet verified by this process are refused for {} s, retry in {} s "
          "(docs/limits.md)",
          key, LimitOf(kind), options_.window.count(), options_.backoff.count(), retry));
  }
  return OkStatus();
}

void AuthThrottle::Record(Kind kind, std::string_view key) {
  const auto now = options_.now();
  const uint32_t limit = LimitOf(kind);
  {
    absl::MutexLock lock(&mu_);
    Entry& entry = Find(TableOf(kind), key, now);
    // A refused attempt neither counts nor extends the block.
    if (entry.blocked_until > now) return;
    while (!entry.failures.empty() && entry.failures.front() <= now - options_.window) {
      entry.failures.pop_front();
    }
    entry.failures.push_back(now);
    entry.last_failure = now;
    if (entry.failures.size() < limit) return;
    entry.failures.clear();
    entry.blocked_until = now + options_.backoff;
  }
  // Once per block: an operator sees the attack, not each guess.
  log::Warning("auth.throttled", {{kind == Kind::kAddress ? "address" : "user", key},
                                  {"failures", limit},
                                  {"window_s", options_.window.count()},
                                  {"backoff_s", options_.backoff.count()}});
}

AuthThrottle::Entry& AuthThrottle::Find(Table& table, std::string_view key,
                                        ThrottleClock::time_point now) {
  const auto found = table.find(std::string(key));
  if (found != table.end()) return found->second;
  if (table.size() >= options_.max_tracked) {
    std::erase_if(table, [&](const auto& item) {
      const Entry& entry = item.second;
      return entry.blocked_until <= now && entry.last_failure <= now - options_.window;
    });
  }
  if (table.size() >= options_.max_tracked) {
    // Unblocked keys go before blocked ones: the idle longest, else the block ending first.
    auto victim = table.begin();
    const auto earlier = [&](const Entry& a, const Entry& b) {
      const bool a_blocked = a.blocked_until > now;
      const bool b_blocked = b.blocked_until > now;
      if (a_blocked != b_blocked) return !a_blocked;
      return a_blocked ? a.blocked_until < b.blocked_until : a.last_failure < b.last_failure;
    };
    for (auto it = table.begin(); it != table.end(); ++it) {
      if (earlier(it->second, victim->second)) victim = it;
    }
    table.erase(victim);
  }
  return table.emplace(std::string(key), Entry{}).first->second;
}

size_t AuthThrottle::TEST_tracked_addresses() const {
  absl::MutexLock lock(&mu_);
  return addresses_.size();
}

size_t AuthThrottle::TEST_tracked_users() const {
  absl::MutexLock lock(&mu_);
  return users_.size();
}

VerificationSlots::VerificationSlots(uint32_t slots, std::chrono::milliseconds wait)
    : slots_(std::max<uint32_t>(1, slots)), wait_(wait) {}

Status VerificationSlots::Acquire() {
  absl::MutexLock lock(&mu_);
  if (!HasFree() && !mu_.AwaitWithTimeout(absl::Condition(this, &VerificationSlots::HasFree),
                                          absl::FromChrono(wait_))) {
    return ResourceExhaustedError(fmt::format(
        "{} password verifications are already running; the limit is {} at once per process "
        "(docs/limits.md); retry shortly",
        in_use_, slots_));
  }
  ++in_use_;
  return OkStatus();
}

void VerificationSlots::Release() {
  absl::MutexLock lock(&mu_);
  --in_use_;
}

uint32_t DefaultConcurrentVerifications() {
  const uint32_t cores = std::thread::hardware_concurrency();
  return std::clamp<uint32_t>(cores, 1, kMaxConcurrentVerifications);
}

}  // namespace shoal::security
