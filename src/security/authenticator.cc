#include "src/security/authenticator.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "src/security/certificates.h"
#include "src/security/passwords.h"

namespace shoal::security {
namespace {

Status Refused() { return UnauthenticatedError("wrong user or password"); }

}  // namespace

Status CheckAuthenticatorOptions(const AuthenticatorOptions& options) {
  const auto at_least_one = [](std::string_view field, int64_t value) {
    if (value >= 1) return OkStatus();
    return InvalidArgumentError(fmt::format("{} must be at least 1, not {}", field, value));
  };
  const AuthThrottleOptions& throttle = options.throttle;
  SHOAL_RETURN_IF_ERROR(
      at_least_one("max_failures_per_address", int64_t{throttle.max_failures_per_address}));
  SHOAL_RETURN_IF_ERROR(
      at_least_one("max_failures_per_user", int64_t{throttle.max_failures_per_user}));
  SHOAL_RETURN_IF_ERROR(at_least_one("window seconds", throttle.window.count()));
  SHOAL_RETURN_IF_ERROR(at_least_one("backoff seconds", throttle.backoff.count()));
  SHOAL_RETURN_IF_ERROR(at_least_one("max_tracked", static_cast<int64_t>(throttle.max_tracked)));
  return at_least_one("max_concurrent_verifications",
                      int64_t{options.max_concurrent_verifications});
}

Authenticator::Authenticator() : Authenticator(AuthenticatorOptions{}) {}

Authenticator::Authenticator(AuthenticatorOptions options)
    : digest_key_(NewPasswordDigestKey()),
      throttle_(std::move(options.throttle)),
      slots_(options.max_concurrent_verifications, options.verification_wait),
      table_(std::make_shared<const UserTable>()) {}

bool Authenticator::Install(std::shared_ptr<const UserTable> table) {
  absl::MutexLock lock(&mu_);
  if (table == nullptr || table->version() <= table_->version()) return false;
  table_ = std::move(table);
  verified_.clear();
  return true;
}

uint64_t Authenticator::version() const {
  absl::MutexLock lock(&mu_);
  return table_->version();
}

std::shared_ptr<const UserTable> Authenticator::table() const {
  absl::MutexLock lock(&mu_);
  return table_;
}

void Authenticator::SetRefresher(std::function<void()> ask) { refresh_ = std::move(ask); }

void Authenticator::RefreshDone() {
  absl::MutexLock lock(&refresh_mu_);
  if (refresh_asked_.has_value()) last_fetch_asked_ = *refresh_asked_;
  refresh_asked_.reset();
  // A caller told to retry comes back within the interval and is judged by this table, instead
  // of asking again.
  next_refresh_ = std::max(next_refresh_, std::chrono::steady_clock::now() + kMinRefreshInterval);
}

StatusOr<Principal> Authenticator::Authenticate(const PeerIdentity& peer) {
  const bool password_attempt = !peer.user.empty() && peer.certificate_name != kNodeCommonName;
  if (!password_attempt) return Judge(peer).principal;
  SHOAL_RETURN_IF_ERROR(throttle_.CheckAddress(peer.address));
  Attempt attempt = Judge(peer);
  // A process that knows no users yet refuses everyone: that is no guess.
  if (version() == 0) return std::move(attempt.principal);
  const bool told_to_retry = attempt.principal.status().code() == StatusCode::kUnavailable;
  switch (attempt.refusal) {
    case Refusal::kWrongCredentials:
      if (!CountsOnce(peer, told_to_retry)) break;
      // A name no user can have counts against its address only, so that the names tracked
      // stay short.
      if (CheckUserName(peer.user).ok()) throttle_.RecordUserFailure(peer.user);
      throttle_.RecordAddressFailure(peer.address);
      break;
    case Refusal::kUserThrottled:
      if (!CountsOnce(peer, told_to_retry)) break;
      throttle_.RecordAddressFailure(peer.address);
      break;
    case Refusal::kNone:
    case Refusal::kBusy:
      break;
  }
  return std::move(attempt.principal);
}

bool Authenticator::CountsOnce(const PeerIdentity& peer, bool told_to_retry) {
  std::string key = RetryKey(peer);
  const auto now = std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  const auto it = counted_retries_.find(key);
  const bool counted = it != counted_retries_.end() && now - it->second < kRetryCountedFor;
  if (!told_to_retry) {
    // Judged at last: the resend of an attempt counted already, or a new one.
    if (it != counted_retries_.end()) counted_retries_.erase(it);
    return !counted;
  }
  if (counted) {
    it->second = now;
    return false;
  }
  if (it == counted_retries_.end() && counted_retries_.size() >= kMaxCachedPasswords) {
    std::erase_if(counted_retries_,
                  [&](const auto& entry) { return now - entry.second >= kRetryCountedFor; });
    if (counted_retries_.size() >= kMaxCachedPasswords) counted_retries_.clear();
  }
  counted_retries_.insert_or_assign(std::move(key), now);
  return true;
}

Authenticator::Attempt Authenticator::Judge(const PeerIdentity& peer) {
  const uint64_t judged_by = version();
  Attempt attempt = AuthenticateOnce(peer);
  if (attempt.refusal != Refusal::kWrongCredentials || refresh_ == nullptr) return attempt;
  // A newer table came while this peer was judged (a refresh, or the poll).
  if (version() != judged_by) return AuthenticateOnce(peer);
  bool ask = false;
  const std::string key = RetryKey(peer);
  {
    absl::MutexLock lock(&refresh_mu_);
    const auto now = std::chrono::steady_clock::now();
    auto told = told_to_retry_.find(key);
    if (told != told_to_retry_.end() && now - told->second >= kRetryCountedFor) {
      told_to_retry_.erase(told);
      told = told_to_retry_.end();
    }
    // Told to retry before, and judged now by a table fetched since: final.
    if (told != told_to_retry_.end() && last_fetch_asked_ >= told->second) return attempt;
    if (refresh_asked_.has_value() && now - *refresh_asked_ >= kMaxRefreshPending) {
      refresh_asked_.reset();
    }
    if (!refresh_asked_.has_value()) {
      if (now < next_refresh_) return attempt;
      next_refresh_ = now + kMinRefreshInterval;
      refresh_asked_ = now;
      ask = true;
    }
    if (told == told_to_retry_.end()) {
      if (told_to_retry_.size() >= kMaxCachedPasswords) told_to_retry_.clear();
      told_to_retry_.emplace(key, now);
    }
  }
  if (ask) refresh_();
  attempt.principal = UnavailableError(
      "this process is fetching the cluster's users to judge these credentials; retry");
  return attempt;
}

std::string Authenticator::RetryKey(const PeerIdentity& peer) const {
  std::string key = peer.address;
  key += '\0';
  key += peer.certificate_name;
  key += '\0';
  key += peer.user;
  key += '\0';
  key += PasswordDigest(digest_key_, peer.password);
  return key;
}

Authenticator::Attempt Authenticator::AuthenticateOnce(const PeerIdentity& peer) {
  if (peer.certificate_name == kNodeCommonName) {
    return {Principal{
        .name = std::string(kNodeCommonName), .role = Role::kAdmin, .cluster_process = true}};
  }
  std::shared_ptr<const UserTable> table = this->table();
  if (peer.user.empty()) {
    if (peer.certificate_name.empty()) {
      return {UnauthenticatedError("no credentials: give a user and password, or a client "
                                   "certificate of a user (docs/security.md)"),
              Refusal::kWrongCredentials};
    }
    const User* user = table->Find(peer.certificate_name);
    if (user == nullptr) {
      return {UnauthenticatedError(fmt::format(
                  "the client certificate's user '{}' is not a user of this cluster (shoal user "
                  "add)",
                  peer.certificate_name)),
              Refusal::kWrongCredentials};
    }
    return {Principal{.name = user->name, .role = user->role}};
  }
  const User* user = table->Find(peer.user);
  if (peer.password.empty()) return {Refused(), Refusal::kWrongCredentials};
  std::string key = peer.user;
  key += '\0';
  key += PasswordDigest(digest_key_, peer.password);
  if (user != nullptr) {
    absl::MutexLock lock(&mu_);
    if (table_ == table && verified_.contains(key)) {
      return {Principal{.name = user->name, .role = user->role}};
    }
  }
  // Before the user is looked at, so that a throttled name says nothing of whether it exists.
  if (Status throttled = throttle_.CheckUser(peer.user); !throttled.ok()) {
    return {std::move(throttled), Refusal::kUserThrottled};
  }
  // A user that does not exist or has no password is checked against the dummy hash, at the
  // cost of a real one, and refused as a wrong password is: the time and the answer say nothing
  // of whether the user exists. A process that knows no users has nothing to hide.
  const bool has_password = user != nullptr && !user->password_hash.empty();
  std::string_view hash;
  if (has_password) {
    hash = user->password_hash;
  } else {
    if (table->version() == 0) return {Refused(), Refusal::kWrongCredentials};
    const StatusOr<std::string>& dummy = DummyPasswordHash();
    if (!dummy.ok()) return {Refused(), Refusal::kWrongCredentials};
    hash = *dummy;
  }
  if (Status busy = slots_.Acquire(); !busy.ok()) return {std::move(busy), Refusal::kBusy};
  {
    absl::MutexLock lock(&mu_);
    ++verifications_;
  }
  const Status verified = VerifyPassword(peer.password, hash);
  slots_.Release();
  if (!has_password || !verified.ok()) return {Refused(), Refusal::kWrongCredentials};
  absl::MutexLock lock(&mu_);
  if (table_ == table) {
    if (verified_.size() >= kMaxCachedPasswords) verified_.clear();
    verified_.emplace(std::move(key), true);
  }
  return {Principal{.name = user->name, .role = user->role}};
}

Status Authenticator::Authorize(const Principal& principal, Role needed, std::string_view request) {
  if (Allows(principal.role, needed)) return OkStatus();
  return PermissionDeniedError(fmt::format("{} needs the role {}; user '{}' has {}", request,
                                           ToString(needed), principal.name,
                                           ToString(principal.role)));
}

uint64_t Authenticator::TEST_password_verifications() const {
  absl::MutexLock lock(&mu_);
  return verifications_;
}

}  // namespace shoal::security
