#pragma once

// Who is asking, and may they (docs/security.md, "Users and roles"): the serving side's one
// place that turns a connection's identity into a principal with a role, and checks a role
// against what a request needs. No gRPC: src/net reads the peer certificate's common name and
// the call's user and password and hands them here.
//
// Authentication, in order:
//   1. a client certificate whose common name is kNodeCommonName is a cluster process: every
//      right (its requests are further limited to cluster processes by net::CheckClusterSender);
//   2. a user and password (call metadata over TLS) are that user if the password matches its
//      hash; a user without a hash takes no password;
//   3. otherwise the certificate's common name is the user, if the table holds it.
// Anything else is kUnauthenticated, with a message that names no password.
//
// A process that only follows the table (a node) may give a refresher: when a peer would be
// refused, it is asked for a newer table, so that a user added a moment ago is not refused while
// the follower's next poll is due. It is asked at most every kMinRefreshInterval, never again
// within that interval of the end of a fetch, and once while a fetch is in flight. The refresher
// only asks: the table comes later, on the follower's own thread, so that no request thread
// ever waits for the coordinator. Until the follower reports the fetch over (RefreshDone), or
// for at most kMaxRefreshPending, a peer that would be refused is answered kUnavailable instead
// (the client resends, and is judged by the newer table then); it counts as the refusal it
// stands for, once: the resends of that password from that address within kRetryCountedFor
// (told to retry again, or refused at last) count nothing more. A peer told to retry is refused
// for good once a fetch asked after it was told has ended: told to retry once per fetch at most,
// however slowly it comes back (else a client resending more than kMinRefreshInterval after
// each fetch, as a loaded one does, would be told to retry forever).
//
// A password for a user that does not exist or has no password is verified against a dummy
// hash (DummyPasswordHash) and refused exactly as a wrong one, so that neither the time nor the
// answer tells whether the user exists.
//
// A password is verified with Argon2id once per (user, password) and table version: verified
// pairs are cached by a keyed digest (never the password), and the cache is dropped when a newer
// table is installed, so a removed user or a changed password or role counts from the next call.
//
// Password guessing is limited (auth_throttle.h; docs/security.md, "Password guessing"): a
// client address past its failures is refused every password attempt, cached or not, for the
// backoff; a user name past its failures is refused any password this process has not verified
// yet (no Argon2id runs for it), while a cached one still passes; and at most
// max_concurrent_verifications hashes run at once. A refusal for a user's limit counts against the
// address, or it would answer guesses for free. Certificates are never throttled, and a process
// that knows no table yet counts nothing.
//
// Thread-safety: thread-safe; Authenticate may run on many threads while Install runs.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"
#include "src/security/auth_throttle.h"
#include "src/security/users.h"

namespace shoal::security {

struct Principal {
  std::string name{};  // the user, or kNodeCommonName for a cluster process
  Role role = Role::kRead;
  bool cluster_process = false;
};

struct PeerIdentity {
  std::string certificate_name{};  // the verified client certificate's CN ("" without one)
  std::string user{};              // "" when the call carries no user
  std::string password{};
  std::string address{};  // the client's host, without the port ("" when unknown)
};

struct AuthenticatorOptions {
  AuthThrottleOptions throttle{};
  uint32_t max_concurrent_verifications = DefaultConcurrentVerifications();
  // How long a verification waits for a slot before it is refused.
  std::chrono::milliseconds verification_wait = kDefaultVerificationWait;
};

// kInvalidArgument naming the field for a limit, window or backoff below 1.
[[nodiscard]] Status CheckAuthenticatorOptions(const AuthenticatorOptions& options);

class Authenticator {
 public:
  // Cached verified passwords; the cache is emptied when it reaches this size.
  static constexpr size_t kMaxCachedPasswords = 4096;

  // How long a password attempt counted when told to retry is remembered, so that its resends
  // do not count again; at most kMaxCachedPasswords are (emptied when full).
  static constexpr std::chrono::seconds kRetryCountedFor{10};

