#include "src/security/authenticator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "src/security/passwords.h"

namespace shoal::security {
namespace {

constexpr std::string_view kAlicePassword = "alice's long password";

std::shared_ptr<const UserTable> Table() {
  UserTable table;
  table = table
              .Add({.name = "alice",
                    .role = Role::kWrite,
                    .password_hash = HashPassword(kAlicePassword).value()})
              .value();
  table = table.Add({.name = "admin", .role = Role::kAdmin}).value();
  return std::make_shared<const UserTable>(std::move(table));
}

TEST(AuthenticatorTest, NodeCertificateIsAClusterProcess) {
  Authenticator auth;
  auto principal = auth.Authenticate({.certificate_name = "node"});
  ASSERT_TRUE(principal.ok());
  EXPECT_TRUE(principal->cluster_process);
  EXPECT_EQ(principal->role, Role::kAdmin);
}

TEST(AuthenticatorTest, CertificateOfAUserIsThatUser) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  auto admin = auth.Authenticate({.certificate_name = "admin"});
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_EQ(admin->name, "admin");
  EXPECT_EQ(admin->role, Role::kAdmin);
  EXPECT_FALSE(admin->cluster_process);
  EXPECT_EQ(auth.Authenticate({.certificate_name = "mallory"}).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate({}).status().code(), StatusCode::kUnauthenticated);
}

TEST(AuthenticatorTest, PasswordIsVerifiedOncePerTableVersion) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  const PeerIdentity alice{
      .certificate_name = "admin", .user = "alice", .password = std::string(kAlicePassword)};
  for (int i = 0; i < 5; ++i) {
    auto principal = auth.Authenticate(alice);
    ASSERT_TRUE(principal.ok()) << principal.status();
    EXPECT_EQ(principal->name, "alice");  // the password's user, not the certificate's
    EXPECT_EQ(principal->role, Role::kWrite);
  }
  EXPECT_EQ(auth.TEST_password_verifications(), 1u);

  // A newer table empties the cache: a revoked role counts from the next call.
  auto next = std::make_shared<const UserTable>(Table()->Grant("alice", Role::kRead).value());
  ASSERT_EQ(next->version(), 3u);
  auto same_version = Table();
  EXPECT_FALSE(auth.Install(same_version));
  ASSERT_TRUE(auth.Install(next));
  auto principal = auth.Authenticate(alice);
  ASSERT_TRUE(principal.ok());
  EXPECT_EQ(principal->role, Role::kRead);
  EXPECT_EQ(auth.TEST_password_verifications(), 2u);
}

TEST(AuthenticatorTest, WrongPasswordsAndRemovedUsersAreRefused) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  const auto refused = [&](PeerIdentity peer) {
    const Status status = auth.Authenticate(peer).status();
    EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << peer.user;
    EXPECT_EQ(status.message().find(peer.password.empty() ? "\x01" : peer.password),
              std::string_view::npos);
  };
  refused({.user = "alice", .password = "not alice's password"});
  refused({.user = "alice"});
  refused({.user = "nobody", .password = "whatever password"});
  // A certificate-only user takes no password.
  refused({.user = "admin", .password = "whatever password"});
  // The certificate does not rescue a wrong password.
  refused({.certificate_name = "admin", .user = "alice", .password = "not alice's password"});

  ASSERT_TRUE(auth.Authenticate({.user = "alice", .password = std::string(kAlicePassword)}).ok());
  ASSERT_TRUE(
      auth.Install(std::make_shared<const UserTable>(auth.table()->Remove("alice").value())));
  refused({.user = "alice", .password = std::string(kAlicePassword)});
}

