#include "src/process/user_admin.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "proto/shoal.pb.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/security/authenticator.h"

namespace shoal::process {
namespace {

using security::Role;
using security::UserTable;

class UserAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shoal-user-admin-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(root_);
  }
  void Reopen() {
    store_.reset();
    metadata::EmbeddedMetadataOptions options;
    options.path = root_ + "/metadata";
    auto store = metadata::EmbeddedMetadataStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  wire::AdminResponse Answer(const wire::AdminRequest& request) {
    wire::AdminResponse out;
    AnswerUserAdmin(*store_, authenticator_, request, &out);
    return out;
  }

  std::string root_;
  std::unique_ptr<metadata::EmbeddedMetadataStore> store_;
  security::Authenticator authenticator_;
};

TEST_F(UserAdminTest, FirstTableHoldsTheCertificateAdmin) {
  auto read = ReadUserTable(*store_);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, nullptr);
  auto table = LoadUserTable(*store_);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ((*table)->DebugString(), "v1 [admin:admin(certificate)]");
  // Loaded again, not written again.
  auto again = LoadUserTable(*store_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->version(), 1u);
}

TEST_F(UserAdminTest, ChangesAreStoredAndSurviveAReopen) {
  wire::AdminRequest add;
  add.mutable_add_user()->set_name("alice");
  add.mutable_add_user()->set_role("write");
  add.mutable_add_user()->set_password("alice's password");
  wire::AdminResponse added = Answer(add);
  ASSERT_EQ(added.status().code(), 0) << added.status().message();
  EXPECT_EQ(added.users_version(), 2u);
  ASSERT_EQ(added.users_size(), 2);
  EXPECT_TRUE(added.users(1).has_password());
  EXPECT_EQ(added.user_table(), "");  // the hashes only for GetUserTable
  EXPECT_EQ(authenticator_.version(), 2u);

  wire::AdminRequest grant;
  grant.mutable_grant_role()->set_name("alice");
  grant.mutable_grant_role()->set_role("admin");
  ASSERT_EQ(Answer(grant).status().code(), 0);

  ASSERT_NO_FATAL_FAILURE(Reopen());  // as a coordinator that takes over would find it
  auto table = ReadUserTable(*store_);
  ASSERT_TRUE(table.ok() && *table != nullptr);
  EXPECT_EQ((*table)->version(), 3u);
  EXPECT_EQ((*table)->Find("alice")->role, Role::kAdmin);
  EXPECT_TRUE(authenticator_.Authenticate({.user = "alice", .password = "alice's password"}).ok());

  wire::AdminRequest get;
  get.mutable_get_user_table()->set_known_version(3);
  EXPECT_EQ(Answer(get).user_table(), "");
  get.mutable_get_user_table()->set_known_version(2);
  auto copied = UserTable::Decode(Answer(get).user_table());
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(*copied, **table);
}

TEST_F(UserAdminTest, RefusedChangesChangeNothing) {
  for (const char* role : {"root", ""}) {
    wire::AdminRequest add;
    add.mutable_add_user()->set_name("bob");
    add.mutable_add_user()->set_role(role);
    EXPECT_EQ(Answer(add).status().code(), static_cast<int>(StatusCode::kInvalidArgument));
  }
  wire::AdminRequest short_password;
  short_password.mutable_add_user()->set_name("bob");
  short_password.mutable_add_user()->set_role("read");
  short_password.mutable_add_user()->set_password("short");
  const wire::AdminResponse refused = Answer(short_password);
  EXPECT_EQ(refused.status().code(), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_EQ(refused.status().message().find("short"), std::string::npos);
  wire::AdminRequest remove;
  remove.mutable_remove_user()->set_name("nobody");
  EXPECT_EQ(Answer(remove).status().code(), static_cast<int>(StatusCode::kNotFound));
  auto table = LoadUserTable(*store_);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)->version(), 1u);
}

