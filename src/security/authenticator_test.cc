#include "src/security/authenticator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// A user added a moment ago, at a follower that has not learned it: the first refused call
// refreshes, and the calls refused while that refresh runs wait for it instead of being refused
// by the table they came too early for.
TEST(AuthenticatorTest, CallsRefusedDuringARefreshAreJudgedByItsTable) {
  Authenticator auth;
  ASSERT_TRUE(auth.Install(Table()));
  std::atomic<int> refreshes{0};
  auth.SetRefresher([&] {
    ++refreshes;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)auth.Install(std::make_shared<const UserTable>(
        auth.table()->Add({.name = "bob", .role = Role::kRead}).value()));
  });
  std::atomic<int> accepted{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      if (auth.Authenticate({.certificate_name = "bob"}).ok()) ++accepted;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(accepted.load(), 8);
  EXPECT_EQ(refreshes.load(), 1);
  // A peer the new table does not know either is refused, and refreshes at most once per
  // kMinRefreshInterval.
  EXPECT_EQ(auth.Authenticate({.certificate_name = "mallory"}).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate({.certificate_name = "mallory"}).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_LE(refreshes.load(), 2);
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