// A user name that does not exist, or a user without a password, costs one Argon2id run against
// the dummy hash, as a wrong password does, and gets the very same answer; it counts against the
// address and the name as a wrong password does.
TEST(AuthenticatorTest, UnknownUserIsVerifiedAndRefusedAsAWrongPassword) {
  Authenticator auth({.throttle = {.max_failures_per_address = 2, .max_failures_per_user = 100}});
  ASSERT_TRUE(auth.Install(Table()));
  const Status wrong =
      auth.Authenticate(
              {.user = "alice", .password = "not alice's password", .address = "10.0.0.1"})
          .status();
  EXPECT_EQ(wrong.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.TEST_password_verifications(), 1u);

  const PeerIdentity nobody{
      .user = "nobody", .password = "not alice's password", .address = "10.0.0.2"};
  const Status unknown = auth.Authenticate(nobody).status();
  EXPECT_EQ(auth.TEST_password_verifications(), 2u);
  EXPECT_EQ(unknown.code(), wrong.code());
  EXPECT_EQ(unknown.message(), wrong.message());

  // A certificate-only user given a password: the same.
  const Status no_password =
      auth.Authenticate({.user = "admin", .password = "whatever password", .address = "10.0.0.3"})
          .status();
  EXPECT_EQ(auth.TEST_password_verifications(), 3u);
  EXPECT_EQ(no_password.code(), wrong.code());
  EXPECT_EQ(no_password.message(), wrong.message());

  // The second failure from 10.0.0.2 blocks it, as a second wrong password would.
  EXPECT_EQ(auth.Authenticate(nobody).status().message(), wrong.message());
  EXPECT_EQ(auth.TEST_password_verifications(), 4u);
  EXPECT_NE(auth.Authenticate(nobody).status().message().find("from client address 10.0.0.2"),
            std::string_view::npos);
  EXPECT_EQ(auth.TEST_password_verifications(), 4u);
}

// A user added a moment ago, at a follower that has not learned it: the first refused call asks
// for a refresh and returns at once; the calls refused until the refresh is over are told to
// retry (kUnavailable) instead of being refused by the table they came too early for, and ask
// no second time; once the new table is in, the user passes.
TEST(AuthenticatorTest, CallsRefusedDuringARefreshAreToldToRetry) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  std::atomic<int> asks{0};
  auth.SetRefresher([&] { ++asks; });
  std::atomic<int> retry{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      const Status status = auth.Authenticate({.certificate_name = "bob"}).status();
      if (status.code() == StatusCode::kUnavailable) ++retry;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(retry.load(), 8);
  EXPECT_EQ(asks.load(), 1);
  // Known users pass meanwhile.
  EXPECT_TRUE(auth.Authenticate({.certificate_name = "admin"}).ok());

  ASSERT_TRUE(auth.Install(std::make_shared<const UserTable>(
      auth.table()->Add({.name = "bob", .role = Role::kRead}).value())));
  auth.RefreshDone();
  EXPECT_TRUE(auth.Authenticate({.certificate_name = "bob"}).ok());
  // A peer the new table does not know either is refused, and asks at most once per
  // kMinRefreshInterval.
  const Status mallory = auth.Authenticate({.certificate_name = "mallory"}).status();
  EXPECT_TRUE(mallory.code() == StatusCode::kUnauthenticated ||
              mallory.code() == StatusCode::kUnavailable)
      << mallory;
  EXPECT_LE(asks.load(), 2);
}