  static constexpr std::chrono::milliseconds kMinRefreshInterval{100};
  // A refresh not reported done by then is taken as over.
  static constexpr std::chrono::milliseconds kMaxRefreshPending{3000};

  Authenticator();
  explicit Authenticator(AuthenticatorOptions options);

  // Asks for a newer table and returns at once; the table arrives by Install, and RefreshDone
  // says the fetch asked for is over. Called by Authenticate on a request thread. Set once,
  // before the first Authenticate.
  void SetRefresher(std::function<void()> ask);
  // The fetch the refresher was last asked for is over, with or without a newer table.
  void RefreshDone();

  // Makes `table` the current one if it is newer (its version higher); an older or equal one is
  // ignored. Returns whether it was installed.
  bool Install(std::shared_ptr<const UserTable> table);
  // The current table's version (0: none installed).
  [[nodiscard]] uint64_t version() const;
  [[nodiscard]] std::shared_ptr<const UserTable> table() const;

  [[nodiscard]] StatusOr<Principal> Authenticate(const PeerIdentity& peer);

  // OK if `principal` may send a request needing `needed`; kPermissionDenied naming the request
  // and the role it needs otherwise.
  [[nodiscard]] static Status Authorize(const Principal& principal, Role needed,
                                        std::string_view request);

  // How many passwords were hashed to verify them (tests check the cache with it).
  [[nodiscard]] uint64_t TEST_password_verifications() const;

 private:
  // Why an attempt was refused: what it counts against, and whether a newer table may help.
  enum class Refusal : uint8_t {
    kNone,
    kWrongCredentials,  // counts against the address and the user name; a newer table may help
    kUserThrottled,     // counts against the address
    kBusy,              // no verification slot: counts against nothing
  };
  struct Attempt {
    StatusOr<Principal> principal;
    Refusal refusal = Refusal::kNone;
  };

  // Authentication with the refresh described above.
  [[nodiscard]] Attempt Judge(const PeerIdentity& peer);
  // Whether the refused password attempt `peer` counts against the throttle: false for the
  // resend of an attempt counted when it was told to retry (`told_to_retry` says this one is).
  [[nodiscard]] bool CountsOnce(const PeerIdentity& peer, bool told_to_retry);
  // Who a peer is for told_to_retry_ and counted_retries_: address, certificate name, user,
  // keyed password digest.
  [[nodiscard]] std::string RetryKey(const PeerIdentity& peer) const;
  // One attempt of Authenticate against the current table.
  [[nodiscard]] Attempt AuthenticateOnce(const PeerIdentity& peer);

  const std::string digest_key_;
  AuthThrottle throttle_;
  VerificationSlots slots_;
  std::function<void()> refresh_;
  absl::Mutex refresh_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::chrono::steady_clock::time_point next_refresh_ ABSL_GUARDED_BY(refresh_mu_){};
  // When the refresh in flight was asked for; nullopt when none is.
  std::optional<std::chrono::steady_clock::time_point> refresh_asked_
      ABSL_GUARDED_BY(refresh_mu_){};
  mutable absl::Mutex mu_;
  std::shared_ptr<const UserTable> table_ ABSL_GUARDED_BY(mu_);
  // user + '\0' + keyed digest of the password -> verified under the current table.
  std::unordered_map<std::string, bool> verified_ ABSL_GUARDED_BY(mu_);
  uint64_t verifications_ ABSL_GUARDED_BY(mu_) = 0;
  // RetryKey(peer) -> when it was last told to retry (CountsOnce).
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> counted_retries_
      ABSL_GUARDED_BY(mu_);
  // When the last fetch that ended (RefreshDone) was asked for: its table is at least as new as
  // that moment's.
  std::chrono::steady_clock::time_point last_fetch_asked_ ABSL_GUARDED_BY(refresh_mu_){};
  // RetryKey(peer) -> when it was first told to retry (Judge); entries older than
  // kRetryCountedFor are stale, and the map is emptied at kMaxCachedPasswords.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> told_to_retry_
      ABSL_GUARDED_BY(refresh_mu_);
};

}  // namespace shoal::security