// The user limit holds at the coordinator, for every client of the admin request: an add to a
// full table is RESOURCE_EXHAUSTED naming the limit, and the stored table stays as it was.
TEST_F(UserAdminTest, AddPastTheUserLimitChangesNothing) {
  auto first = LoadUserTable(*store_);
  ASSERT_TRUE(first.ok());
  UserTable full = **first;
  for (size_t i = full.users().size(); i < security::kMaxUsers; ++i) {
    full = full.Add({.name = "user-" + std::to_string(i), .role = Role::kRead}).value();
  }
  ASSERT_TRUE(store_->Put(kUsersKey, full.Encode(), metadata::kAnyVersion).ok());

  wire::AdminRequest add;
  add.mutable_add_user()->set_name("one-too-many");
  add.mutable_add_user()->set_role("read");
  const wire::AdminResponse refused = Answer(add);
  EXPECT_EQ(refused.status().code(), static_cast<int>(StatusCode::kResourceExhausted));
  EXPECT_NE(refused.status().message().find("the limit is 1000"), std::string::npos)
      << refused.status().message();
  auto stored = ReadUserTable(*store_);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(**stored, full);

  wire::AdminRequest remove;
  remove.mutable_remove_user()->set_name("user-1");
  ASSERT_EQ(Answer(remove).status().code(), 0);
  EXPECT_EQ(Answer(add).status().code(), 0);
}

// A node whose user-table source hangs (the coordinator unreachable or slow): a call the
// current table refuses asks the follower for a refresh and returns; while that fetch is blocked
// in the source, calls complete (the known user passes, the unknown one is told to retry); once
// the source answers, the new user passes.
TEST(UserTableFollowerTest, ABlockedSourceDelaysNoCall) {
  security::Authenticator authenticator;
  const UserTable first = UserTable().Add({.name = "admin", .role = Role::kAdmin}).value();
  const UserTable second = first.Add({.name = "bob", .role = Role::kRead}).value();
  ASSERT_TRUE(authenticator.Install(std::make_shared<const UserTable>(first)));
  absl::Mutex mu;
  int polls = 0;
  bool hold = false;
  absl::Notification entered;
  absl::Notification release;
  UserTableFollower follower(
      authenticator,
      [&](const wire::AdminRequest& request, transport::Micros) -> StatusOr<wire::AdminResponse> {
        bool held = false;
        {
          absl::MutexLock lock(&mu);
          ++polls;
          held = hold;
        }
        wire::AdminResponse response;
        if (held) {
          if (!entered.HasBeenNotified()) entered.Notify();
          release.WaitForNotification();
          if (request.get_user_table().known_version() < second.version()) {
            response.set_user_table(second.Encode());
          }
        }
        return response;
      });
  follower.Start();
  {
    // The first poll is over (it found nothing newer); from now on the source hangs.
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n > 0; }, &polls));
    hold = true;
  }
  const Status refused = authenticator.Authenticate({.certificate_name = "bob"}).status();
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused;
  entered.WaitForNotification();
  EXPECT_TRUE(authenticator.Authenticate({.certificate_name = "admin"}).ok());
  EXPECT_EQ(authenticator.Authenticate({.certificate_name = "bob"}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(authenticator.version(), first.version());

  release.Notify();
  while (authenticator.version() < second.version()) std::this_thread::yield();
  EXPECT_TRUE(authenticator.Authenticate({.certificate_name = "bob"}).ok());
  follower.Stop();
}

TEST_F(UserAdminTest, AConcurrentWriterIsNotOverwritten) {
  ASSERT_TRUE(LoadUserTable(*store_).ok());
  bool interfered = false;
  auto table = UpdateUserTable(*store_, [&](const UserTable& current) -> StatusOr<UserTable> {
    if (!interfered) {
      // Another coordinator writes between this read and this write.
      interfered = true;
      UserTable other = current.Add({.name = "other", .role = Role::kRead}).value();
      EXPECT_TRUE(store_->Put(kUsersKey, other.Encode(), metadata::kAnyVersion).ok());
    }
    return current.Add({.name = "mine", .role = Role::kRead});
  });
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_NE((*table)->Find("other"), nullptr);
  EXPECT_NE((*table)->Find("mine"), nullptr);
  EXPECT_EQ((*table)->version(), 3u);
}

}  // namespace
}  // namespace shoal::process