// A peer told to retry that comes back only after the fetch ended, and later than
// kMinRefreshInterval after it (a loaded client), is refused for good: told to retry once per
// fetch, never in a loop.
TEST(AuthenticatorTest, APeerToldToRetryIsRefusedOnceAFetchEndedAfterIt) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  std::atomic<int> asks{0};
  auth.SetRefresher([&] { ++asks; });
  const PeerIdentity removed{.user = "leaving", .password = "its old password", .address = "a"};
  EXPECT_EQ(auth.Authenticate(removed).status().code(), StatusCode::kUnavailable);
  auth.RefreshDone();
  std::this_thread::sleep_for(2 * Authenticator::kMinRefreshInterval);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth.Authenticate(removed).status().code(), StatusCode::kUnauthenticated);
  }
  EXPECT_EQ(asks.load(), 1);
  // Another peer refused is still told to retry once, so that a user added a moment ago passes.
  EXPECT_EQ(auth.Authenticate({.certificate_name = "bob"}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(asks.load(), 2);
}

// A refresher whose fetch hangs (an unreachable coordinator) holds no call: the refused one
// returns while the fetch is blocked, and so do the others.
TEST(AuthenticatorTest, ABlockedRefreshHoldsNoCall) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  absl::Notification release;
  std::thread fetch;
  auth.SetRefresher([&] {
    fetch = std::thread([&] {
      release.WaitForNotification();
      auth.RefreshDone();
    });
  });
  EXPECT_EQ(auth.Authenticate({.certificate_name = "bob"}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_FALSE(release.HasBeenNotified());
  EXPECT_TRUE(auth.Authenticate({.certificate_name = "admin"}).ok());
  EXPECT_TRUE(auth.Authenticate({.user = "alice", .password = std::string(kAlicePassword)}).ok());
  EXPECT_EQ(auth.Authenticate({.certificate_name = "bob"}).status().code(),
            StatusCode::kUnavailable);
  release.Notify();
  fetch.join();
}

// A wrong password judged while the users are fetched is told to retry (kUnavailable), and the
// client resends it until it is judged: the password counts once, not once per answer. A second
// wrong password counts again.
TEST(AuthenticatorTest, AWrongPasswordResentDuringARefreshCountsOnce) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  Authenticator auth(
      {.throttle = {
           .max_failures_per_address = 2, .max_failures_per_user = 2, .now = [&] { return now; }}});
  ASSERT_TRUE(auth.Install(Table()));
  // A fetch that finds no newer table.
  auth.SetRefresher([&] { auth.RefreshDone(); });
  // As a client does: resend while told to retry.
  const auto send = [&](const PeerIdentity& peer) {
    Status status = auth.Authenticate(peer).status();
    for (int i = 0; i < 20 && status.code() == StatusCode::kUnavailable; ++i) {
      status = auth.Authenticate(peer).status();
    }
    return status;
  };
  const PeerIdentity guess{
      .user = "alice", .password = "not alice's password", .address = "10.0.0.5"};
  EXPECT_EQ(auth.Authenticate(guess).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(send(guess).message(), "wrong user or password");
  PeerIdentity right = guess;
  right.password = std::string(kAlicePassword);
  EXPECT_TRUE(auth.Authenticate(right).ok()) << "one wrong password counted more than once";

  PeerIdentity second = guess;
  second.password = "another wrong one";
  now += std::chrono::seconds(1);
  // Refused as wrong, or already by the address's limit that it reached.
  EXPECT_EQ(send(second).code(), StatusCode::kUnauthenticated);
  const Status throttled = auth.Authenticate(right).status();
  EXPECT_NE(throttled.message().find("too many failed password attempts from client address "
                                     "10.0.0.5"),
            std::string_view::npos)
      << throttled;
}

// Guessing from one address: past the limit, every password attempt from it is refused without
// hashing, a right one too; another address, and certificates from the same one, are unaffected.
TEST(AuthenticatorTest, WrongPasswordsFromAnAddressAreThrottledWithoutHashing) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  Authenticator auth({.throttle = {.max_failures_per_address = 3,
                                   .window = std::chrono::seconds(60),
                                   .backoff = std::chrono::seconds(60),
                                   .now = [&] { return now; }}});
  ASSERT_TRUE(auth.Install(Table()));
  const PeerIdentity guess{
      .user = "alice", .password = "not alice's password", .address = "10.0.0.66"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth.Authenticate(guess).status().message(), "wrong user or password");
  }
  EXPECT_EQ(auth.TEST_password_verifications(), 3u);
  const Status throttled = auth.Authenticate(guess).status();
  EXPECT_EQ(throttled.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(throttled.message().find("too many failed password attempts from client address "
                                     "10.0.0.66"),
            std::string_view::npos)
      << throttled;
  PeerIdentity right = guess;
  right.password = std::string(kAlicePassword);
  EXPECT_EQ(auth.Authenticate(right).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.TEST_password_verifications(), 3u);  // no Argon2id for a throttled address

  PeerIdentity elsewhere = right;
  elsewhere.address = "10.0.0.7";
  EXPECT_TRUE(auth.Authenticate(elsewhere).ok());
  // Now cached, yet still refused from the throttled address.
  EXPECT_EQ(auth.Authenticate(right).status().code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.Authenticate({.certificate_name = "admin", .address = "10.0.0.66"}).ok());
  EXPECT_TRUE(auth.Authenticate({.certificate_name = "node", .address = "10.0.0.66"}).ok());

  now += std::chrono::seconds(60);
  EXPECT_TRUE(auth.Authenticate(right).ok());
}

// Guessing one user from many addresses: past the user's limit no Argon2id runs for that user
// name, known or not, but a password this process verified already still passes.
TEST(AuthenticatorTest, UserLimitRefusesOnlyPasswordsNotYetVerified) {
  auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  Authenticator auth(
      {.throttle = {
           .max_failures_per_address = 2, .max_failures_per_user = 3, .now = [&] { return now; }}});
  ASSERT_TRUE(auth.Install(Table()));
  const PeerIdentity alice{
      .user = "alice", .password = std::string(kAlicePassword), .address = "10.0.0.1"};
  ASSERT_TRUE(auth.Authenticate(alice).ok());
  for (int i = 0; i < 3; ++i) {
    const std::string address = "10.0.1." + std::to_string(i);
    EXPECT_FALSE(
        auth.Authenticate({.user = "alice", .password = "guess-guess", .address = address}).ok());
    EXPECT_FALSE(
        auth.Authenticate({.user = "nobody", .password = "guess-guess", .address = address}).ok());
  }
  // One Argon2id run per guess, for the user that exists and the one that does not alike.
  EXPECT_EQ(auth.TEST_password_verifications(), 7u);
  const Status alice_throttled =
      auth.Authenticate({.user = "alice", .password = "guess-guess", .address = "10.0.2.1"})
          .status();
  const Status nobody_throttled =
      auth.Authenticate({.user = "nobody", .password = "guess-guess", .address = "10.0.2.2"})
          .status();
  EXPECT_NE(alice_throttled.message().find("for user 'alice'"), std::string_view::npos)
      << alice_throttled;
  // The same answer whether the user exists or not.
  EXPECT_NE(nobody_throttled.message().find("for user 'nobody'"), std::string_view::npos)
      << nobody_throttled;
  EXPECT_EQ(auth.TEST_password_verifications(), 7u);

  // The verified password still passes, from any address that is not throttled.
  EXPECT_TRUE(auth.Authenticate(alice).ok());
  PeerIdentity alice_elsewhere = alice;
  alice_elsewhere.address = "10.0.3.1";
  EXPECT_TRUE(auth.Authenticate(alice_elsewhere).ok());
  // A refusal for the user's limit counts against the address: the second one throttles it.
  EXPECT_FALSE(
      auth.Authenticate({.user = "alice", .password = "guess-again", .address = "10.0.2.1"}).ok());
  alice_elsewhere.address = "10.0.2.1";
  EXPECT_NE(
      auth.Authenticate(alice_elsewhere).status().message().find("from client address 10.0.2.1"),
      std::string_view::npos);

  // A new table empties the cache: the right password waits for the user's backoff.
  ASSERT_TRUE(auth.Install(
      std::make_shared<const UserTable>(auth.table()->Add({.name = "carol"}).value())));
  EXPECT_EQ(auth.Authenticate(alice).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.TEST_password_verifications(), 7u);
  now += kDefaultThrottleBackoff;
  EXPECT_TRUE(auth.Authenticate(alice).ok());
  EXPECT_EQ(auth.TEST_password_verifications(), 8u);
}

// Names no user can have (too long, say) are counted against the address only: the table of
// names holds short keys.
TEST(AuthenticatorTest, NamesNoUserCanHaveCountOnlyAgainstTheAddress) {
  Authenticator auth({.throttle = {.max_failures_per_address = 3, .max_failures_per_user = 1}});
  ASSERT_TRUE(auth.Install(Table()));
  const PeerIdentity peer{
      .user = std::string(4096, 'x'), .password = "guess-guess", .address = "10.0.0.1"};
  EXPECT_EQ(auth.Authenticate(peer).status().message(), "wrong user or password");
  EXPECT_EQ(auth.Authenticate(peer).status().message(), "wrong user or password");
  // The third failure from the address blocks it.
  EXPECT_EQ(auth.Authenticate(peer).status().message(), "wrong user or password");
  EXPECT_NE(auth.Authenticate(peer).status().message().find("from client address 10.0.0.1"),
            std::string_view::npos);
}

// A node that knows no users yet refuses every password: none of that counts as guessing.
TEST(AuthenticatorTest, NothingCountsBeforeTheFirstTable) {
  Authenticator auth({.throttle = {.max_failures_per_address = 1, .max_failures_per_user = 1}});
  const PeerIdentity alice{
      .user = "alice", .password = std::string(kAlicePassword), .address = "10.0.0.1"};
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(auth.Authenticate(alice).ok());
  ASSERT_TRUE(auth.Install(Table()));
  EXPECT_TRUE(auth.Authenticate(alice).ok());
}

TEST(AuthenticatorTest, AuthorizeNamesTheRoleNeeded) {
  const Principal reader{.name = "bob", .role = Role::kRead};
  EXPECT_TRUE(Authenticator::Authorize(reader, Role::kRead, "get").ok());
  const Status denied = Authenticator::Authorize(reader, Role::kWrite, "write");
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("needs the role write"), std::string_view::npos) << denied;
  EXPECT_NE(denied.message().find("bob"), std::string_view::npos);
}

}  // namespace
}  // namespace shoal::security
